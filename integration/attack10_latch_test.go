package integration

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack10DelayRelay forwards 127.0.0.1 connections to target, holding
// every chunk the client sends for what delay holds at the time.
func attack10DelayRelay(t *testing.T, target string, delay *atomic.Int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
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
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(delay.Load()))
						if _, werr := s.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				s.Close()
			}()
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							break
						}
					}
					if err != nil {
						break
					}
				}
				c.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

// attack10 K1: the zero message SENT TWICE. Seeding copies each field's
// highest over the seeded masters, the zero message's claim "m:" too; a
// claim is not a counter that only grows but a first-wins register, so a
// master restarted empty after granting one countDown's claim can be
// seeded with ANOTHER countDown's claim, and a claim sent to it while it
// was pending (after its mark: the seeding's wait does not cover it) lands
// after the seed and reads that claim back.
//
// 3 masters A B C, proxies P1 (direct) and P2 (its requests to B and C
// through delay relays), max_ttl 1s (the seeding's wait). A latch(1):
// countDown X through P1 takes A and B to 0 (C missed it: its count put
// back, as a master down then), claims A and B (a quorum) and sends "0".
// B restarts empty and is marked pending. Just before B's wait ends,
// countDown Y through P2: B answers pending (no decrement), C 1 -> 0,
// Y reads [0 0] open and counted C down, so it claims: A answers X's
// claim, C takes Y's; Y's claim to B is held by the relay. Meanwhile a
// getCount through P1 seeds B with the highest claim, Y's (X's claim is
// relabelled 1 on A, as if X had drawn the claim 1: Y's is then the
// highest; with random claims this happens half the time). Y's claim
// lands on B and reads Y's claim: [X, Y, Y], a quorum, and Y sends "0"
// again. One Redis sends the zero message once (the second countDown's
// DECR reads -1).
func TestAttack10LatchZeroMessageSentTwiceAfterASeededClaim(t *testing.T) {
	c := startNodes(t, 3)
	var delayB, delayC atomic.Int64
	rB, rC := attack10DelayRelay(t, c.addrs[1], &delayB), attack10DelayRelay(t, c.addrs[2], &delayC)
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = time.Second, time.Second // the seeding waits max_ttl (+ drift)
	p1 := startProxy(t, latchConfig(), qcfg, c.addrs...)
	p2 := startProxy(t, latchConfig(), qcfg, c.addrs[0], rB, rC)
	const name = "latch:k1"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	// The zero messages as master A gets them (every publish is sent on
	// every master).
	subA := c.direct[0].Subscribe(t.Context(), l1.channel)
	t.Cleanup(func() { subA.Close() })
	if _, err := subA.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	var zeros atomic.Int64
	go func() {
		for m := range subA.Channel() {
			if m.Payload == "0" {
				zeros.Add(1)
			}
		}
	}()
	ctx := t.Context()
	field := func(i int, f string) string { return c.direct[i].HGet(ctx, quorum.CountersKey, f).Val() }

	if v, err := l1.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	if v, err := l2.getCount(t); v != 1 || err != nil { // P2's connections are up
		t.Fatalf("getCount through P2 = %d, %v", v, err)
	}
	nonce := field(2, "n:"+name)
	// X: countDown through P1; the latch opens, X claims and sends "0".
	if err := l1.countDown(t); err != nil {
		t.Fatalf("countDown X: %v", err)
	}
	// C missed X's decrement and claim (as a master down then); X's claim
	// relabelled 1 (a claim X could have drawn).
	if err := c.direct[2].HSet(ctx, quorum.CountersKey, "l:"+name, 1, "n:"+name, nonce).Err(); err != nil {
		t.Fatal(err)
	}
	c.direct[2].HDel(ctx, quorum.CountersKey, "m:"+name)
	c.direct[0].HSet(ctx, quorum.CountersKey, "m:"+name, 1)

	c.procs[1] = restartRedis(t, c.procs[1])
	time.Sleep(1500 * time.Millisecond) // both proxies see B restarted and reconnect
	l1.getCount(t)                      // marks B pending
	mark, err := strconv.ParseInt(field(1, "pending"), 10, 64)
	if err != nil {
		t.Fatalf("B not marked pending: %v (seeded %q)", err, field(1, "seeded"))
	}
	// A latch used since: the latch scripts cached on B again (trySetCount
	// and the claim run there, answering pending).
	w := newLatchClient(p1.Client, "latch:k1warm")
	if v, err := w.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("warm trySetCount = %d, %v", v, err)
	}
	if err := w.countDown(t); err != nil {
		t.Fatalf("warm countDown: %v", err)
	}
	tm, err := c.direct[1].Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	wait := time.Second + time.Second/100 + 2*time.Millisecond
	seedable := time.Now().Add(time.Duration(mark)*time.Millisecond + wait - time.Duration(tm.UnixMilli())*time.Millisecond)
	if seeded := field(1, "seeded"); seeded == "1" {
		t.Fatal("B seeded before Y")
	}

	time.Sleep(time.Until(seedable.Add(-100 * time.Millisecond)))
	delayC.Store(int64(300 * time.Millisecond))
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() {
		if err := l2.countDown(t); err != nil {
			t.Errorf("countDown Y: %v", err)
		}
	})
	time.Sleep(time.Until(t0.Add(400 * time.Millisecond)))
	delayB.Store(int64(700 * time.Millisecond)) // Y's claim to B, sent at ~600ms, lands at ~1300ms
	time.Sleep(time.Until(t0.Add(950 * time.Millisecond)))
	l1.getCount(t) // seeds B: Y's claim is on C by now
	seededClaim := field(1, "m:"+name)
	wg.Wait()
	delayB.Store(0)
	delayC.Store(0)
	time.Sleep(300 * time.Millisecond)
	t.Logf("claims A %q B %q (seeded %q) C %q", field(0, "m:"+name), field(1, "m:"+name), seededClaim, field(2, "m:"+name))
	if n := zeros.Load(); n != 1 {
		t.Errorf("master A got the zero message %d times for one latch(1); one Redis sends it once", n)
	}
}
