package integration

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// relayOpts says what a test relay does to the bytes it forwards. The
// zero value forwards everything as it comes.
type relayOpts struct {
	// sendDelay holds each chunk a client sends for what it holds at
	// the time (nil: no hold).
	sendDelay *atomic.Int64
	// replyDelay holds each chunk of the target's replies likewise.
	replyDelay *atomic.Int64
	// drop throws away what clients send while it is set (a cut link:
	// the target stays up and never gets it).
	drop *atomic.Bool
}

// fixedDelay is a delay for relayOpts that never changes.
func fixedDelay(d time.Duration) *atomic.Int64 {
	var a atomic.Int64
	a.Store(int64(d))
	return &a
}

// startRelay serves a TCP relay on 127.0.0.1 to target: every connection
// gets one of its own to target, and bytes are copied both ways as o
// says. The relay and its connections are closed at the test's end. It
// returns the relay's address.
func startRelay(tb testing.TB, target string, o relayOpts) string {
	tb.Helper()
	return serveRelay(tb, target, func(wg *sync.WaitGroup, _ int, c, s net.Conn) {
		wg.Go(func() { relayPipe(s, c, o.sendDelay, o.drop) })
		wg.Go(func() { relayPipe(c, s, o.replyDelay, nil) })
	})
}

// serveRelay listens on 127.0.0.1 and, for the conn-th connection c it
// accepts, dials target as s and has pipe start, on wg, what copies
// between them. The listener and every connection are closed at the
// test's end, once what pipe started has returned. It returns the
// relay's address.
func serveRelay(tb testing.TB, target string, pipe func(wg *sync.WaitGroup, conn int, c, s net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("relay: listen: %v", err)
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		conns  []net.Conn
		closed bool
	)
	track := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return false
		}
		conns = append(conns, cs...)
		return true
	}
	wg.Go(func() {
		for conn := 0; ; conn++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			if !track(c, s) {
				c.Close()
				s.Close()
				return
			}
			pipe(&wg, conn, c, s)
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		closed = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// relayPipe copies src to dst, each chunk held for what delay holds and
// thrown away while drop is set, then closes dst.
func relayPipe(dst, src net.Conn, delay *atomic.Int64, drop *atomic.Bool) {
	defer dst.Close()
	if delay == nil && drop == nil {
		io.Copy(dst, src)
		return
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if delay != nil {
				time.Sleep(time.Duration(delay.Load()))
			}
			if drop == nil || !drop.Load() {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// The relay holds what it is told to hold, in the direction it is told,
// and throws away what a client sends while drop is set.
func TestRelayHoldsEachDirectionAndDrops(t *testing.T) {
	c := startNodes(t, 1)
	const hold = 300 * time.Millisecond
	// send sends an inline command through relay at addr and returns how
	// long the reply took, and what key k read directly at once.
	send := func(addr, cmd, want string) (time.Duration, string) {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := conn.Write([]byte(cmd + "\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(hold / 3)
		seen := c.direct[0].Get(t.Context(), "k").Val()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 64)
		n, err := conn.Read(buf)
		if err != nil || string(buf[:n]) != want+"\r\n" {
			t.Fatalf("%s through the relay = %q, %v; want %s", cmd, buf[:n], err, want)
		}
		return time.Since(start), seen
	}

	up := startRelay(t, c.addrs[0], relayOpts{sendDelay: fixedDelay(hold)})
	if took, seen := send(up, "SET k up", "+OK"); took < hold || seen != "" {
		t.Errorf("sendDelay: SET answered after %v, k read %q before the hold ended; want >= %v and not yet set", took, seen, hold)
	}
	down := startRelay(t, c.addrs[0], relayOpts{replyDelay: fixedDelay(hold)})
	if took, seen := send(down, "SET k down", "+OK"); took < hold || seen != "down" {
		t.Errorf("replyDelay: SET answered after %v, k read %q before the hold ended; want >= %v and already set", took, seen, hold)
	}

	var drop atomic.Bool
	cut := startRelay(t, c.addrs[0], relayOpts{drop: &drop})
	conn, err := net.Dial("tcp", cut)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	drop.Store(true)
	conn.Write([]byte("SET k cut\r\n"))
	conn.SetReadDeadline(time.Now().Add(hold))
	if n, err := conn.Read(make([]byte, 64)); n > 0 || err == nil {
		t.Fatalf("a SET sent while drop is set was answered (%d bytes, %v)", n, err)
	}
	if v := c.direct[0].Get(t.Context(), "k").Val(); v != "down" {
		t.Errorf("k = %q after a SET sent while drop is set; want down (never delivered)", v)
	}
	drop.Store(false)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	conn.Write([]byte("GET k\r\n"))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); err != nil || string(buf[:n]) != "$4\r\ndown\r\n" {
		t.Errorf("GET k after drop is cleared = %q, %v; want the one reply $4 down", buf[:n], err)
	}
}
