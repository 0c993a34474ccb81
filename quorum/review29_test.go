package quorum

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// review29 T1: the slow log and MONITOR show, per node, the answer of the
// node's last call in the command. A failed acquire's undo (undo, since
// 1ba528d) calls every node, and its answer, an int, reads as
// "answered": a denied SET NX shows every node "answered", the node whose
// reply failed too. Before 1ba528d the nodes that denied kept "denied"
// ([]Found nil) and the released one read "granted".
func TestReview29FailedAcquireTraceKeepsEachNodesAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			{addr: "a"},
			(&fakeNode{addr: "b"}).with("k", "other", time.Second),
			{addr: "c", err: errBoom},
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		tr := NewTrace(len(fs))
		_, err := e.Acquire(WithTrace(context.Background(), tr), Lock{Keys: []string{"k"}, Token: "mine"}, time.Second)
		if err == nil {
			t.Fatal("Acquire granted; want a failure (1 granted, 1 denied, 1 failed)")
		}
		want := map[int]Answer{1: AnswerDenied, 2: AnswerFailed}
		for _, n := range tr.Nodes() {
			if w, ok := want[n.Node]; ok && n.Answer != w {
				t.Errorf("node %d traced %v after %d calls; want %v (its answer to the acquire)", n.Node, n.Answer, n.Calls, w)
			}
		}
	})
}

// review29 F1 (R1 again, by the late path): d598eed keeps a re-entry's
// longer TTL so that a master whose undo does not land keeps the earlier
// grant whole; but a granted re-entry has its newTTL round first, which
// sets the short TTL on every master that kept the longer one, and when
// the proxy then finds the lease's validity gone at the reply
// (UndoAcquire, de741f7), the earlier grant rests on the set-back alone.
// A set-back that does not land (its masters cut off) leaves the earlier
// grant cut to the re-entry's TTL there, and C is granted beside it.
//
// A holds k for 30s on a, b, c. A re-enters k with 1s: granted, newTTL
// sets 1s everywhere. Its reply is late (the proxy's check: the lease is
// no longer valid), so the proxy calls UndoAcquire; b and c are cut off
// then. a is set back to 30s; b and c keep 1s. Once that 1s ran out, C
// (b and c healed) is granted k while A's first lease runs ~29s more.
// Since attack16 R2b's fix no round sets the 1s: every master keeps 30s.
func TestReview29LateReentryUndoLostLeavesEarlierGrantCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		a := Lock{Keys: []string{"k"}, Token: "app:1", PrefixLen: 4}
		first, err := e.Acquire(t.Context(), a, 30*time.Second)
		if err != nil {
			t.Fatalf("A's acquire: %v", err)
		}
		again := Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}
		lease, err := e.Acquire(t.Context(), again, time.Second)
		if err != nil {
			t.Fatalf("A's re-entry: %v; want granted", err)
		}
		// The reply is late: as proxy.acquire, give the grant back.
		time.Sleep(time.Until(lease.Expires) + ms)
		if lease.Valid(time.Now()) {
			t.Fatal("the re-entry's lease is still valid")
		}
		fs[1].fail(errBoom)
		fs[2].fail(errBoom)
		e.UndoAcquire(t.Context(), again, lease)
		fs[1].fail(nil)
		fs[2].fail(nil)
		time.Sleep(time.Second) // the re-entry's 1s, where it was not set back
		c := Lock{Keys: []string{"k"}, Token: "web:1"}
		if _, err := e.Acquire(t.Context(), c, 10*time.Second); err == nil && first.Valid(time.Now()) {
			for _, f := range fs {
				tok, _ := f.token("k")
				t.Logf("node %s: k = %q, ttl %v", f.addr, tok, f.ttl("k"))
			}
			t.Errorf("C granted k while A's first lease is valid for %v more (second holder)", time.Until(first.Expires).Round(time.Second))
		}
	})
}

// F1 on real servers: the re-entry's newTTL was a real PEXPIRE, and the
// late path's set-back is lost on masters 1 and 2 (downNode's Undo: the
// connection refused). Masters 1 and 2 kept A's re-entry with 1s; C was
// granted K on them while A's first 30s grant ran. Since attack16 R2b's
// fix no round sets the 1s.
func TestReview29LateReentryUndoLostOnRedis(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	cfg := Config{MaxTTL: 30 * time.Second, NodeTimeout: 500 * time.Millisecond}
	plain := New(cfg, procs[0].node(t), procs[1].node(t), procs[2].node(t))
	cut := New(cfg, procs[0].node(t), downNode{Node: procs[1].node(t)}, downNode{Node: procs[2].node(t)})

	a := Lock{Keys: []string{"K"}, Token: "aaaaaaaa-a-1", PrefixLen: 8}
	first, err := plain.Acquire(ctx, a, 30*time.Second)
	if err != nil {
		t.Fatalf("A's acquire: %v", err)
	}
	a.Token = "aaaaaaaa-a-2"
	lease, err := plain.Acquire(ctx, a, time.Second)
	if err != nil {
		t.Fatalf("A's 1s re-entry: %v; want granted", err)
	}
	// The proxy finds the lease late (its check at the reply) and gives it
	// back; masters 1 and 2 are cut off during the give-back.
	cut.UndoAcquire(ctx, a, lease)
	time.Sleep(1100 * time.Millisecond) // the re-entry's 1s
	c := Lock{Keys: []string{"K"}, Token: "cccccccc-c-1"}
	if _, err := plain.Acquire(ctx, c, 10*time.Second); err == nil && first.Valid(time.Now()) {
		for i, p := range procs {
			t.Logf("master %d: K = %q", i, p.Client(t).Get(ctx, "K").Val())
		}
		t.Errorf("C granted K while A's first grant is valid for %v more (second holder)", time.Until(first.Expires).Round(time.Second))
	}
}

// review29 T1b (residue of 5ca3863): a re-entrant lock's node whose
// acquire failed is left alone by the undo (undoNothing), whose answer,
// false, reads "denied": MONITOR and the slow log show a master that did
// not answer as one that denied.
func TestReview29FailedReentrantAcquireTraceKeepsFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			{addr: "a"},
			(&fakeNode{addr: "b"}).with("k", "other", time.Second),
			{addr: "c", err: errBoom},
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		tr := NewTrace(len(fs))
		_, err := e.Acquire(WithTrace(context.Background(), tr), Lock{Keys: []string{"k"}, Token: "app:1", PrefixLen: 4}, time.Second)
		if err == nil {
			t.Fatal("Acquire granted; want a failure")
		}
		for _, n := range tr.Nodes() {
			if n.Node == 2 && n.Answer != AnswerFailed {
				t.Errorf("node 2 (its acquire failed) traced %v after %d calls; want failed", n.Answer, n.Calls)
			}
		}
	})
}
