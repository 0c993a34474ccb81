package proxy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// maxMonitorQueue bounds, in bytes, the lines a MONITOR client may leave
// unread; past it new lines are dropped and counted
// (monitor_lines_dropped in INFO), so a slow reader never slows a command.
const maxMonitorQueue = 1 << 20

// monitor is one MONITOR client.
type monitor struct {
	ob    *outbox
	proto resp.Proto
}

// MONITOR
//
// For admin users: every command the proxy serves from now on, one line
// each as Redis prints it, tokens and passwords redacted; after a command
// that reached the nodes, a line of its outcome.
func (s *Server) monitorCmd(r *request) (resp.Reply, error) {
	c := r.c
	if c.ob == nil {
		c.ob = newOutbox(r.conn.NetConn(), &s.running)
	}
	if !c.monitoring {
		c.monitoring = true
		s.monitors.Store(c.id, &monitor{ob: c.ob, proto: c.proto})
		s.nMonitors.Add(1)
	}
	return resp.OK(), nil
}

// stopMonitor ends c's MONITOR, if it runs one.
func (s *Server) stopMonitor(c *client) {
	if c.monitoring {
		c.monitoring = false
		s.monitors.Delete(c.id)
		s.nMonitors.Add(-1)
	}
}

// done is what serveRESP knows of a command once it ran: for the slow log
// and MONITOR.
type done struct {
	name  string
	args  [][]byte
	start time.Time
	took  time.Duration
	rep   resp.Reply
	tr    *quorum.Trace // nil if not traced
	// validity is an acquire's, as granted; zero if none.
	validity time.Duration
}

// record puts a command that ran into the slow log and before the
// monitors.
func (s *Server) record(r *request, d done) {
	cfg := s.conf()
	slow := cfg.SlowlogSlowerThan >= 0 && d.took >= cfg.SlowlogSlowerThan
	watched := s.nMonitors.Load() > 0 && d.name != "monitor"
	if !slow && !watched {
		return
	}
	args := redactArgs(d.name, d.args)
	var nodes []quorum.NodeReport
	if d.tr != nil {
		nodes = d.tr.Nodes()
	}
	if slow {
		s.slow.add(slowEntry{at: d.start, took: d.took, args: slowArgs(args), argc: len(args),
			addr: r.conn.RemoteAddr(), name: r.c.name, nodes: nodes}, cfg.SlowlogMaxLen)
	}
	if !watched {
		return
	}
	head := fmt.Sprintf("%d.%06d [0 %s]", d.start.Unix(), d.start.Nanosecond()/1000, r.conn.RemoteAddr())
	s.publish(monitorLine(head, args))
	if len(nodes) > 0 {
		out := []string{"redlock-proxy:outcome", d.name, outcomeWord(d.rep)}
		if d.validity > 0 {
			out = append(out, "validity_ms="+strconv.FormatInt(d.validity.Milliseconds(), 10))
		}
		s.publish(monitorLine(head, append(out, nodeTimes(nodes)...)))
	}
}

// outcomeWord sums up a reply for MONITOR's outcome line.
func outcomeWord(rep resp.Reply) string {
	switch {
	case rep.IsError():
		code, _, _ := strings.Cut(rep.Text(), " ")
		return code
	case rep.IsNull():
		return "nil"
	}
	return "ok"
}

// publish offers a line to every monitor, dropping it for those that
// left too much unread.
func (s *Server) publish(line string) {
	rep := resp.Status(line)
	s.monitors.Range(func(_, v any) bool {
		m := v.(*monitor)
		if !m.ob.offer(rep, m.proto, len(line)+3, maxMonitorQueue) {
			s.stats.monitorDropped.Add(1)
		}
		return true
	})
}

// monitorLine is head and args as Redis's MONITOR prints a command: each
// argument quoted and escaped as sdscatrepr does.
func monitorLine(head string, args []string) string {
	var b strings.Builder
	b.WriteString(head)
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(reprArg(a))
	}
	return b.String()
}

// reprArg quotes s as Redis's sdscatrepr.
func reprArg(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		default:
			if c >= 0x20 && c < 0x7f {
				b.WriteByte(c)
			} else {
				fmt.Fprintf(&b, `\x%02x`, c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
