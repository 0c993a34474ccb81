package quorum

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLatchUnavailableNamesUnseededNodes: a latch round short of seeded
// nodes names them unseeded, as a counter round does (15cd3ba): no lock
// quarantine is involved, and the proxy's NOQUORUM reply would send the
// client to INFO for a quarantine it does not show.
func TestLatchUnavailableNamesUnseededNodes(t *testing.T) {
	res := []result[LatchAnswer]{
		{v: LatchAnswer{State: CounterSeeded, Value: 1}},
		{v: LatchAnswer{State: CounterPending}},
		{err: errors.New("down")},
	}
	err := latchUnavailable(res, 1)
	var oe *OutcomeError
	if !errors.As(err, &oe) || oe.Quarantined != 0 || oe.Unseeded != 1 {
		t.Errorf("latchUnavailable = %v; want 1 unseeded, 0 quarantined", err)
	}
	if want := "1 granted, 1 unseeded, 0 denied, 1 failed of 3 nodes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("latchUnavailable = %v; want it to read %q", err, want)
	}
}

// downNode is a master that is down for lock operations: every acquire
// and release fails without reaching it.
type downNode struct {
	Node
}

func (downNode) Acquire(context.Context, Lock, time.Duration) (Acquired, error) {
	return Acquired{}, errors.New("connection refused (down)")
}

func (downNode) Undo(context.Context, Lock, []Entry, int64) (int, error) {
	return 0, errors.New("connection refused (down)")
}

func (downNode) Release(context.Context, Lock, int64) ([]Found, error) {
	return nil, errors.New("connection refused (down)")
}

// TestReview28FailedReentryKeepsTheEarlierGrant: client A holds K (a
// grant on masters 0 and 2: master 1 has client C's leftover, an acquire
// of C's whose undo was lost). A re-enters K by its token's prefix
// (redislock's obtain) while master 2 is down: master 0 grants (K is
// A's), master 1 denies, master 2 fails: no quorum, and the undo deletes
// K on master 0, A's earlier grant, whose validity still runs. Master 2
// comes back; C's acquire (its own prefix re-enters master 1) gets
// masters 0 and 1: C is told it holds K while A's earlier grant is
// valid. One Redis would never fail A's re-entry, nor delete A's key.
func TestReview28FailedReentryKeepsTheEarlierGrant(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	cfg := Config{MaxTTL: 30 * time.Second, NodeTimeout: 500 * time.Millisecond}
	plain := New(cfg, procs[0].node(t), procs[1].node(t), procs[2].node(t))
	twoDown := New(cfg, procs[0].node(t), procs[1].node(t), downNode{Node: procs[2].node(t)})

	cTok := "cccccccc-c-leftover"
	if err := procs[1].Client(t).Set(ctx, "K", cTok, 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	a := Lock{Keys: []string{"K"}, Token: "aaaaaaaa-a-meta", PrefixLen: 8}
	lease, err := plain.Acquire(ctx, a, 20*time.Second)
	if err != nil {
		t.Fatalf("A's acquire: %v", err)
	}
	if _, err := twoDown.Acquire(ctx, a, 20*time.Second); err == nil {
		t.Fatal("A's re-entry with master 2 down and master 1 C's: granted; want no quorum")
	}
	c := Lock{Keys: []string{"K"}, Token: cTok, PrefixLen: 8}
	if _, err := plain.Acquire(ctx, c, 20*time.Second); err == nil && lease.Valid(time.Now()) {
		for i, p := range procs {
			t.Logf("master %d: K = %q", i, p.Client(t).Get(ctx, "K").Val())
		}
		t.Errorf("C was granted K while A's earlier grant is valid for %v more (A's failed re-entry deleted it on master 0)", time.Until(lease.Expires).Round(time.Second))
	}
}

// lostClaim is a master whose latch claims are lost on the way (a
// claim's message dropped): the claimer gets a timeout, the master
// nothing.
type lostClaim struct {
	Node
}

func (lostClaim) LatchClaim(context.Context, string, int64, int64, int64) (LatchAnswer, error) {
	return LatchAnswer{}, errors.New("timeout (claim lost)")
}

// TestReview28LatchZeroMessageOnceAcrossANewSet: three masters, latch L
// set to 1 (nonce N1) everywhere. Proxy A's countDown opens it; its claim
// lands on masters 0 and 1 and is lost to master 2; A's claim holds a
// quorum and A sends the zero message. A new trySetCount of L (Redisson
// allows it: L is open), in flight, has landed on master 0 only: its set
// replaces master 0's claim slot (A's vote there) with a fresh one.
// Proxy B's countDown then reads master 0's new count and the others'
// opened N1, reads the latch open (two zeros), and claims: master 0's new
// slot and master 2's untaken N1 slot give B a quorum, so B sends the
// zero message again. Master 0 voted twice, once in each slot.
func TestReview28LatchZeroMessageOnceAcrossANewSet(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	m := LatchMessages{Publish: "publish", Channel: "review28:latch", Message: "0"}
	msgs := subscribe(t, procs[1].Client(t), m.Channel).Channel()

	plain := []Node{procs[0].node(t), procs[1].node(t), procs[2].node(t)}
	cfg := Config{MaxTTL: time.Second, NodeTimeout: 500 * time.Millisecond}
	b := New(cfg, plain...)
	a := New(cfg, procs[0].node(t), procs[1].node(t), lostClaim{Node: procs[2].node(t)})
	if _, err := b.Incr(ctx, "seed", 1); err != nil { // seeds the deployment
		t.Fatal(err)
	}
	if ok, err := b.LatchSet(ctx, "L", 1, m); err != nil || !ok {
		t.Fatalf("LatchSet: %v, %v; want true", ok, err)
	}
	quietCount(msgs) // the set's own message
	if err := a.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatalf("A's countDown: %v", err)
	}
	if n := quietCount(msgs); n != 1 {
		t.Fatalf("A's opening countDown sent %d zero messages; want 1", n)
	}
	// The new latch's set (count 5), landed on master 0 only so far.
	if ans, err := procs[0].node(t).LatchSet(ctx, "L", 5, positiveNonce()); err != nil || ans.Value != 1 {
		t.Fatalf("the new set on master 0: %+v, %v; want set", ans, err)
	}
	if err := b.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatalf("B's countDown: %v", err)
	}
	if n := quietCount(msgs); n != 0 {
		for i, p := range procs {
			t.Logf("master %d: %v", i, p.Client(t).HGetAll(ctx, CountersKey).Val())
		}
		t.Errorf("%d zero messages for one opening of L; want 1 (B's claim won with master 0's second vote)", 1+n)
	}
}
