package quorum

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A failed re-entrant acquire gives back only what it took: on a master
// that granted by taking the token's earlier grant again, the earlier
// value comes back with its TTL as it was when taken; a key it took free
// there is deleted; a master that denied is not called, and one that
// failed is not undone (its write may have taken an earlier grant again).
func TestAcquireFailedReentrySetsEarlierGrantBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k1", "app:1", 800*ms),
			(&fakeNode{addr: "b"}).with("k1", "web:1", time.Second),
			(&fakeNode{addr: "c", lost: true}).with("k1", "app:1", 800*ms),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		l := Lock{Keys: []string{"k1", "k2"}, Token: "app:2", PrefixLen: 4}
		_, err := e.Acquire(t.Context(), l, 5*time.Second)
		checkSentinel(t, "Acquire", err, ErrUnavailable)
		// a answered at once, its k1 had 800ms left and took the re-entry's
		// longer 5s; the undo came 50ms later (c's deadline) and set the
		// earlier value back with the longer TTL it had then: a set-back
		// never shortens, as that TTL may be another acquire's of the same
		// token (attack16 R2).
		if tok, _ := fs[0].token("k1"); tok != "app:1" || fs[0].ttl("k1") != 5*time.Second-50*ms {
			t.Errorf("node a holds k1 = %q with TTL %v; want the earlier grant app:1 back with 4.95s", tok, fs[0].ttl("k1"))
		}
		if tok, ok := fs[0].token("k2"); ok {
			t.Errorf("node a holds k2 = %q; want it deleted (taken free)", tok)
		}
		if ops := fs[1].ops(); len(ops) != 1 {
			t.Errorf("node b (denied) got calls %v; want the acquire only", ops)
		}
		if ops := fs[2].ops(); len(ops) != 1 {
			t.Errorf("node c (failed, a re-entrant lock) got calls %v; want the acquire only", ops)
		}
		if tok, _ := fs[2].token("k1"); tok != "app:2" || fs[2].ttl("k1") != 5*time.Second-50*ms {
			t.Errorf("node c holds k1 = %q with TTL %v; want app:2 left to its TTL", tok, fs[2].ttl("k1"))
		}
	})
}

// A re-entry with a TTL shorter than the key had is granted, and each
// node keeps the longer of the two TTLs: nothing more is sent to shorten
// it (a round that could land after a later re-entry of the same token,
// attack16 R2b). The lease counts from the TTL asked, never the kept one.
func TestAcquireReentryKeepsTheLongerTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "app:1", 5*time.Second),
			(&fakeNode{addr: "b"}).with("k", "app:1", 500*ms),
			{addr: "c"},
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		l := Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}
		lease, err := e.Acquire(t.Context(), l, time.Second)
		if err != nil {
			t.Fatalf("Acquire = %v; want granted", err)
		}
		// 1s - (10ms drift + 2ms); no time passes in the bubble.
		if lease.Validity != 988*ms {
			t.Errorf("lease validity = %v; want 988ms, from the 1s asked", lease.Validity)
		}
		for i, want := range []time.Duration{5 * time.Second, time.Second, time.Second} {
			if tok, _ := fs[i].token("k"); tok != "app:2" || fs[i].ttl("k") != want {
				t.Errorf("node %s holds k = %q with TTL %v; want app:2 with %v", fs[i].addr, tok, fs[i].ttl("k"), want)
			}
			if ops := fs[i].ops(); len(ops) != 1 {
				t.Errorf("node %s got calls %v; want the acquire only", fs[i].addr, ops)
			}
		}
	})
}

// A failed re-entry with a TTL shorter than the earlier grant's must not
// shorten it on a master whose reply was lost: that master is not undone,
// and the TTL it kept is what keeps the earlier grant whole there.
func TestAcquireFailedShorterReentryKeepsTheEarlierTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "app:1", 800*ms),
			(&fakeNode{addr: "b", lost: true}).with("k", "app:1", 800*ms),
			(&fakeNode{addr: "c"}).with("k", "web:1", time.Second),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		_, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, 200*ms)
		checkSentinel(t, "Acquire", err, ErrUnavailable)
		if tok, _ := fs[1].token("k"); tok != "app:2" || fs[1].ttl("k") != 750*ms {
			t.Errorf("node b holds k = %q with TTL %v; want app:2 with the earlier grant's 750ms left", tok, fs[1].ttl("k"))
		}
		if tok, _ := fs[0].token("k"); tok != "app:1" || fs[0].ttl("k") != 800*ms {
			t.Errorf("node a holds k = %q with TTL %v; want app:1 set back with 800ms", tok, fs[0].ttl("k"))
		}
	})
}

// A granted re-entry that its client is not told of (the proxy found its
// validity gone at the reply) is given back as a failed one is: the
// earlier grant set back, not released (the proxy released it before).
// A plain grant is released.
func TestUndoAcquireSetsBackAGrantedReentry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "app:1", 5*time.Second),
			(&fakeNode{addr: "b"}).with("k", "app:1", 5*time.Second),
			(&fakeNode{addr: "c"}).with("k", "app:1", 5*time.Second),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		l := Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}
		lease, err := e.Acquire(t.Context(), l, time.Second)
		if err != nil {
			t.Fatalf("Acquire = %v; want granted", err)
		}
		e.UndoAcquire(t.Context(), l, lease)
		for _, f := range fs {
			if tok, _ := f.token("k"); tok != "app:1" || f.ttl("k") != 5*time.Second {
				t.Errorf("node %s holds k = %q with TTL %v; want the earlier grant app:1 back with 5s", f.addr, tok, f.ttl("k"))
			}
		}
		plain := Lock{Keys: []string{"p"}, Token: "mine"}
		lease, err = e.Acquire(t.Context(), plain, time.Second)
		if err != nil {
			t.Fatalf("plain Acquire = %v; want granted", err)
		}
		e.UndoAcquire(t.Context(), plain, lease)
		if got := holders(fs, "p", "mine"); len(got) != 0 {
			t.Errorf("plain grant left on nodes %v after UndoAcquire; want none", got)
		}
	})
}

// A set-back is conditional: a key that no longer holds the new token
// (released, or taken by another since) is left as it is.
func TestAcquireUndoSetsBackOnlyWhatStillHoldsTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := (&fakeNode{addr: "a"}).with("k", "app:1", time.Second)
		l := Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}
		a, err := f.Acquire(t.Context(), l, time.Second)
		if err != nil || !a.Granted || len(a.Before) != 1 {
			t.Fatalf("Acquire = %+v, %v; want granted with one Before", a, err)
		}
		f.with("k", "web:1", time.Second)
		if n, err := f.Undo(t.Context(), l, a.Before, 0); n != 0 || err != nil {
			t.Errorf("Undo over another token = %d, %v; want 0, nil", n, err)
		}
		if tok, _ := f.token("k"); tok != "web:1" {
			t.Errorf("k = %q after the undo; want web:1 left alone", tok)
		}
	})
}

// lostAcquire is a master whose acquire replies are lost: the write lands,
// the engine gets an error.
type lostAcquire struct {
	Node
}

func (n lostAcquire) Acquire(ctx context.Context, l Lock, ttl time.Duration) (Acquired, error) {
	n.Node.Acquire(ctx, l, ttl)
	return Acquired{}, errors.New("reply lost")
}

// On real servers: A holds K for 20s on masters 0 and 1 (master 2 has C's
// leftover, 1.5s). A re-enters K with a TTL of 1s: master 0 takes it again
// but its reply is lost, master 1 is down, master 2 denies: no quorum, and
// master 0 is not undone. Had the re-entry set its 1s there, K would be
// gone from master 0 with C's leftover from master 2 a moment later, and
// C granted K on them while A's grant runs for 18s more.
func TestAcquireFailedShorterReentryOnRedisKeepsTheEarlierGrant(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	cfg := Config{MaxTTL: 30 * time.Second, NodeTimeout: 500 * time.Millisecond}
	plain := New(cfg, procs[0].node(t), procs[1].node(t), procs[2].node(t))
	faulty := New(cfg, lostAcquire{Node: procs[0].node(t)}, downNode{Node: procs[1].node(t)}, procs[2].node(t))

	cTok := "cccccccc-c-leftover"
	if err := procs[2].Client(t).Set(ctx, "K", cTok, 1500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	a := Lock{Keys: []string{"K"}, Token: "aaaaaaaa-a-1", PrefixLen: 8}
	lease, err := plain.Acquire(ctx, a, 20*time.Second)
	if err != nil {
		t.Fatalf("A's acquire: %v", err)
	}
	a.Token = "aaaaaaaa-a-2"
	if _, err := faulty.Acquire(ctx, a, time.Second); err == nil {
		t.Fatal("A's re-entry with master 0's reply lost, 1 down and 2 C's: granted; want no quorum")
	}
	if pttl := procs[0].Client(t).PTTL(ctx, "K").Val(); pttl < 15*time.Second {
		t.Errorf("master 0's K has %v left after A's failed 1s re-entry; want the earlier grant's 20s kept", pttl)
	}
	time.Sleep(1600 * time.Millisecond) // C's leftover, and a 1s TTL, gone
	c := Lock{Keys: []string{"K"}, Token: "cccccccc-c-2"}
	if _, err := plain.Acquire(ctx, c, 20*time.Second); err == nil && lease.Valid(time.Now()) {
		for i, p := range procs {
			t.Logf("master %d: K = %q", i, p.Client(t).Get(ctx, "K").Val())
		}
		t.Errorf("C was granted K while A's earlier grant is valid for %v more", time.Until(lease.Expires).Round(time.Second))
	}
}
