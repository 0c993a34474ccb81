package integration

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// latch20c's finding (the explorer's slotless states): a master that
// missed the trySetCount has no claim slot of the latch; by 1924247's rule
// alone it answered every claim nobody's, so the claims' tie-break (every
// master answered) could not run, and two last countDowns at once whose
// claims split the other two masters both lost: no zero message, though
// no fault touched the countDowns. A claim that read no tag there now
// creates the slot, of the tag it read on a quorum (latch_claim.lua).
// Latch(2) over 3 masters, C cut off during the set (A and B set it). One
// countDown; then X through P1 (B slow) and Y through P2 (A slow): X
// counts A down, Y counts B down, both read open, X claims A first and Y
// claims B first. One Redis: the last DECR sends "0".
func TestLatchSlotlessMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	c := startNodes(t, 3)
	var dropC atomic.Bool
	var slowB, slowA atomic.Int64
	rC := startRelay(t, c.addrs[2], relayOpts{drop: &dropC})
	rB := startRelay(t, c.addrs[1], relayOpts{sendDelay: &slowB})
	rA := startRelay(t, c.addrs[0], relayOpts{sendDelay: &slowA})
	cfg := latchEngineConfig(time.Minute)
	p1 := startProxy(t, latchConfig(), cfg, c.addrs[0], rB, rC)
	p2 := startProxy(t, latchConfig(), cfg, rA, c.addrs[1], c.addrs[2])
	const name = "latch:20c:slotless"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	ctx := t.Context()
	sub := c.direct[0].Subscribe(ctx, l1.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var zeros atomic.Int64
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				zeros.Add(1)
			}
		}
	}()

	for _, l := range []latchClient{l1, l2} { // the counters seeded, every link up
		if v, err := l.getCount(t); v != 0 || err != nil {
			t.Fatalf("getCount of a latch never set = %d, %v", v, err)
		}
	}
	dropC.Store(true)
	if v, err := l1.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("trySetCount(2) with C cut off = %d, %v", v, err)
	}
	dropC.Store(false)
	time.Sleep(time.Second) // C counted again (probes)
	if err := l1.countDown(t); err != nil {
		t.Fatalf("the first countDown: %v", err)
	}
	for i := range 3 {
		t.Logf("master %d: %v", i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
	}
	slowA.Store(int64(150 * time.Millisecond))
	slowB.Store(int64(150 * time.Millisecond))
	var wg sync.WaitGroup
	for _, l := range []latchClient{l1, l2} {
		wg.Go(func() {
			if err := l.countDown(t); err != nil {
				t.Errorf("the last countDowns: %v", err)
			}
		})
	}
	wg.Wait()
	slowA.Store(0)
	slowB.Store(0)
	time.Sleep(500 * time.Millisecond)
	for i := range 3 {
		t.Logf("master %d: %v", i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
	}
	if v, err := l1.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after 3 countDowns of 2 = %d, %v; want 0", v, err)
	}
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages for the latch (one Redis: 1); a waiter's await() waits for good", n)
	}
}

// attack15 L6: as above, after an ordinary denied trySetCount. C missed
// the trySetCount(1) that set the latch; a second participant's
// trySetCount(1), as every Redisson participant calls, is denied (A and
// B have the count) and undone where it landed: on C it had set a count
// and a slot where there was no field of it. The undo left "m:" "0"
// with no tag, so no claim created C's slot and two last countDowns
// whose claims split A and B decided none: no zero message. Now the undo
// takes "m:" too where the set found no field of the slot
// (latch_undo.lua).
func TestLatchDeniedSetUndoneOnSlotlessMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	c := startNodes(t, 3)
	var dropC atomic.Bool
	var slowB, slowA atomic.Int64
	rC := startRelay(t, c.addrs[2], relayOpts{drop: &dropC})
	rB := startRelay(t, c.addrs[1], relayOpts{sendDelay: &slowB})
	rA := startRelay(t, c.addrs[0], relayOpts{sendDelay: &slowA})
	cfg := latchEngineConfig(time.Minute)
	p1 := startProxy(t, latchConfig(), cfg, c.addrs[0], rB, rC)
	p2 := startProxy(t, latchConfig(), cfg, rA, c.addrs[1], c.addrs[2])
	ctx := t.Context()
	const name = "latch:denied"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	sub := c.direct[0].Subscribe(ctx, l1.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var zeros atomic.Int64
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				zeros.Add(1)
			}
		}
	}()
	for _, l := range []latchClient{l1, l2} { // the counters seeded, every link up
		if v, err := l.getCount(t); v != 0 || err != nil {
			t.Fatalf("getCount of a latch never set = %d, %v", v, err)
		}
	}
	dropC.Store(true)
	if v, err := l1.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) with C cut off = %d, %v", v, err)
	}
	dropC.Store(false)
	time.Sleep(time.Second) // C counted again (probes)
	if v, err := l2.trySetCount(t, 1); v != 0 || err != nil {
		t.Fatalf("a second participant's trySetCount(1) = %d, %v; want 0 (set already)", v, err)
	}
	for _, p := range []string{"l:", "n:", "m:", "o:"} {
		if v, err := c.direct[2].HGet(ctx, quorum.CountersKey, p+name).Result(); err == nil {
			t.Errorf("C after the denied set's undo has %s%s %q; want no field of the latch", p, name, v)
		}
	}
	slowA.Store(int64(150 * time.Millisecond))
	slowB.Store(int64(150 * time.Millisecond))
	var wg sync.WaitGroup
	for _, l := range []latchClient{l1, l2} {
		wg.Go(func() {
			if err := l.countDown(t); err != nil {
				t.Errorf("the last countDowns: %v", err)
			}
		})
	}
	wg.Wait()
	slowA.Store(0)
	slowB.Store(0)
	time.Sleep(500 * time.Millisecond)
	for i := range 3 {
		t.Logf("master %d after: %v", i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
	}
	if v, err := l1.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after the last countDowns = %d, %v; want 0", v, err)
	}
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages (one Redis: 1); a waiter's await() waits for good", n)
	}
}
