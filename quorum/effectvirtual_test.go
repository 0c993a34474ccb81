package quorum

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeEffectNode answers a wrapped script with a canned effect after
// delay (silent: never), and records the keys it is asked to give back.
type fakeEffectNode struct {
	*fakeNode
	ne     nodeEffect
	delay  time.Duration
	silent bool

	mu     sync.Mutex
	undone []string
}

func (f *fakeEffectNode) runEffect(ctx context.Context, _ *Effect, _ effectCall, _ []KeyEffect) (nodeEffect, error) {
	if f.silent {
		<-ctx.Done()
		return nodeEffect{}, ctx.Err()
	}
	select {
	case <-time.After(f.delay):
		return f.ne, nil
	case <-ctx.Done():
		return nodeEffect{}, ctx.Err()
	}
}

func (f *fakeEffectNode) undoEffect(_ context.Context, key string, _ keyUndo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.undone = append(f.undone, key)
	return nil
}

// RunEffect charges the slowest node to validity, exactly: three nodes
// take the key for 1s, one says no, one never answers (50ms, the node
// timeout). 1s - 50ms - (10ms drift + 2ms) = 938ms, granted by 3; the
// node that said no has nothing to give back. The body's very first
// call waits firstLoadTimeout (500ms) for the silent node: 488ms.
func TestRunEffectChargesTheSilentNodeToValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		took := nodeEffect{reply: okReply, keys: []KeyEffect{took(time.Second)}}
		nodes := []*fakeEffectNode{
			{fakeNode: &fakeNode{addr: "a"}, ne: took, delay: 10 * time.Millisecond},
			{fakeNode: &fakeNode{addr: "b"}, ne: took, delay: 20 * time.Millisecond},
			{fakeNode: &fakeNode{addr: "c"}, ne: took, delay: 30 * time.Millisecond},
			{fakeNode: &fakeNode{addr: "d"}, ne: nodeEffect{keys: []KeyEffect{{}}}, delay: 5 * time.Millisecond},
			{fakeNode: &fakeNode{addr: "e"}, silent: true},
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: time.Minute}, effectNodes(nodes)...)
		eff := e.Wrap("return 1", nil)
		res, err := e.RunEffect(t.Context(), eff, []string{"k0"}, []string{"tok", "1000"})
		if err != nil || !res.Granted || res.Lease.Validity != 488*time.Millisecond || res.Lease.Granted != 3 {
			t.Fatalf("first RunEffect = %+v, %v; want OK granted by 3 with validity 488ms", res, err)
		}
		res, err = e.RunEffect(t.Context(), eff, []string{"k"}, []string{"tok", "1000"})
		if err != nil || !res.Granted || !res.Took || res.Lease.Validity != 938*time.Millisecond || res.Lease.Granted != 3 || !res.Reply.equal(okReply) {
			t.Fatalf("RunEffect = %+v, %v; want OK granted by 3 with validity 938ms", res, err)
		}
		for _, n := range nodes {
			if len(n.undone) > 0 {
				t.Errorf("node %s gave back %q after a granted hold", n.addr, n.undone)
			}
		}
	})
}

// A run whose answers decide nothing (2 took, 2 said no, one silent) is
// no quorum, and the two takes are given back, on those two nodes only.
func TestRunEffectUndoesASplitTakeWhereItLanded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		took := nodeEffect{reply: okReply, keys: []KeyEffect{took(time.Second)}}
		no := nodeEffect{keys: []KeyEffect{{}}}
		nodes := []*fakeEffectNode{
			{fakeNode: &fakeNode{addr: "a"}, ne: took},
			{fakeNode: &fakeNode{addr: "b"}, ne: no},
			{fakeNode: &fakeNode{addr: "c"}, ne: took},
			{fakeNode: &fakeNode{addr: "d"}, ne: no},
			{fakeNode: &fakeNode{addr: "e"}, silent: true},
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: time.Minute}, effectNodes(nodes)...)
		res, err := e.RunEffect(t.Context(), e.Wrap("return 1", nil), []string{"k"}, []string{"tok", "1000"})
		if !errors.Is(err, ErrUnavailable) || res.Op != EffectHold {
			t.Fatalf("RunEffect = %+v, %v; want ErrUnavailable for a hold", res, err)
		}
		for i, n := range nodes {
			if want := []string{"k"}; (i == 0 || i == 2) != slices.Equal(n.undone, want) {
				t.Errorf("node %s gave back %q", n.addr, n.undone)
			}
		}
	})
}

func effectNodes(fs []*fakeEffectNode) []Node {
	out := make([]Node, len(fs))
	for i, f := range fs {
		out[i] = f
	}
	return out
}
