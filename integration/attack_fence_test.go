package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Attacks on fencing tokens (issue 18): a token given to a later holder
// of a key must be strictly greater than every token given before, and
// never one of an earlier hold.

// The counters and the hold records live on the masters under
// quorum.CountersKey; issue 18: a client cannot forge, reset or delete
// them, every command on them is refused. Through the proxy, a client
// that writes a hold record "1 X" for a key makes the next FENCE of a
// hold by X return 1, below the tokens earlier holders got; a script that
// deletes the counters' fields resets every counter.
func TestAttackFenceReservedKeysRefusedThroughProxy(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	e := newEngine(t, engineConfig(), c.addrs...) // a second proxy's engine: FENCE
	ctx := t.Context()
	cl := newClient(t, p.Addr, nil)
	const key = "fence:forged"
	record := quorum.CountersKey + ":" + key

	// Three holders, each fenced: the counter is at 3.
	var last int64
	for _, tok := range []string{"C1", "C2", "C3"} {
		if err := cl.SetNX(ctx, key, tok, 10*time.Second).Err(); err != nil {
			t.Fatalf("%s acquire: %v", tok, err)
		}
		f, err := e.Fence(ctx, key, tok)
		if err != nil {
			t.Fatalf("%s fence: %v", tok, err)
		}
		last = f.Token
		if n, err := cl.Do(ctx, "DELIFEQ", key, tok).Int64(); n != 1 || err != nil {
			t.Fatalf("%s release = %d, %v", tok, n, err)
		}
	}

	// The attacker releases C3's hold record as if it were a lock, and
	// forges X's, then X takes the key.
	if err := cl.Do(ctx, "DELIFEQ", record, fmt.Sprintf("%d C3", last)).Err(); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("DELIFEQ %s through the proxy = %v; want it refused as reserved", record, err)
	}
	if err := cl.SetNX(ctx, record, "1 X", 10*time.Second).Err(); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("SET NX %s through the proxy = %v; want it refused as reserved", record, err)
	}
	if err := cl.SetNX(ctx, key, "X", 10*time.Second).Err(); err != nil {
		t.Fatalf("X acquire: %v", err)
	}
	f, err := e.Fence(ctx, key, "X")
	if err != nil {
		t.Fatalf("X fence: %v", err)
	}
	if f.Token <= last {
		t.Errorf("X's token %d is not above the last holder's %d (a forged hold record decided it)", f.Token, last)
	}

	// Every other way to the counters' hash and the records is refused.
	const delFields = `redis.call("HDEL", KEYS[1], ARGV[1]) redis.call("HDEL", KEYS[1], ARGV[2]) return 1`
	for _, cmd := range [][]any{
		{"GET", record},
		{"EVAL", delFields, 1, quorum.CountersKey, "seeded", "c"},
		{"EVAL", `return redis.call("GET", KEYS[1])`, 1, record},
		{"HGETALL", quorum.CountersKey},
		{"TYPE", quorum.CountersKey},
		{"EXISTS", quorum.CountersKey},
		{"PTTL", record},
	} {
		err := cl.Do(ctx, cmd...).Err()
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%v through the proxy = %v; want it refused as reserved", cmd[:2], err)
		}
	}
	for i := range c.direct {
		if n, _ := c.direct[i].HLen(ctx, quorum.CountersKey).Result(); n < 2 {
			t.Errorf("node %d: the counters' hash has %d fields; a client reset it", i, n)
		}
	}
}

// A holds k with token X and fences; B then holds k (its SET never
// reached the last master: a reply lost, a master cut off for a moment)
// and fences, with a greater token; B releases; A takes k again with the
// same token X, as Redisson's uuid:threadId or any fixed per-client
// token does. A's new hold must get a token above B's: the hold record A's
// first FENCE left on the last master (it outlives A's release, and B's
// FENCE did not overwrite it there) is not this hold's.
func TestAttackFenceTokenOfAnEarlierHoldWithTheSameToken(t *testing.T) {
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
func TestAttackFenceSameHoldAfterExtend(t *testing.T) {
	c := startNodes(t, 5)
	e := newEngine(t, engineConfig(), c.addrs...)
	ctx := t.Context()
	a := quorum.Lock{Keys: []string{"fence:renewed"}, Token: "X"}
	// 1.5s: the first FENCE of a fresh deployment (marks, seeding) took
	// more than 500ms at load 10.
	if _, err := e.Acquire(ctx, a, 1500*time.Millisecond); err != nil {
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
	time.Sleep(1700 * time.Millisecond) // past the TTL the hold had at its first FENCE
	f2, err := e.Fence(ctx, "fence:renewed", "X")
	if err != nil {
		t.Fatalf("fence again: %v", err)
	}
	if f2.Token != f1.Token {
		t.Errorf("the same hold, renewed, got token %d, then %d: repeated FENCE of one hold must return one token", f1.Token, f2.Token)
	}
}
