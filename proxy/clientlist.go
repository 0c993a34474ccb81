package proxy

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/acl"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// listing is what CLIENT LIST shows of one connection. Its connection's
// goroutine writes it and CLIENT LIST on another reads it, hence mu.
type listing struct {
	id          int64
	addr, laddr string
	since       time.Time

	mu         sync.Mutex
	name, user string // user is "" until the connection authenticates
	cmd        string // the last command's name; "NULL" before one ran, as Redis shows it
	last       time.Time
}

// saw records a command the connection is about to run.
func (l *listing) saw(cmd string, c *client) {
	user := ""
	if c.user != nil {
		user = c.user.Name()
	}
	l.mu.Lock()
	l.cmd, l.last, l.name, l.user = cmd, time.Now(), c.name, user
	l.mu.Unlock()
}

// line is the connection's CLIENT LIST line, in Redis's format with the
// fields the proxy knows. It shows the user's name, never a password.
func (l *listing) line(now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	user := l.user
	if user == "" {
		user = acl.DefaultUser // as Redis shows a connection that has not logged in
	}
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s age=%d idle=%d db=0 user=%s cmd=%s\n",
		l.id, l.addr, l.laddr, l.name, int64(now.Sub(l.since).Seconds()), int64(now.Sub(l.last).Seconds()), user, l.cmd)
}

// clientList is CLIENT LIST [TYPE normal] [ID id ...], for admin users.
func (s *Server) clientList(r *request) resp.Reply {
	if !r.c.user.Can(acl.Admin) {
		return noPermission("client|list").Reply()
	}
	var ids map[int64]bool
	for i := 2; i < len(r.args); i++ {
		switch opt := strings.ToLower(string(r.args[i])); {
		case opt == "type" && i+1 < len(r.args):
			if t := strings.ToLower(string(r.args[i+1])); t != "normal" {
				return resp.Error(fmt.Sprintf("ERR Unknown client type '%.64s'", r.args[i+1]))
			}
			i++
		case opt == "id" && i+1 < len(r.args):
			ids = map[int64]bool{}
			for i++; i < len(r.args); i++ {
				id, err := strconv.ParseInt(string(r.args[i]), 10, 64)
				if err != nil || id <= 0 {
					return resp.Error("ERR Invalid client ID")
				}
				ids[id] = true
			}
		default:
			return resp.Error("ERR syntax error")
		}
	}
	var ls []*listing
	s.listings.Range(func(_, v any) bool {
		if l := v.(*listing); ids == nil || ids[l.id] {
			ls = append(ls, l)
		}
		return true
	})
	slices.SortFunc(ls, func(a, b *listing) int { return cmp.Compare(a.id, b.id) })
	var b strings.Builder
	now := time.Now()
	for _, l := range ls {
		b.WriteString(l.line(now))
	}
	return resp.Verbatim(b.String())
}
