package pubsub

import (
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHubDropsALaggingNode: a link that holds each chunk from the node a
// little longer than the hub pings is never silent for three intervals,
// yet lags more with every ping; the copies of a publish it carries would
// reach the hub after its count of them is forgotten. The hub drops the
// connection once a PING is answered later than three intervals.
func TestHubDropsALaggingNode(t *testing.T) {
	addr := startNodes(t, 1)[0]
	const ping = 50 * time.Millisecond
	relay := lagRelay(t, addr, ping+ping*4/5) // gaps under the 3-interval read deadline
	var logs syncBuffer
	h := New(Config{Nodes: []string{relay}, pingInterval: ping, RetryInterval: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { h.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "a PING answered after") {
		if time.Now().After(deadline) {
			t.Fatalf("a lagging node was not dropped for its late PONGs within 10s; logs: %q", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lagRelay forwards connections to target, sending on what the node
// writes one chunk at a time, each delay after the one before, so that a
// node answering faster than that falls further behind with each chunk.
func lagRelay(t *testing.T, target string, delay time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
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
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Go(func() { io.Copy(s, c); s.Close() })
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 16)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						time.Sleep(delay)
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	return ln.Addr().String()
}
