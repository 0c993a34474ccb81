package quorum

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// cutFenceNode is a real node whose FENCE rounds fail while cut is its
// index, and counts the rounds it is asked.
type cutFenceNode struct {
	Node
	i   int32
	cut *atomic.Int32
	hit *atomic.Int64
}

func (c cutFenceNode) FenceRound(ctx context.Context, key, token, field string) (CounterEntry, error) {
	c.hit.Add(1)
	if c.cut.Load() == c.i {
		return CounterEntry{}, errors.New("cut off")
	}
	return c.Node.FenceRound(ctx, key, token, field)
}

// TestFenceRepeatedWithANodeLostAfterTheQuorumAskedFirst (review27): a
// FENCE that the quorum asked first agreed on leaves the hold's record on
// that quorum alone (fence.go), so the same hold's FENCE with one of those
// nodes then cut off takes a new T: never a lower one, nor an error. (A
// record written on the other nodes after the reply kept the T, but it
// could land after the hold ended, for a later hold of the same token:
// attack15 G1b, G1c.)
func TestFenceRepeatedWithANodeLostAfterTheQuorumAskedFirst(t *testing.T) {
	var cut atomic.Int32
	cut.Store(-1)
	hits := make([]atomic.Int64, 3)
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	for i, p := range procs {
		nodes = append(nodes, cutFenceNode{Node: p.node(t), i: int32(i), cut: &cut, hit: &hits[i]})
	}
	e := New(Config{MaxTTL: 5 * time.Second}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	if _, err := e.Incr(ctx, "seed", 1); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"a", "b"} { // the nodes agree: a quorum is asked first
		l := Lock{Keys: []string{"k"}, Token: tok}
		if _, err := e.Acquire(ctx, l, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Fence(ctx, "k", tok); err != nil {
			t.Fatal(err)
		}
		e.Release(ctx, l)
	}
	l := Lock{Keys: []string{"k"}, Token: "c"}
	if _, err := e.Acquire(ctx, l, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	for i := range hits {
		hits[i].Store(0)
	}
	f, err := e.Fence(ctx, "k", "c")
	if err != nil {
		t.Fatal(err)
	}
	first, asked := int32(-1), 0
	for i := range hits {
		if hits[i].Load() > 0 {
			asked++
			if first < 0 {
				first = int32(i)
			}
		}
	}
	if asked != 2 {
		t.Fatalf("%d nodes asked; want the quorum of 2 first", asked)
	}
	// The node not asked gets nothing after the reply.
	time.Sleep(50 * time.Millisecond)
	for i, p := range procs {
		if hits[i].Load() == 0 && p.Client(t).Exists(ctx, HoldPrefix+"k").Val() != 0 {
			t.Errorf("node %d, not asked, has a record of the hold", i)
		}
	}
	cut.Store(first)
	g, err := e.Fence(ctx, "k", "c")
	if err != nil || g.Token < f.Token {
		t.Errorf("the same hold's FENCE with node %d cut off: %d, %v; want %d or above", first, g.Token, err, f.Token)
	}
	t.Logf("the hold's FENCE %d, again with node %d cut off %d", f.Token, first, g.Token)
}
