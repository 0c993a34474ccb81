package proxy

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// listing is what CLIENT LIST shows of one connection. Its connection's
// goroutine writes it and CLIENT LIST on another reads it, hence mu.
type listing struct {
	id          int64
	addr, laddr string
	since       time.Time
	nc          net.Conn // closed by CLIENT KILL; the connection's goroutine then ends it

	mu         sync.Mutex
	name, user string // user is "" until the connection authenticates
	cmd        string // the last command's name; "NULL" before one ran, as Redis shows it
	last       time.Time
	// killed: CLIENT KILL closed it; it is gone from the list at once,
	// as in Redis, before its goroutine ends and removes it.
	killed bool
	// pubsub: it holds a topic, so it is of Redis's type pubsub, not
	// normal (in either protocol).
	pubsub bool
}

// subscribed records whether the connection holds a topic after a
// command.
func (l *listing) subscribed(holds bool) {
	l.mu.Lock()
	l.pubsub = holds
	l.mu.Unlock()
}

// typeLocked is the connection's client type, as Redis names it.
func (l *listing) typeLocked() string {
	if l.pubsub {
		return "pubsub"
	}
	return "normal"
}

// clientType returns the client type name means, as Redis reads it in
// CLIENT LIST and CLIENT KILL: replica, slave and master name types no
// proxy client has.
func clientType(name []byte) (string, error) {
	switch t := ascii.Lower(name); t {
	case "normal", "pubsub", "master":
		return t, nil
	case "replica", "slave":
		return "replica", nil
	}
	return "", withArgs(errClientType, name)
}

// saw records a command the connection is about to run.
func (l *listing) saw(cmd string, c *client, now time.Time) {
	user := ""
	if c.user != nil {
		user = c.user.Name()
	}
	l.mu.Lock()
	l.cmd, l.last, l.name, l.user = cmd, now, c.name, user
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

// clientList is CLIENT LIST [TYPE type | ID id ...], for admin users.
func (s *Server) clientList(r *request) (resp.Reply, error) {
	if !r.c.user.Can(acl.Admin) {
		return resp.Reply{}, noPermission("client|list")
	}
	// As Redis 7.0 parses it: TYPE only as the one option, ID with any
	// integers (none matches 0 or a negative), nothing else.
	var ids map[int64]bool
	typ := ""
	opt := ""
	if len(r.args) > 2 {
		opt = ascii.Lower(r.args[2])
	}
	switch {
	case len(r.args) == 2:
	case len(r.args) == 4 && opt == "type":
		t, err := clientType(r.args[3])
		if err != nil {
			return resp.Reply{}, err
		}
		typ = t
	case len(r.args) > 3 && opt == "id":
		ids = map[int64]bool{}
		for _, a := range r.args[3:] {
			id, ok := resp.ParseInt(a)
			if !ok {
				return resp.Reply{}, errClientID
			}
			ids[id] = true
		}
	default:
		return resp.Reply{}, resp.ErrSyntax
	}
	var ls []*listing
	s.listings.Range(func(_, v any) bool {
		l := v.(*listing)
		l.mu.Lock()
		killed, lt := l.killed, l.typeLocked()
		l.mu.Unlock()
		if !killed && (ids == nil || ids[l.id]) && (typ == "" || typ == lt) {
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
	return resp.Verbatim(b.String()), nil
}

// CLIENT KILL ip:port | CLIENT KILL [ID id] [ADDR ip:port] [LADDR ip:port] [USER name] [TYPE type] [SKIPME yes|no]
//
// For admin users. The old form replies OK or an error, the new one the
// number of connections closed.
func (s *Server) clientKill(r *request) (resp.Reply, error) {
	if !r.c.user.Can(acl.Admin) {
		return resp.Reply{}, noPermission("client|kill")
	}
	var id int64
	var addr, laddr, user, typ string
	skipMe, old := true, len(r.args) == 3
	if old {
		addr, skipMe = string(r.args[2]), false
	} else {
		if len(r.args)%2 != 0 {
			return resp.Reply{}, resp.ErrSyntax
		}
		for i := 2; i < len(r.args); i += 2 {
			v := string(r.args[i+1])
			switch ascii.Lower(r.args[i]) {
			case "id":
				n, ok := resp.ParseInt(r.args[i+1])
				if !ok || n <= 0 {
					return resp.Reply{}, errClientIDZero
				}
				id = n
			case "addr":
				addr = v
			case "laddr":
				laddr = v
			case "user":
				if v != acl.DefaultUser && s.users.Load().Lookup(v) == nil {
					return resp.Reply{}, withArgs(errNoSuchUser, v)
				}
				user = v
			case "type":
				t, err := clientType(r.args[i+1])
				if err != nil {
					return resp.Reply{}, err
				}
				typ = t
			case "skipme":
				switch ascii.Lower(v) {
				case "yes":
					skipMe = true
				case "no":
					skipMe = false
				default:
					return resp.Reply{}, resp.ErrSyntax
				}
			default:
				return resp.Reply{}, resp.ErrSyntax
			}
		}
	}
	killed := int64(0)
	s.listings.Range(func(_, v any) bool {
		l := v.(*listing)
		l.mu.Lock()
		defer l.mu.Unlock() // one killer at a time: each client is killed once
		lu := l.user
		if lu == "" {
			lu = acl.DefaultUser
		}
		switch {
		case l.killed:
			return true // killed already: no longer a client
		case id != 0 && l.id != id, addr != "" && l.addr != addr, laddr != "" && l.laddr != laddr, user != "" && lu != user,
			typ != "" && l.typeLocked() != typ:
			return true
		case l.id == r.c.id:
			if skipMe {
				return true
			}
			r.closeAfter = true // after the reply, as Redis does
		case l.nc != nil:
			l.nc.Close()
		}
		l.killed = true
		killed++
		return true
	})
	if old {
		if killed == 0 {
			return resp.Reply{}, errNoSuchClient
		}
		return resp.OK(), nil
	}
	return resp.Int(killed), nil
}
