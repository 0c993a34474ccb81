package quorum

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFanOutSendsEachNodeItsOwnDeadline: a pipelined release and extend
// go to every node with that node's own deadline field: a node whose
// clock the engine reads an hour behind gets a deadline long past and
// does nothing, the others do the write, also where the script is
// missing (its body sent after NOSCRIPT, with that node's field).
func TestFanOutSendsEachNodeItsOwnDeadline(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	var admins []*redis.Client
	for _, p := range procs {
		nodes = append(nodes, p.node(t))
		admins = append(admins, p.admin(t))
	}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: 500 * time.Millisecond, ProbeInterval: 10 * time.Second}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// No probe puts node 1's clock right again within the test.
	behind := func() {
		h := e.health[1]
		h.mu.Lock()
		h.clock.last.node = h.clock.last.node.Add(-time.Hour)
		h.mu.Unlock()
	}
	l := Lock{Keys: []string{"k"}, Token: "mine"}
	for _, flushed := range []bool{false, true} {
		set := func() {
			for _, a := range admins {
				if err := a.Set(ctx, "k", "mine", 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				if flushed {
					a.ScriptFlush(ctx)
				}
			}
		}
		set()
		behind()
		if _, err := e.Extend(ctx, l, 5*time.Second); err != nil {
			t.Fatalf("flushed %v: Extend: %v", flushed, err)
		}
		for i, a := range admins {
			if got, short := a.PTTL(ctx, "k").Val(), i != 1; (got <= 5*time.Second) != short {
				t.Errorf("flushed %v: after Extend, node %d's PTTL = %v; want extended to 5s: %v", flushed, i, got, short)
			}
		}
		set()
		rel, err := e.Release(ctx, l)
		if err != nil || rel.Keys != 1 {
			t.Fatalf("flushed %v: Release = %+v, %v; want one key released", flushed, rel, err)
		}
		for i, a := range admins {
			if got, gone := a.Exists(ctx, "k").Val() == 0, i != 1; got != gone {
				t.Errorf("flushed %v: after Release, node %d's key gone = %v; want %v", flushed, i, got, gone)
			}
		}
	}
}

// TestWriteUntilIsTheDeadlineOnTheNodesClockLessItsError: a release's
// deadline field on each node is the fan-out's deadline on that node's
// clock, read by the last probe, less half the probe's round trip, the
// drift factor's share of the time since and a millisecond; 0 before a
// probe.
func TestWriteUntilIsTheDeadlineOnTheNodesClockLessItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeNode{addr: "a", offset: 5 * time.Second, rtt: 4 * time.Millisecond}
		b := &fakeNode{addr: "b", offset: -time.Hour}
		c := &fakeNode{addr: "c"}
		e := New(Config{MaxTTL: time.Minute, NodeTimeout: 50 * time.Millisecond, ProbeInterval: time.Second, DriftFactor: 0.01}, a, b, c)
		l := Lock{Keys: []string{"k"}, Token: "t"}
		if _, err := e.Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		if got := lastUntil(a); got != 0 {
			t.Errorf("before any probe: until = %d; want 0 (no limit)", got)
		}
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		time.Sleep(300 * time.Millisecond) // a probe's reading ages
		sent := time.Now()
		if _, err := e.Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		d := sent.Add(50 * time.Millisecond)
		for _, n := range []*fakeNode{a, b, c} {
			h := e.health[map[*fakeNode]int{a: 0, b: 1, c: 2}[n]]
			h.mu.Lock()
			at := h.clock.last
			h.mu.Unlock()
			since := d.Sub(at.local)
			off := n.rtt/2 + time.Duration(0.01*float64(since)) + time.Millisecond
			want := n.nodeTime(d).Add(-off).UnixMilli()
			if got := lastUntil(n); got != want {
				t.Errorf("%s: until = %d; want %d (%v on its clock, less %v)", n.addr, got, want, d, off)
			}
		}
	})
}

// lastUntil is the deadline field of f's last release.
func lastUntil(f *fakeNode) int64 {
	calls := f.callsTo("release")
	if len(calls) == 0 {
		return -1
	}
	return calls[len(calls)-1].until
}
