package proxy

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

const (
	// maxSlowlogLen bounds slowlog_max_len.
	maxSlowlogLen = 10000
	// As Redis's slow log: at most this many arguments, each cut to this
	// many bytes.
	slowlogMaxArgs   = 32
	slowlogMaxArgLen = 128
)

var slowlogSubs = map[string]int{"get": -2, "len": 2, "reset": 2, "help": 2}

// slowEntry is one command of the slow log.
type slowEntry struct {
	id         int64
	at         time.Time
	took       time.Duration
	args       []string // redacted and cut
	argc       int
	addr, name string
	nodes      []quorum.NodeReport
}

// slowlog is the newest entries, up to slowlog_max_len, newest last.
type slowlog struct {
	mu      sync.Mutex
	entries []slowEntry
	nextID  int64
}

// add records e, dropping the oldest entries past max. They are cut off
// the front, and append copies the kept ones to a new array only once
// the old one is full (a copy of max entries per add cost a loaded
// proxy, where most commands are slow, more than the command). Neither
// writes where a reader's snapshot (SLOWLOG GET) can see; a dropped
// entry is freed with its array.
func (l *slowlog) add(e slowEntry, max int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.id = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	if n := len(l.entries) - max; n > 0 {
		l.entries = l.entries[n:]
	}
}

// slowLen is how many entries the slow log holds.
func (s *Server) slowLen() int {
	s.slow.mu.Lock()
	defer s.slow.mu.Unlock()
	return len(s.slow.entries)
}

// slowArgs cuts redacted arguments as Redis's slow log does.
func slowArgs(args []string) []string {
	n := min(len(args), slowlogMaxArgs)
	out := make([]string, 0, n)
	for i, a := range args[:n] {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			out = append(out, fmt.Sprintf("... (%d more arguments)", len(args)-slowlogMaxArgs+1))
			break
		}
		if len(a) > slowlogMaxArgLen {
			a = fmt.Sprintf("%s... (%d more bytes)", a[:slowlogMaxArgLen], len(a)-slowlogMaxArgLen)
		}
		out = append(out, a)
	}
	return out
}

// SLOWLOG GET [count] | LEN | RESET | HELP
//
// Each entry has Redis's six fields and the total argument count (as
// Redis 8.10's seventh), then the proxy's own: each node's part, as
// "nodeN=addr,usec=…,calls=…,answer=granted|denied|answered|failed|down".
func (s *Server) slowlogCmd(r *request) (resp.Reply, error) {
	l := &s.slow
	switch ascii.Lower(r.args[1]) {
	case "len":
		return resp.Int(int64(s.slowLen())), nil
	case "reset":
		l.mu.Lock()
		l.entries = nil
		l.mu.Unlock()
		return resp.OK(), nil
	case "get":
		count := int64(10)
		if len(r.args) > 3 {
			return resp.Reply{}, withArgs(errArity, "slowlog|get")
		}
		if len(r.args) == 3 {
			n, ok := resp.ParseInt(r.args[2])
			if !ok || n < -1 {
				return resp.Reply{}, errSlowlogCount
			}
			count = n
		}
		l.mu.Lock()
		entries := l.entries
		l.mu.Unlock()
		if count == -1 || count > int64(len(entries)) {
			count = int64(len(entries))
		}
		addrs := s.e.Addrs()
		items := make([]resp.Reply, 0, count)
		for i := len(entries) - 1; i >= len(entries)-int(count); i-- {
			items = append(items, entries[i].reply(addrs))
		}
		return resp.Array(items...), nil
	}
	return resp.Array(resp.Status("SLOWLOG GET [<count>]: the newest entries, each node's time last."),
		resp.Status("SLOWLOG LEN, SLOWLOG RESET.")), nil
}

func (e slowEntry) reply(addrs []string) resp.Reply {
	args := make([]resp.Reply, len(e.args))
	for i, a := range e.args {
		args[i] = resp.Bulk(a)
	}
	nodes := make([]resp.Reply, len(e.nodes))
	for i, n := range e.nodes {
		nodes[i] = resp.Bulk(fmt.Sprintf("node%d=%s,usec=%d,calls=%d,answer=%s", n.Node, addrs[n.Node], n.Took.Microseconds(), n.Calls, n.Answer))
	}
	return resp.Array(resp.Int(e.id), resp.Int(e.at.Unix()), resp.Int(e.took.Microseconds()),
		resp.Array(args...), resp.Bulk(e.addr), resp.Bulk(e.name), resp.Int(int64(e.argc)), resp.Array(nodes...))
}

// nodeTimes is a traced command's nodes, as MONITOR's outcome line shows
// them.
func nodeTimes(nodes []quorum.NodeReport) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = "node" + strconv.Itoa(n.Node) + "=" + n.Answer.String() + "," + strconv.FormatFloat(float64(n.Took.Microseconds())/1000, 'f', 3, 64) + "ms"
	}
	return out
}
