package integration

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack9 L2 end to end (b37cc24, the latch served): the latch OPENED
// EARLY. An older latch's countDown, through proxy P1 whose link to master
// C turns slow after its nonce read (its decrement held 1.5s, past
// node_timeout), opens the old latch on A and B; a new trySetCount(2) through P2 sets A, B and C; P1's
// DECR then lands on C (2 -> 1); A misses the new set. The new latch's
// FIRST countDown leaves A and C at 0, a quorum of 3: getCount reads 0
// after 1 of 2 countDowns. One Redis: the old countDown opened the old
// latch, so it came before the new set, and the count is 1. C missing the
// old set and A the new one are made by deleting their count (as a master
// down during that set); the latch scripts are cached first (a latch used
// before), or P1's late EVALSHA gets NOSCRIPT and its DECR never runs.
// Fixed by 415b5ea: the decrement names the nonce its countDown read of C
// (none), and misses the new set's count there.
func TestAttack9LatchOpensEarlyOnAnOldLatchsLateDecrement(t *testing.T) {
	c := startNodes(t, 3)
	var delay atomic.Int64
	slowC := startRelay(t, c.addrs[2], relayOpts{sendDelay: &delay})
	qcfg := latchEngineConfig(time.Second)
	p1 := startProxy(t, latchConfig(), qcfg, c.addrs[0], c.addrs[1], slowC)
	p2 := startProxy(t, latchConfig(), qcfg, c.addrs...)
	l1, l2 := newLatchClient(p1.Client, "latch:x"), newLatchClient(p2.Client, "latch:x")
	// Every latch script cached on every master (a latch used before).
	w := newLatchClient(p2.Client, "latch:warm")
	w.trySetCount(t, 1)
	w.countDown(t)
	if v, err := l2.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("old trySetCount(1) = %d, %v", v, err)
	}
	if v, err := l1.getCount(t); v != 1 || err != nil { // P1's connections are up
		t.Fatalf("getCount through P1 = %d, %v", v, err)
	}
	// C missed the old set (as a master down then).
	if err := c.direct[2].HDel(t.Context(), quorum.CountersKey, "l:latch:x", "n:latch:x").Err(); err != nil {
		t.Fatal(err)
	}
	// P1 -> C: the nonce read held 300ms (within node_timeout, 400ms),
	// then the decrement 1.5s (past it).
	delay.Store(int64(300 * time.Millisecond))
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := l1.countDown(t); err != nil {
			t.Errorf("old countDown through P1: %v", err)
		}
	})
	time.Sleep(150 * time.Millisecond)
	delay.Store(int64(1500 * time.Millisecond))
	time.Sleep(350 * time.Millisecond) // A and B counted down: the old latch is open
	if v, err := l2.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount of the old latch after its countDown = %d, %v; want 0", v, err)
	}
	if v, err := l2.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("new trySetCount(2) = %d, %v", v, err)
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // P1's DECR (and claim) have landed on C
	delay.Store(0)
	// A missed the new set (as a master down then).
	if err := c.direct[0].HDel(t.Context(), quorum.CountersKey, "l:latch:x", "n:latch:x").Err(); err != nil {
		t.Fatal(err)
	}
	var counts []string
	for i := range 3 {
		counts = append(counts, c.direct[i].HGet(t.Context(), quorum.CountersKey, "l:latch:x").Val())
	}
	if err := l2.countDown(t); err != nil {
		t.Fatalf("new countDown: %v", err)
	}
	if v, err := l2.getCount(t); err == nil && v == 0 {
		t.Errorf("a count-2 latch after ONE countDown reads open (masters' counts before it %q); one Redis reads 1", counts)
	}
}

// attack9 L1 end to end (b37cc24): a master restarted empty is seeded with
// the highest count of the others, an older latch's leftover too, and the
// new latch never opens. 3 masters, max_ttl 1s (the seeding's wait). An
// old latch(5) counted down 5 times, but master C keeps its 5 (its count
// put back: as a master down during those countDowns); it reads open. A
// new trySetCount(2) sets A and B (C has a count: Redisson's EXISTS),
// granted. B restarts empty and is seeded after the wait: max(2, 5) = 5.
// After the new latch's 2 countDowns [0 3 3]: getCount reads 3 for good.
// One Redis reads 0 (open).
func TestAttack9LatchOpensAfterItsCountDownsBesideAnOldLatchsLeftover(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := latchEngineConfig(time.Second) // the seeding waits max_ttl
	p := startProxy(t, latchConfig(), qcfg, c.addrs...)
	l := newLatchClient(p.Client, "latch:s")
	if v, err := l.trySetCount(t, 5); v != 1 || err != nil {
		t.Fatalf("old trySetCount(5) = %d, %v", v, err)
	}
	for range 5 {
		if err := l.countDown(t); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.direct[2].HSet(t.Context(), quorum.CountersKey, "l:latch:s", 5).Err(); err != nil {
		t.Fatal(err) // C missed the old latch's countDowns
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount of the old latch = %d, %v; want 0", v, err)
	}
	if v, err := l.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("new trySetCount(2) = %d, %v; want 1 (A and B set it)", v, err)
	}
	c.procs[1] = restartRedis(t, c.procs[1])
	l.getCount(t) // B is found unseeded, and marked
	time.Sleep(time.Second + 200*time.Millisecond)
	l.getCount(t) // seeds B
	seed := c.direct[1].HGet(t.Context(), quorum.CountersKey, "l:latch:s").Val()
	for range 2 {
		if err := l.countDown(t); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Errorf("trySetCount(2) and 2 countDowns: getCount = %d, %v (B was seeded with %q); one Redis reads 0", v, err, seed)
	}
}
