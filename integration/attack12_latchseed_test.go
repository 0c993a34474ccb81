package integration

import (
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
			if m.Payload == "0" {
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
			if m.Payload == "0" {
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
