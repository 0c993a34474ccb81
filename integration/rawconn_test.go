package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// rawConn is a bare TCP connection for sending exact bytes and reading
// exact replies.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

// dialRaw connects to addr; the connection is closed when the test ends.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReader(c)}
}

// send writes s as it is.
func (c *rawConn) send(s string) {
	c.t.Helper()
	c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write([]byte(s)); err != nil {
		c.t.Fatalf("write %.40q: %v", s, err)
	}
}

// do sends args as one RESP array and returns the reply, rendered by
// readReply.
func (c *rawConn) do(args ...string) string {
	c.t.Helper()
	c.send(encodeCommand(args...))
	return c.reply()
}

// reply reads one whole reply, failing the test if none comes within 5s.
func (c *rawConn) reply() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := readReply(c.r)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	return s
}

// wantClosed reads until the server closes the connection, failing if it
// sends more bytes or is still open after within.
func (c *rawConn) wantClosed(within time.Duration) {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(within))
	b, err := c.r.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		rest, _ := c.r.Peek(c.r.Buffered())
		c.t.Fatalf("got %q after the reply; want the connection closed", append([]byte{b}, rest...))
	case errors.As(err, &ne) && ne.Timeout():
		c.t.Fatalf("connection still open %v later; want it closed", within)
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
	default:
		c.t.Fatalf("read after the reply: %v; want EOF", err)
	}
}

// encodeCommand encodes args as a RESP array of bulk strings.
func encodeCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// readReply reads one RESP2 reply and renders it: "+OK", "-ERR …",
// ":12", a bulk string as its Go-quoted text, "(nil)", and an array as
// "[a, b]".
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("empty reply line")
	}
	switch line[0] {
	case '+', '-', ':':
		return line, nil
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk header %q", line)
		}
		if n < 0 {
			return "(nil)", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return strconv.Quote(string(buf[:n])), nil
	case '*':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n > 1000 {
			return "", fmt.Errorf("bad array header %q", line)
		}
		if n < 0 {
			return "(nil)", nil
		}
		items := make([]string, n)
		for i := range items {
			if items[i], err = readReply(r); err != nil {
				return "", err
			}
		}
		return "[" + strings.Join(items, ", ") + "]", nil
	}
	return "", fmt.Errorf("unknown reply type %q", line)
}

// monitor is a MONITOR stream from one node, and a second bare
// connection that sends the markers (a go-redis client may send HELLO on
// a new connection, which would show up in the stream).
type monitor struct {
	raw, marker *rawConn
}

// startMonitor runs MONITOR on node i.
func (c *cluster) startMonitor(t testing.TB, i int) *monitor {
	t.Helper()
	raw := dialRaw(t, c.addrs[i])
	if got := raw.do("MONITOR"); got != "+OK" {
		t.Fatalf("node %d MONITOR = %s; want +OK", i, got)
	}
	return &monitor{raw: raw, marker: dialRaw(t, c.addrs[i])}
}

// commands returns every command the node ran since MONITOR started, or
// since the last call. It sends a marker ECHO straight to the node and
// reads up to it: the node runs commands in order, so anything the proxy
// sent before its reply shows up first.
func (m *monitor) commands(t testing.TB) []string {
	t.Helper()
	marker := fmt.Sprintf("monitor-marker-%d", time.Now().UnixNano())
	if got := m.marker.do("ECHO", marker); got != strconv.Quote(marker) {
		t.Fatalf("ECHO marker = %s", got)
	}
	var seen []string
	m.raw.c.SetReadDeadline(time.Now().Add(5 * time.Second)) // for the whole loop
	for range 10000 {
		line, err := readReply(m.raw.r)
		if err != nil {
			t.Fatalf("read MONITOR after %d lines: %v", len(seen), err)
		}
		if strings.Contains(line, marker) {
			return seen
		}
		seen = append(seen, line)
	}
	t.Fatalf("no marker in 10000 MONITOR lines")
	return nil
}

// wantNoCommands checks that no node ran any command since the monitors
// started, other than the markers and the pub/sub hub's keepalive PINGs,
// which run on their own schedule and touch no key.
func wantNoCommands(t testing.TB, mons []*monitor, what string) {
	t.Helper()
	for i, m := range mons {
		var cmds []string
		for _, c := range m.commands(t) {
			if !strings.HasSuffix(c, `] "PING"`) {
				cmds = append(cmds, c)
			}
		}
		if len(cmds) > 0 {
			t.Errorf("after %s, node %d ran %d commands; want none: %q", what, i, len(cmds), cmds)
		}
	}
}

// wantSameSteps fails t for each step of a session through the proxy
// (got) that differs from the same step against one redis-server (want);
// what names the run.
func wantSameSteps(t testing.TB, what string, got, want []string) {
	t.Helper()
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("%sstep %d through the proxy: %s\n            one redis-server: %s", what, i, g, w)
		}
	}
}
