package quorum

import (
	"sync/atomic"
	"testing"
	"time"
)

// flipNode is a fakeNode whose first Addr call after armed runs flip: the
// monitor changing node states while FENCE picks the nodes it asks.
type flipNode struct {
	*fakeNode
	armed atomic.Bool
	flip  func()
}

func (n *flipNode) Addr() string {
	if n.armed.CompareAndSwap(true, false) {
		n.flip()
	}
	return n.fakeNode.Addr()
}

// attack9 F1 (fence18c's fenceAsk, LOW): fenceAsk counts the nodes that
// count and are not down in one pass, then picks a quorum of them in
// another, reading those states again. The monitor can take nodes out in
// between (here three of five, as a probe round can): the last pick finds
// no node, and ask[-1] panics. A FENCE should answer (NOQUORUM), not
// panic (the proxy's handler recovers it as "ERR internal error" and
// closes the connection).
func TestAttack9FenceAskSurvivesStatesChangingMidPick(t *testing.T) {
	fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}, {addr: "d"}, {addr: "e"}}
	nodes := asNodes(fs)
	fl := &flipNode{fakeNode: fs[0]}
	nodes[0] = fl
	e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: 10 * time.Second}, nodes...)
	t.Cleanup(func() { e.Close() })
	fl.flip = func() {
		for _, j := range []int{2, 3, 4} {
			h := e.health[j]
			h.mu.Lock()
			h.setLocked(StateUnverified, time.Time{}, "taken out mid-pick")
			h.mu.Unlock()
		}
	}
	fl.armed.Store(true)
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("FENCE panicked when nodes stopped counting while it picked whom to ask: %v", p)
		}
	}()
	e.Fence(t.Context(), "k", "tok")
}
