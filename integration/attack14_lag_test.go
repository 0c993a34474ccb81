package integration

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// attack14LagRelay forwards 127.0.0.1 connections to one master. On the
// hub's subscriber connection (the first that sends SUBSCRIBE), once ramp
// starts, each chunk the master sends is handed on later, by a lag that
// grows to 2.8s (a PONG answered 2.8s late: under the hub's 3s), except the first
// published message of channel, handed on 2.8s after the chunk before it
// (silence under the hub's 3s read deadline); order is kept. On the other
// connections a chunk the proxy sends that names channel (the engine's
// publish EVAL) is held, once, until release returns. pong is when the
// master last sent a PONG on the hub's connection.
type attack14LagRelay struct {
	addr    string
	channel []byte
	ramp    atomic.Int64 // UnixNano when the lag started growing; 0: none
	hubSeen atomic.Bool
	pong    atomic.Int64 // UnixNano
	release atomic.Pointer[func() bool]
}

func startAttack14LagRelay(t *testing.T, target, channel string) *attack14LagRelay {
	t.Helper()
	r := &attack14LagRelay{channel: []byte(channel)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		close(done)
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
			var hub atomic.Bool
			wg.Go(func() { r.toMaster(s, c, &hub, done) })
			wg.Go(func() { r.toProxy(c, s, &hub, done) })
		}
	})
	return r
}

func (r *attack14LagRelay) toMaster(dst, src net.Conn, hub *atomic.Bool, done chan struct{}) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			lower := bytes.ToLower(chunk)
			switch {
			case bytes.Contains(lower, []byte("subscribe")):
				if !r.hubSeen.Swap(true) {
					hub.Store(true)
				}
			case bytes.Contains(chunk, r.channel):
				if f := r.release.Swap(nil); f != nil {
					for !(*f)() {
						select {
						case <-done:
							return
						case <-time.After(time.Millisecond):
						}
					}
				}
			}
			if _, err := dst.Write(chunk); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (r *attack14LagRelay) toProxy(dst, src net.Conn, hub *atomic.Bool, done chan struct{}) {
	defer dst.Close()
	type item struct {
		b  []byte
		at time.Time
	}
	q := make(chan item, 4096)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		for it := range q {
			select {
			case <-done:
				return
			case <-time.After(time.Until(it.at)):
			}
			if _, err := dst.Write(it.b); err != nil {
				return
			}
		}
	})
	defer close(q)
	var prev time.Time
	held := false
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			now := time.Now()
			chunk := bytes.Clone(buf[:n])
			at := now
			if hub.Load() {
				lower := bytes.ToLower(chunk)
				if bytes.Contains(lower, []byte("pong")) {
					r.pong.Store(now.UnixNano())
				}
				if start := r.ramp.Load(); start != 0 {
					// grows 1.2s a second up to 2.8s: no silence of 3s meanwhile
					at = now.Add(min(2800*time.Millisecond, now.Sub(time.Unix(0, start))*12/10))
					if !held && bytes.Contains(chunk, r.channel) && bytes.Contains(lower, []byte("message")) {
						held, at = true, prev.Add(2800*time.Millisecond)
					}
				}
			}
			if at.Before(prev) {
				at = prev
			}
			prev = at
			select {
			case q <- item{chunk, at}:
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// nextPong waits for the master's next PONG on the hub's connection and
// returns when it was sent.
func (r *attack14LagRelay) nextPong(t *testing.T) time.Time {
	t.Helper()
	last := r.pong.Load()
	deadline := time.Now().Add(5 * time.Second)
	for r.pong.Load() == last {
		if time.Now().After(deadline) {
			t.Fatal("no PONG on the hub's connection in 5s")
		}
		time.Sleep(time.Millisecond)
	}
	return time.Unix(0, r.pong.Load())
}

// attack14 P3 (the zero message TWICE; what f8f0a91 missed of attack12
// P1): f8f0a91 bounds when a master may still run its copy (2s after the
// decision) and drops a hub link whose PING is answered over 3s late,
// and reasons that the hub's 12s window then holds every copy. But the
// hub forgets a count after between window/2 (6s) and window without a
// copy (collapse.go: two rotations, each due 6s after the last, made by
// any message), and a link's lag is only read from PONGs: a copy that
// follows a PONG answered 2.8s late by 2.8s of silence is handed on 5.6s
// late, under both limits. So one master C whose links are slow (a
// minority fault) runs its copy 1.9s after the decision and hands it on
// 5.6s later: 7.5s after the others. A rotation that another message
// made 0.4s after the others' copies (here a PUBLISH on masters A and B,
// as any lock script's release with a waiter is) and the one C's late
// copy makes itself forget the count, and the hub delivers the zero
// message a second time, after a new trySetCount(2) of the same name.
// One Redis: "1", "0", "1" and no second "0".
func TestAttack14LatchZeroMessageTwiceThroughALaggingLink(t *testing.T) {
	c := startNodes(t, 3)
	const name = "latch:attack14:p3"
	const tick = "attack14:other"
	channel := "redisson_countdownlatch__channel__{" + name + "}"
	rC := startAttack14LagRelay(t, c.addrs[2], channel)
	p := attack11StartMonitored(t, latchConfig(), engineConfig(), c.addrs[0], c.addrs[1], rC.addr)
	l := newLatchClient(p.Client, name)
	sub := l.subscribe(t)
	other := p.Client.Subscribe(t.Context(), tick) // a waiter on another channel
	t.Cleanup(func() { other.Close() })
	if _, err := other.Receive(t.Context()); err != nil {
		t.Fatalf("SUBSCRIBE %s: %v", tick, err)
	}
	go func() {
		for range other.Channel() {
		}
	}()
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
	publishOther := func(payload string) { // one release of another lock, on A and B
		for _, a := range c.addrs[:2] {
			cl := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
			if err := cl.Publish(t.Context(), tick, payload).Err(); err != nil {
				t.Errorf("PUBLISH on %s: %v", a, err)
			}
			cl.Close()
		}
	}
	sleepTo := func(at time.Time) { time.Sleep(time.Until(at)) }

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	rC.ramp.Store(time.Now().UnixNano())
	time.Sleep(6500 * time.Millisecond) // the hub's first count rotation is due
	P := rC.nextPong(t)
	sleepTo(P.Add(400 * time.Millisecond))
	publishOther("a") // a rotation: the counts' clock starts at R = P+0.4
	d := P.Add(6200 * time.Millisecond)
	sleepTo(d)
	release := func() bool { // C runs the copy right after its PONG due at P+8, within its 2s
		now := time.Now()
		return now.After(d.Add(1900*time.Millisecond)) || time.Unix(0, rC.pong.Load()).After(d.Add(1500*time.Millisecond))
	}
	rC.release.Store(&release)
	if err := l.countDown(t); err != nil { // A and B's copies reach the hub at R+5.8
		t.Fatalf("countDown: %v", err)
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after the countDown = %d, %v; want 0", v, err)
	}
	sleepTo(P.Add(6550 * time.Millisecond))
	publishOther("b") // rotation: the zero message's count is in the older half
	sleepTo(P.Add(10 * time.Second))
	set := time.Now()
	if v, err := l.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("the new latch's trySetCount(2) = %d, %v", v, err)
	}
	sleepTo(P.Add(16 * time.Second))
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
