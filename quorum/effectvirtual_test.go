package quorum

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// RunEffect charges the slowest node to validity, exactly: three nodes
// take the key for 1s, one says no, one never answers (50ms, the node
// timeout). 1s - 50ms - (10ms drift + 2ms) = 938ms, granted by 3; the
// node that said no has nothing to give back. The body's very first
// call waits firstLoadTimeout (500ms) for the silent node: 488ms.
func TestRunEffectChargesTheSilentNodeToValidity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		took := NodeEffect{Reply: okReply, Keys: []KeyEffect{took(time.Second)}}
		nodes := []*fakeNode{
			{addr: "a", effect: &took, delay: 10 * time.Millisecond},
			{addr: "b", effect: &took, delay: 20 * time.Millisecond},
			{addr: "c", effect: &took, delay: 30 * time.Millisecond},
			{addr: "d", effect: &NodeEffect{Keys: []KeyEffect{{}}}, delay: 5 * time.Millisecond},
			{addr: "e", effect: &NodeEffect{}, silent: true},
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: time.Minute}, asNodes(nodes)...)
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
			if u := n.callsTo("undoeffect"); len(u) > 0 {
				t.Errorf("node %s gave back %d keys after a granted hold", n.addr, len(u))
			}
		}
	})
}

// A run whose answers decide nothing (2 took, 2 said no, one silent) is
// no quorum, and the two takes are given back, on those two nodes only.
func TestRunEffectUndoesASplitTakeWhereItLanded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		took := NodeEffect{Reply: okReply, Keys: []KeyEffect{took(time.Second)}}
		no := NodeEffect{Keys: []KeyEffect{{}}}
		nodes := []*fakeNode{
			{addr: "a", effect: &took},
			{addr: "b", effect: &no},
			{addr: "c", effect: &took},
			{addr: "d", effect: &no},
			{addr: "e", effect: &NodeEffect{}, silent: true},
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: time.Minute}, asNodes(nodes)...)
		res, err := e.RunEffect(t.Context(), e.Wrap("return 1", nil), []string{"k"}, []string{"tok", "1000"})
		if !errors.Is(err, ErrUnavailable) || res.Op != EffectHold {
			t.Fatalf("RunEffect = %+v, %v; want ErrUnavailable for a hold", res, err)
		}
		for i, n := range nodes {
			var undone []string
			for _, c := range n.callsTo("undoeffect") {
				undone = append(undone, c.keys...)
			}
			if want := []string{"k"}; (i == 0 || i == 2) != slices.Equal(undone, want) {
				t.Errorf("node %s gave back %q", n.addr, undone)
			}
		}
	})
}
