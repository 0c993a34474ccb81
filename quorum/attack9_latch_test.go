package quorum

import (
	"errors"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// attack9's latch findings, run through the engine on real servers. They
// were first written as arithmetic over latchCount and latchSeed; the
// fixes are in what the nodes keep (a set's nonce beside its count, a
// reset of an older latch's count, a fresh nonce on a seed), so they run
// the engine's operations.

// latchEngine is an engine over n real servers with a valid config
// (node_timeout at most half of min_ttl) and a short seeding wait.
func latchEngine(t *testing.T, n int) (*Engine, []*redisProc) {
	t.Helper()
	var procs []*redisProc
	var nodes []Node
	for range n {
		p := startRedis(t)
		procs = append(procs, p)
		nodes = append(nodes, p.node(t))
	}
	cfg := Config{MinTTL: time.Second, MaxTTL: time.Second, NodeTimeout: 500 * time.Millisecond}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return New(cfg, nodes...), procs
}

var testLatchMessages = LatchMessages{Publish: "PUBLISH", Channel: "attack9:latch", Message: "0"}

func mustLatch(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// attack9 L1 (LIVENESS: a latch that never opens). A master kept an
// older latch's count (it missed that latch's countDowns); a new
// trySetCount(2) finds it there (Redisson's EXISTS) and sets the others.
// A master restarted empty was seeded with the highest count, the older
// latch's, and after the 2 countDowns a quorum never read 0. Three
// masters: old latch(5) opened [0 0 5]; new set(2) [2 2 5]; B restarts,
// seeded with max(A, C) = 5; 2 countDowns [0 3 3]: reads 3 for good. The
// set now resets the older count to its own ([2 2 2]).
func TestAttack9LatchOpensAfterNCountDownsDespiteAnOldLatchsCount(t *testing.T) {
	e, procs := latchEngine(t, 3)
	ctx := t.Context()
	ok, err := e.LatchSet(ctx, "s", 5, testLatchMessages)
	mustLatch(t, "old trySetCount(5)", err)
	if !ok {
		t.Fatal("old trySetCount(5) not set")
	}
	c := procs[2].Client(t)
	nonce := c.HGet(ctx, CountersKey, "n:s").Val()
	for range 5 {
		mustLatch(t, "old countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	}
	c.HSet(ctx, CountersKey, "l:s", 5, "n:s", nonce) // C missed the old countDowns
	if v, err := e.LatchCount(ctx, "s"); v != 0 || err != nil {
		t.Fatalf("the old latch reads %d, %v; want open", v, err)
	}
	ok, err = e.LatchSet(ctx, "s", 2, testLatchMessages)
	mustLatch(t, "new trySetCount(2)", err)
	if !ok {
		t.Fatal("new trySetCount(2) not granted")
	}
	redistest.Flush(t, procs[1].Client(t)) // B restarts empty
	e.LatchCount(ctx, "s")                 // marks B
	time.Sleep(e.quarantine() + 50*time.Millisecond)
	e.LatchCount(ctx, "s") // seeds B
	seed := procs[1].Client(t).HGet(ctx, CountersKey, "l:s").Val()
	for range 2 {
		mustLatch(t, "countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	}
	if v, err := e.LatchCount(ctx, "s"); v != 0 || err != nil {
		t.Errorf("trySetCount(2) and 2 countDowns beside an older latch's count (B seeded with %q): reads %d, %v; want open", seed, v, err)
	}
}

// attack9 L1b: the same leftovers without a restart. Five masters; D and
// E missed an old latch's countDowns and kept its 5. A new trySetCount(2)
// sets A, B, C and resets D's and E's counts to 2; its 2 countDowns open
// it. Then C is down: 4 answers, all at 0. Without the reset [0 0 3 3]
// decided nothing: NOQUORUM for an open latch with one master of five
// down. (When D and E are down at the set, their leftovers stay: that
// case is documented, liveness only.)
func TestAttack9OpenLatchReadsWithOneOfFiveDown(t *testing.T) {
	e, procs := latchEngine(t, 5)
	ctx := t.Context()
	if ok, err := e.LatchSet(ctx, "s", 5, testLatchMessages); !ok || err != nil {
		t.Fatalf("old trySetCount(5) = %v, %v", ok, err)
	}
	nonce := procs[3].Client(t).HGet(ctx, CountersKey, "n:s").Val()
	for range 5 {
		mustLatch(t, "old countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	}
	for _, i := range []int{3, 4} { // D and E missed them
		procs[i].Client(t).HSet(ctx, CountersKey, "l:s", 5, "n:s", nonce)
	}
	if ok, err := e.LatchSet(ctx, "s", 2, testLatchMessages); !ok || err != nil {
		t.Fatalf("new trySetCount(2) = %v, %v", ok, err)
	}
	for range 2 {
		mustLatch(t, "countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	}
	procs[2].Freeze(t)
	defer procs[2].Thaw()
	if v, err := e.LatchCount(ctx, "s"); v != 0 || err != nil {
		t.Errorf("an opened latch beside an older latch's leftovers, 1 of 5 masters down: %d, %v; want open", v, err)
	}
}

// attack9 L2 (the latch OPENED EARLY): an older latch's countDown whose
// decrement lands late, after a new trySetCount there, counted the new
// latch down. Five masters: old set(1) on A B D E, its countDown lands on
// them, its decrement to C late; new set(2) on A B C (D, E down); the
// late decrement on C [2 2 1 - -]; the new latch's first countDown [1 1 0
// 0 0] read open. A decrement now names the nonce of the set its
// countDown read: the late one misses on C.
func TestAttack9LatchDoesNotOpenEarlyOnAnOldLatchsLateDecrement(t *testing.T) {
	e, procs := latchEngine(t, 5)
	ctx := t.Context()
	c := procs[2].node(t)
	old := e.readCounters(ctx, "", "", latchNoncePrefix+"s")[2].v.Value // C's before the old set: none
	if ok, err := e.LatchSet(ctx, "s", 1, testLatchMessages); !ok || err != nil {
		t.Fatalf("old trySetCount(1) = %v, %v", ok, err)
	}
	procs[2].Client(t).HDel(ctx, CountersKey, "l:s", "n:s") // C down at the old set
	mustLatch(t, "old countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	if v, err := e.LatchCount(ctx, "s"); v != 0 || err != nil {
		t.Fatalf("the old latch after its countDown: %d, %v; want open", v, err)
	}
	for _, i := range []int{3, 4} {
		procs[i].Freeze(t)
	}
	if ok, err := e.LatchSet(ctx, "s", 2, testLatchMessages); !ok || err != nil {
		t.Fatalf("new trySetCount(2) with D, E down = %v, %v", ok, err)
	}
	for _, i := range []int{3, 4} {
		procs[i].Thaw()
	}
	// The old countDown's decrement to C lands now, with what it read of C.
	if d, err := c.LatchDecrement(ctx, "s", old); err != nil || d.New != d.Old {
		t.Fatalf("the old countDown's late decrement on C = %+v, %v; want no change", d, err)
	}
	mustLatch(t, "the new latch's first countDown", e.LatchCountDown(ctx, "s", testLatchMessages))
	v, err := e.LatchCount(ctx, "s")
	if err == nil && v == 0 || err != nil && !errors.Is(err, ErrUnavailable) {
		t.Errorf("a count-2 latch after ONE countDown reads %d, %v; want 1", v, err)
	}
}
