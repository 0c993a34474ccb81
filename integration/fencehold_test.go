package integration

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Fencing tokens across holders of one token (issue 18; found by the
// attack helper): a token given to a later holder
// of a key must be strictly greater than every token given before, and
// never one of an earlier hold.

// A holds k with token X and fences; B then holds k (its SET never
// reached the last master: a reply lost, a master cut off for a moment)
// and fences, with a greater token; B releases; A takes k again with the
// same token X, as Redisson's uuid:threadId or any fixed per-client
// token does. A's new hold must get a token above B's: the hold record A's
// first FENCE left on the last master (it outlives A's release, and B's
// FENCE did not overwrite it there) is not this hold's.
func TestFenceTokenOfAnEarlierHoldWithTheSameTokenIsNotReused(t *testing.T) {
	c := startNodes(t, 5)
	e := newEngine(t, engineConfig(), c.addrs...)
	ctx := t.Context()
	const key = "fence:reuse"
	a := quorum.Lock{Keys: []string{key}, Token: "X"}
	b := quorum.Lock{Keys: []string{key}, Token: "Y"}

	if _, err := e.Acquire(ctx, a, 10*time.Second); err != nil {
		t.Fatalf("A acquire: %v", err)
	}
	fa, err := e.Fence(ctx, key, "X")
	if err != nil {
		t.Fatalf("A fence: %v", err)
	}
	if _, err := e.Release(ctx, a); err != nil {
		t.Fatalf("A release: %v", err)
	}

	if _, err := e.Acquire(ctx, b, 10*time.Second); err != nil {
		t.Fatalf("B acquire: %v", err)
	}
	// B's SET did not land on the last master.
	c.direct[4].Del(ctx, key)
	fb, err := e.Fence(ctx, key, "Y")
	if err != nil {
		t.Fatalf("B fence: %v", err)
	}
	if fb.Token <= fa.Token {
		t.Fatalf("B's token %d is not above A's %d", fb.Token, fa.Token)
	}
	if _, err := e.Release(ctx, b); err != nil {
		t.Fatalf("B release: %v", err)
	}

	if _, err := e.Acquire(ctx, a, 10*time.Second); err != nil {
		t.Fatalf("A acquire again: %v", err)
	}
	fa2, err := e.Fence(ctx, key, "X")
	if err != nil {
		t.Fatalf("A fence again: %v", err)
	}
	if fa2.Token <= fb.Token {
		t.Errorf("A's second hold got token %d, not above B's %d (A's first hold had %d): tokens do not increase across holders", fa2.Token, fb.Token, fa.Token)
	}
}

// Issue 18: repeated FENCE calls for the same hold return the same token.
// A hold extended past the TTL it had when it was first fenced (a
// watchdog's renewal) must still get its first token.
func TestFenceSameHoldAfterExtendKeepsItsToken(t *testing.T) {
	c := startNodes(t, 5)
	e := newEngine(t, engineConfig(), c.addrs...)
	ctx := t.Context()
	a := quorum.Lock{Keys: []string{"fence:renewed"}, Token: "X"}
	if _, err := e.Acquire(ctx, a, 500*time.Millisecond); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	f1, err := e.Fence(ctx, "fence:renewed", "X")
	if err != nil {
		t.Fatalf("fence: %v", err)
	}
	if _, err := e.Extend(ctx, a, 10*time.Second); err != nil {
		t.Fatalf("extend: %v", err)
	}
	// Another lock is fenced meanwhile: the counter moves on.
	if _, err := e.Acquire(ctx, quorum.Lock{Keys: []string{"fence:other"}, Token: "Y"}, 10*time.Second); err != nil {
		t.Fatalf("acquire other: %v", err)
	}
	if _, err := e.Fence(ctx, "fence:other", "Y"); err != nil {
		t.Fatalf("fence other: %v", err)
	}
	time.Sleep(700 * time.Millisecond) // past the TTL the hold had at its first FENCE
	f2, err := e.Fence(ctx, "fence:renewed", "X")
	if err != nil {
		t.Fatalf("fence again: %v", err)
	}
	if f2.Token != f1.Token {
		t.Errorf("the same hold, renewed, got token %d, then %d: repeated FENCE of one hold must return one token", f1.Token, f2.Token)
	}
}
