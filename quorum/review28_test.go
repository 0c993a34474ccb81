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
	res := []result[latchAnswer]{
		{v: latchAnswer{state: CounterSeeded, v: 1}},
		{v: latchAnswer{state: CounterPending}},
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
	*redisNode
}

func (downNode) Acquire(context.Context, Lock, time.Duration) (Acquired, error) {
	return Acquired{}, errors.New("connection refused (down)")
}

func (downNode) Undo(context.Context, Lock, []Entry) (int, error) {
	return 0, errors.New("connection refused (down)")
}

func (downNode) Release(context.Context, Lock) ([]Found, error) {
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
	twoDown := New(cfg, procs[0].node(t), procs[1].node(t), downNode{redisNode: procs[2].node(t)})

	cTok := "cccccccc-c-leftover"
	if err := procs[1].admin(t).Set(ctx, "K", cTok, 20*time.Second).Err(); err != nil {
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
			t.Logf("master %d: K = %q", i, p.admin(t).Get(ctx, "K").Val())
		}
		t.Errorf("C was granted K while A's earlier grant is valid for %v more (A's failed re-entry deleted it on master 0)", time.Until(lease.Expires).Round(time.Second))
	}
}
