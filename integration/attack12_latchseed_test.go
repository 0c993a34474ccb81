package integration

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack12 U1 (the zero message twice for one latch; what latch20b named
// unexplored: the undo of a denied set leaves a take-able claim with no
// slot tag). latch_set writes "m:"="0" over the claim a latch's opening
// countDown made on a master; latch_undo then deletes "o:" but leaves
// "m:"="0". A countDown that reads no "o:" there claims with nonce 0,
// which matches a missing tag: it takes that slot. Latch(1) over 3
// masters. X counts B and C down with A cut off (A keeps 1): open, X
// claims B and C, "0" sent. A trySetCount(2) with C cut off: A taken
// (its count), B set: unavailable, undone on B, whose claim is now
// "0" with no tag. A countDown Y (one too many) counts A down to 0,
// reads open, takes A (its own slot, never claimed) and B (no tag) and
// sends a second "0" for the one latch. One Redis: X's DECR sends "0";
// Y's DECR reads -1 (or 1, had the failed trySetCount(2) landed): no
// second "0".
func TestAttack12LatchDeniedSetUndoLeavesAClaimToTake(t *testing.T) {
	c := startNodes(t, 3)
	var dropA, dropC atomic.Bool
	rA := startRelay(t, c.addrs[0], relayOpts{drop: &dropA})
	rC := startRelay(t, c.addrs[2], relayOpts{drop: &dropC})
	p := startProxy(t, latchConfig(), latchEngineConfig(time.Second), rA, c.addrs[1], rC)
	const name = "latch:attack12:u1"
	l := newLatchClient(p.Client, name)
	ctx := t.Context()
	dump := func(when string) {
		for i := range 3 {
			t.Logf("%s: master %d %v", when, i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
		}
	}
	sub := c.direct[1].Subscribe(ctx, l.channel) // B is never cut off
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

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	dropA.Store(true)
	if err := l.countDown(t); err != nil { // X
		t.Fatalf("countDown X with A cut off: %v", err)
	}
	dropA.Store(false)
	time.Sleep(time.Second)
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after X = %d, %v; want 0", v, err)
	}
	if n := zeros.Load(); n != 1 {
		t.Fatalf("zero messages after X = %d; want 1", n)
	}
	dump("after X")

	dropC.Store(true)
	v, err := l.trySetCount(t, 2)
	t.Logf("trySetCount(2) with C cut off = %d, %v", v, err)
	dropC.Store(false)
	time.Sleep(time.Second)
	dump("after the denied trySetCount(2)")

	if err := l.countDown(t); err != nil { // Y: one too many
		t.Logf("countDown Y: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	dump("after Y")
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages for one latch(1) (one Redis: 1; a countDown of the open latch sends nothing)", n)
	}
}

// attack12 U1b (U1's class through delete(); Z1b's fix covers a claim in
// flight, not one made after): a delete() of the opened latch (one
// Redis: 0, nothing deleted) deletes each master's claim and its tag
// ("m:", "o:"), so a countDown that reads no tag claims there with nonce
// 0 and takes it. Latch(1) over 3 masters; X counts B and C down with A
// cut off (A keeps 1), "0" sent; delete() with A cut off answers 0 and
// wipes X's claims on B and C; a countDown Y (one too many) counts A down
// to 0, reads open, takes A, B and C and sends a second "0". One Redis:
// one "0" (the DEL finds no key, Y's DECR reads -1).
func TestAttack12LatchDeleteOfTheOpenLatchLeavesClaimsToTake(t *testing.T) {
	c := startNodes(t, 3)
	var dropA atomic.Bool
	rA := startRelay(t, c.addrs[0], relayOpts{drop: &dropA})
	p := startProxy(t, latchConfig(), latchEngineConfig(time.Second), rA, c.addrs[1], c.addrs[2])
	const name = "latch:attack12:u1b"
	l := newLatchClient(p.Client, name)
	ctx := t.Context()
	dump := func(when string) {
		for i := range 3 {
			t.Logf("%s: master %d %v", when, i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
		}
	}
	sub := c.direct[1].Subscribe(ctx, l.channel)
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

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	dropA.Store(true)
	if err := l.countDown(t); err != nil { // X
		t.Fatalf("countDown X with A cut off: %v", err)
	}
	v, err := l.delete(t)
	t.Logf("delete() of the opened latch with A cut off = %d, %v (one Redis: 0)", v, err)
	dropA.Store(false)
	time.Sleep(time.Second)
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after X and the delete = %d, %v; want 0", v, err)
	}
	if n := zeros.Load(); n != 1 {
		t.Fatalf("zero messages after X = %d; want 1", n)
	}
	dump("after X and the delete")
	if err := l.countDown(t); err != nil { // Y: one too many
		t.Logf("countDown Y: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	dump("after Y")
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages for one latch(1) (one Redis: 1; the DEL found no key, a countDown of the open latch sends nothing)", n)
	}
}

// attack12 S1 (an opened latch reads closed again; one fault at a time,
// each a minority): latch(1) over 3 masters; A cut off during the
// countDown (B and C count down: open, the zero message sent; A keeps
// 1). Then C restarts empty and is seeded from A and B: fewer than a
// quorum of them have none, and the highest count is A's leftover 1;
// seeded with it, A and C read 1 and the latch that opened reads closed
// with no trySetCount since (an await() blocks, a new trySetCount(1)
// answers 0). B counted the same set down to 0 (its claim slot's tag,
// no count), which proves the leftover: C is seeded with none. One
// Redis: GET nil after the countDown, until a new trySetCount, which
// answers 1.
func TestAttack12LatchOpenedReadsClosedAfterASeed(t *testing.T) {
	attack12OpenedLatchSeeded(t, 3, 1)
}

// TestAttack12LatchOpenedReadsClosedAfterASeedOverFive is S1 over 5
// masters: A and B cut off during the countDown, E restarts and is
// seeded from A, B (1 each), C and D (0): a quorum would read 1.
func TestAttack12LatchOpenedReadsClosedAfterASeedOverFive(t *testing.T) {
	attack12OpenedLatchSeeded(t, 5, 2)
}

// attack12OpenedLatchSeeded runs S1 over n masters, the first cut of
// them cut off during the opening countDown, the last restarted after.
func attack12OpenedLatchSeeded(t *testing.T, n, cut int) {
	c := startNodes(t, n)
	var drop atomic.Bool
	addrs := slices.Clone(c.addrs)
	for i := range cut {
		addrs[i] = startRelay(t, c.addrs[i], relayOpts{drop: &drop})
	}
	p := startProxy(t, latchConfig(), latchEngineConfig(time.Second), addrs...)
	name := fmt.Sprintf("latch:attack12:s1:%d", n)
	l := newLatchClient(p.Client, name)
	ctx := t.Context()
	field := func(i int, f string) string { return c.direct[i].HGet(ctx, quorum.CountersKey, f).Val() }

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	drop.Store(true)
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown with %d masters cut off: %v", cut, err)
	}
	drop.Store(false)
	if field(0, "l:"+name) != "1" {
		t.Fatalf("staging: master 0's count %q; want 1 (it missed the countDown)", field(0, "l:"+name))
	}
	time.Sleep(time.Second) // the cut masters counted again (probes)
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount of the opened latch, every master back = %d, %v; want 0", v, err)
	}

	last := n - 1
	c.procs[last] = restartRedis(t, c.procs[last])
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) && field(last, "seeded") != "1" {
		l.getCount(t) // marks, then seeds after the wait
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("master %d after its seed: %v", last, c.direct[last].HGetAll(ctx, quorum.CountersKey).Val())
	if field(last, "seeded") != "1" {
		t.Fatalf("master %d not seeded again", last)
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Errorf("getCount of the opened latch after a master's seed = %d, %v (one Redis: 0, nil)", v, err)
	}
	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Errorf("a new trySetCount(1) of the opened latch = %d, %v (one Redis: 1)", v, err)
	}
}
