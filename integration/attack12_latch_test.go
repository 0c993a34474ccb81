package integration

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attack12PublishRelay forwards 127.0.0.1 connections to target, holding
// each chunk a client sends that names match (a publish of a latch's
// channel; a SUBSCRIBE is let through) for what hold holds at the time,
// and every later chunk of that connection behind it. The other
// connections are not held: the master answers them at once.
func attack12PublishRelay(t *testing.T, target string, match []byte, hold *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	pipe := func(dst, src net.Conn, held bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				lower := bytes.ToLower(buf[:n])
				if held && bytes.Contains(buf[:n], match) && !bytes.Contains(lower, []byte("subscribe")) {
					time.Sleep(time.Duration(hold.Load()))
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
	}
	go func() {
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
			t.Cleanup(func() { c.Close(); s.Close() })
			go pipe(s, c, true)
			go pipe(c, s, false)
		}
	}()
	return ln.Addr().String()
}

// attack12 P1 (the zero message at most once; "never sends its zero
// message before n countDowns since its trySetCount(n)"): the proxy's
// pub/sub hub counts the copies of one publish for a while (collapse.go's
// window, 5s then, 20s now); a copy that arrives later is delivered
// again. The latch's zero message is published on every master, so a
// master that runs the PUBLISH late (a slow link, a frozen master thawed:
// a minority fault; 22s here, past any window) made the waiter subscribed
// through the proxy get "0" a second time for one latch(1), and here after a new trySetCount(2) of the same
// name with no countDown of it: a zero message of a latch whose count is
// 2. One Redis: "1", "0", then "1" for the new latch, and no second "0".
// Each copy now carries the last moment its master may send it (quorum's
// publishWithin): C drops its copy.
//
// 3 masters; the proxy reaches master C through a relay that holds a
// chunk naming the latch's channel (the engine's publish, not the hub's
// SUBSCRIBE) 22s; A and B answer at once, so every call is served.
func TestAttack12LatchLatePublishCopyIsASecondZeroMessage(t *testing.T) {
	c := startNodes(t, 3)
	const name = "latch:attack12:p1"
	channel := "redisson_countdownlatch__channel__{" + name + "}"
	var hold atomic.Int64
	rC := attack12PublishRelay(t, c.addrs[2], []byte(channel), &hold)
	p := attack11StartMonitored(t, latchConfig(), engineConfig(), c.addrs[0], c.addrs[1], rC) // probed: each copy gets its limit
	l := newLatchClient(p.Client, name)
	sub := l.subscribe(t) // Redisson's await(): SUBSCRIBE through the proxy

	var mu sync.Mutex
	var got []string
	var zeroAt []time.Time
	go func() {
		for m := range sub.Channel() {
			mu.Lock()
			got = append(got, m.Payload)
			if m.Payload == "0" {
				zeroAt = append(zeroAt, time.Now())
			}
			mu.Unlock()
		}
	}()

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	time.Sleep(300 * time.Millisecond)
	hold.Store(int64(22 * time.Second))
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after the countDown = %d, %v; want 0", v, err)
	}
	time.Sleep(500 * time.Millisecond)
	hold.Store(0)
	set := time.Now()
	if v, err := l.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("the new latch's trySetCount(2) = %d, %v", v, err)
	}
	time.Sleep(time.Until(set.Add(23 * time.Second)))
	if v, err := l.getCount(t); v != 2 || err != nil {
		t.Fatalf("the new latch's getCount = %d, %v; want 2 (no countDown of it)", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("messages through the proxy: %q", got)
	late := 0
	for _, z := range zeroAt {
		if z.After(set) {
			late++
		}
	}
	if len(zeroAt) != 1 || late != 0 {
		t.Errorf("%d zero messages for one latch(1), %d of them after the new latch's trySetCount(2) with no countDown of it (one Redis: 1, none after)", len(zeroAt), late)
	}
}
