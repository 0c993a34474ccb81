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
		for {
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
			wg.Go(func() { relayPipe(s, c, o.sendDelay, o.drop) })
			wg.Go(func() { relayPipe(c, s, o.replyDelay, nil) })
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
