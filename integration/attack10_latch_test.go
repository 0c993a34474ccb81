package integration

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack10 K1: the zero message SENT TWICE. Seeding copies each field's
// highest over the seeded masters, the zero message's claim "m:" too; a
// claim is not a counter that only grows but a first-wins register, so a
// master restarted empty after granting one countDown's claim can be
// seeded with ANOTHER countDown's claim, and a claim sent to it while it
// was pending (after its mark: the seeding's wait does not cover it) lands
// after the seed and reads that claim back.
//
// 3 masters A B C, proxies P1 (direct) and P2 (its requests to B and C
// through delay relays), max_ttl 1s (the seeding's wait), node_timeout
// 400ms (valid: at most half of min_ttl). A latch(1):
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
	rB, rC := startRelay(t, c.addrs[1], relayOpts{sendDelay: &delayB}), startRelay(t, c.addrs[2], relayOpts{sendDelay: &delayC})
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = time.Second, time.Second // the seeding waits max_ttl (+ drift)
	qcfg.NodeTimeout = 400 * time.Millisecond           // a valid config: at most half of min_ttl
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
			if untagged(m) == "0" {
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
	delayC.Store(int64(150 * time.Millisecond))
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() {
		if err := l2.countDown(t); err != nil {
			t.Errorf("countDown Y: %v", err)
		}
	})
	time.Sleep(time.Until(t0.Add(200 * time.Millisecond)))
	delayB.Store(int64(300 * time.Millisecond)) // Y's claim to B, sent at ~300ms, lands at ~600ms
	time.Sleep(time.Until(t0.Add(500 * time.Millisecond)))
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

// attack10 K2: the latch OPENS EARLY. A countDown's two rounds (read each
// master's nonce, then decrement) straddle a master's restart: its nonce
// was read before, its decrement is sent after, on a new connection, and
// held on the way (a slow link, past node_timeout) until the master was
// seeded again. The seed copies the highest count AND the nonce of the
// set, which the countDown already decremented on the masters it reached:
// the late decrement matches the seeded nonce and counts the same
// countDown a second time there.
//
// 3 masters A B C, P1 direct, P2 through delay relays to B and C,
// max_ttl 1s, node_timeout 400ms. trySetCount(2) through P1; A missed it (its count deleted,
// as a master down then). countDown Z through P2: A and B read at once, C
// slow (300ms); meanwhile B restarts empty, and P2's link to B turns slow
// (2.5s). Z's decrements: A none, C 2 -> 1 (answered), B's held. P1
// marks B, seeds it after the wait from A and C: count 1, the set's
// nonce. Z's held decrement lands on B: 1 -> 0. Masters [none 0 1]: a
// quorum at 0, getCount reads 0 after ONE countDown of 2. One Redis: 1.
func TestAttack10LatchOpensEarlyOnADecrementAcrossARestart(t *testing.T) {
	c := startNodes(t, 3)
	var delayB, delayC atomic.Int64
	rB, rC := startRelay(t, c.addrs[1], relayOpts{sendDelay: &delayB}), startRelay(t, c.addrs[2], relayOpts{sendDelay: &delayC})
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = time.Second, time.Second // the seeding waits max_ttl (+ drift)
	qcfg.NodeTimeout = 400 * time.Millisecond           // a valid config: at most half of min_ttl
	p1 := startProxy(t, latchConfig(), qcfg, c.addrs...)
	p2 := startProxy(t, latchConfig(), qcfg, c.addrs[0], rB, rC)
	const name = "latch:k2"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	ctx := t.Context()
	field := func(i int, f string) string { return c.direct[i].HGet(ctx, quorum.CountersKey, f).Val() }
	decrSrc, err := os.ReadFile("../quorum/redisnode/lua/latch_decr.lua")
	if err != nil {
		t.Fatal(err)
	}

	if v, err := l1.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("trySetCount(2) = %d, %v", v, err)
	}
	if v, err := l2.getCount(t); v != 2 || err != nil { // P2's connections are up
		t.Fatalf("getCount through P2 = %d, %v", v, err)
	}
	// A missed the set (as a master down then): none of its fields (its
	// claim slot's tag, "o:", with no count would read as the set counted
	// down to 0 there, which a seed takes as the opening).
	c.direct[0].HDel(ctx, quorum.CountersKey, "l:"+name, "n:"+name, "o:"+name, "m:"+name)
	if v, err := l1.getCount(t); v != 2 || err != nil {
		t.Fatalf("getCount with A missing the set = %d, %v; want 2", v, err)
	}

	delayC.Store(int64(300 * time.Millisecond))
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() {
		if err := l2.countDown(t); err != nil {
			t.Logf("countDown Z: %v", err)
		}
	})
	time.Sleep(100 * time.Millisecond) // Z read A and B; C's read is held
	delayC.Store(0)                    // Z's decrement to C goes through at once
	delayB.Store(int64(2500 * time.Millisecond))
	c.procs[1] = restartRedis(t, c.procs[1])
	t.Logf("B restarted %v after Z began", time.Since(t0))
	if time.Since(t0) > 300*time.Millisecond {
		t.Fatalf("B's restart took %v: Z's read round ended before it", time.Since(t0))
	}
	l1.getCount(t) // marks B pending
	if field(1, "pending") == "" {
		t.Fatal("B not marked pending")
	}
	// The latch's decrement script cached on B again (a latch used since).
	if err := c.direct[1].ScriptLoad(ctx, string(decrSrc)).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(t0.Add(1900 * time.Millisecond))) // B's wait ended; Z's decrement landed on C
	l1.getCount(t)                                          // seeds B
	seeded := []string{field(1, "seeded"), field(1, "l:"+name), field(1, "n:"+name), field(2, "l:"+name), field(2, "n:"+name)}
	wg.Wait()
	for end := time.Now().Add(8 * time.Second); field(1, "l:"+name) == seeded[1] && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond) // Z's held decrement lands on B
	}
	delayB.Store(0)
	delayC.Store(0)
	counts := []string{field(0, "l:"+name), field(1, "l:"+name), field(2, "l:"+name)}
	t.Logf("B after its seed: seeded %q count %q nonce %q (C: count %q nonce %q); counts now %q", seeded[0], seeded[1], seeded[2], seeded[3], seeded[4], counts)
	if v, err := l1.getCount(t); err == nil && v == 0 {
		t.Errorf("a count-2 latch after ONE countDown reads open (masters' counts %q); one Redis reads 1", counts)
	}
}
