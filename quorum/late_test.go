package quorum

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestFanOutSendsEachNodeItsOwnDeadline: a pipelined release and extend,
// and a wrapped run, go to every node with that node's own deadline field: a node whose
// clock the engine reads an hour behind gets a deadline long past and
// does nothing, the others do the write, also where the script is
// missing (its body sent after NOSCRIPT, with that node's field).
func TestFanOutSendsEachNodeItsOwnDeadline(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	var admins []*redis.Client
	for _, p := range procs {
		nodes = append(nodes, p.node(t))
		admins = append(admins, p.Client(t))
	}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: 500 * time.Millisecond, ProbeInterval: 10 * time.Second}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// No probe puts node 1's clock right again within the test.
	shift := func(d time.Duration) {
		h := e.health[1]
		h.mu.Lock()
		h.clock.last.node = h.clock.last.node.Add(d)
		h.clock.best.node = h.clock.best.node.Add(d)
		h.mu.Unlock()
	}
	behind := func() { shift(-time.Hour) }
	// A wrapped run (Redisson's renewExpiration, served by its effect):
	// the pipelined FCALL, patched per node, and a run on each node, as
	// a body's first runs (attack18 A6).
	eff := e.Wrap(redissonRenewBody, nil)
	renew := func(when string, late bool) {
		t.Helper()
		for _, a := range admins {
			if err := a.HSet(ctx, "h", "uuid:1", 1).Err(); err != nil {
				t.Fatal(err)
			}
			a.PExpire(ctx, "h", 30*time.Second)
		}
		if res, err := e.RunEffect(ctx, eff, []string{"h"}, []string{"2000", "uuid:1"}); err != nil || !res.Granted {
			t.Fatalf("%s: RunEffect = %+v, %v; want granted", when, res, err)
		}
		for i, a := range admins {
			if got, short := a.PTTL(ctx, "h").Val(), !late || i != 1; (got <= 2*time.Second) != short {
				t.Errorf("%s: node %d's PTTL = %v; want renewed to 2s: %v", when, i, got, short)
			}
		}
	}
	// The first run loads the library, on a connection of its own: a
	// dial probes its node again (WatchConnects), which would set the
	// clock right.
	renew("a first run", false)
	if got := eff.ready.Load(); got != 0b111 {
		t.Fatalf("every node answered, ready = %b", got)
	}
	behind()
	renew("a pipelined run", true)
	eff.ready.Store(0)
	renew("a run on each node", true)
	shift(time.Hour)
	l := Lock{Keys: []string{"k"}, Token: "mine"}
	for _, tight := range []bool{false, true} {
		// tight: the command ends with the fan-out (command_timeout =
		// node_timeout), so the fan-out ends its hold early rather
		// than send the writes with no limit (attack19 U1).
		ctx := ctx
		if tight {
			c, cancel := context.WithTimeout(ctx, e.cfg.NodeTimeout)
			defer cancel()
			ctx = c
		}
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
				t.Fatalf("tight %v, flushed %v: Extend: %v", tight, flushed, err)
			}
			for i, a := range admins {
				if got, short := a.PTTL(ctx, "k").Val(), i != 1; (got <= 5*time.Second) != short {
					t.Errorf("tight %v, flushed %v: after Extend, node %d's PTTL = %v; want extended to 5s: %v", tight, flushed, i, got, short)
				}
			}
			set()
			rel, err := e.Release(ctx, l)
			if err != nil || rel.Keys != 1 {
				t.Fatalf("tight %v, flushed %v: Release = %+v, %v; want one key released", tight, flushed, rel, err)
			}
			for i, a := range admins {
				if got, gone := a.Exists(ctx, "k").Val() == 0, i != 1; got != gone {
					t.Errorf("tight %v, flushed %v: after Release, node %d's key gone = %v; want %v", tight, flushed, i, got, gone)
				}
			}
		}
	}
}

// TestWriteUntilBoundsTheNodesClockAtTheDeadline: a release's deadline
// field on each node (0 before a probe) is at least what the node's
// clock reads at the fan-out's deadline d (a write that runs in time is
// never refused) and below what it reads at d+hold (one that runs later
// always is); the engine answers a release that a node left unanswered
// at d+hold, one answered by all at once. A probe whose reply came late
// (a wide reading) does not loosen the bound: the best reading is kept
// (attack18 A3).
func TestWriteUntilBoundsTheNodesClockAtTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &fakeNode{addr: "a", offset: 5 * time.Second, rtt: 4 * time.Millisecond}
		b := &fakeNode{addr: "b", offset: -time.Hour}
		c := &fakeNode{addr: "c"}
		nodes := []*fakeNode{a, b, c}
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
		check := func(when string, most time.Duration) {
			t.Helper()
			time.Sleep(300 * time.Millisecond) // the reading ages
			sent := time.Now()
			if _, err := e.Release(t.Context(), l); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(sent); took != 0 {
				t.Errorf("%s: a release every node answered took %v; want no wait", when, took)
			}
			d := sent.Add(50 * time.Millisecond)
			for i, n := range nodes {
				want, hold := e.writeUntil(i, d)
				got := lastUntil(n)
				switch {
				case got != want:
					t.Errorf("%s: %s: until = %d; want %d", when, n.addr, got, want)
				case got < n.nodeTime(d).UnixMilli():
					t.Errorf("%s: %s: until %d is before the node's clock at the deadline, %d", when, n.addr, got, n.nodeTime(d).UnixMilli())
				case got >= n.nodeTime(d.Add(hold)).UnixMilli():
					t.Errorf("%s: %s: until %d is not before the node's clock at the deadline+%v, %d", when, n.addr, got, hold, n.nodeTime(d.Add(hold)).UnixMilli())
				case hold <= 0 || hold > most:
					t.Errorf("%s: %s: hold = %v; want (0, %v]", when, n.addr, hold, most)
				}
			}
		}
		check("after the start's probe", 20*time.Millisecond)
		a.mu.Lock()
		a.rtt = 150 * time.Millisecond // the next probe's reply read late
		a.mu.Unlock()
		time.Sleep(time.Second) // that probe runs
		// The earlier reading is kept: its spread grows by the drift
		// factor's share of its age, not the late reply's 75ms (a hold of
		// over 150ms).
		check("after a probe with a wide reading", 50*time.Millisecond)

		c.silent = true
		time.Sleep(300 * time.Millisecond)
		sent := time.Now()
		_, hold := e.writeUntil(2, sent.Add(50*time.Millisecond))
		if _, err := e.Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
		if took, want := time.Since(sent), 50*time.Millisecond+hold; took != want {
			t.Errorf("a release node c left unanswered took %v; want node_timeout + hold, %v", took, want)
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

// TestDatedWriteFitsItsHoldInTheCommandsTime: where the command ends
// with the fan-out (command_timeout = node_timeout), a release still
// carries its deadline field, and the engine stops waiting for a silent
// node early enough that the hold ends with the command (attack19 U1:
// it went with no limit, and landed late across proxies). A command
// with less time left than the hold does not send that write at all.
func TestDatedWriteFitsItsHoldInTheCommandsTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, a, b, c := startedFakes(t)
		c.silent = true
		time.Sleep(300 * time.Millisecond) // the reading ages
		l := Lock{Keys: []string{"k"}, Token: "t"}
		sent := time.Now()
		_, hold := e.writeUntil(2, sent.Add(50*time.Millisecond))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, err := e.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(sent); took > 50*time.Millisecond || took < 50*time.Millisecond-hold {
			t.Errorf("a release node c left unanswered took %v; want the command's 50ms, its wait cut by the hold %v", took, hold)
		}
		for _, n := range []*fakeNode{a, b, c} {
			if got := lastUntil(n); got <= 0 {
				t.Errorf("%s: until = %d; want a deadline field", n.addr, got)
			}
		}
		before := len(c.callsTo("release"))
		ctx, cancel = context.WithTimeout(t.Context(), hold/2)
		defer cancel()
		sent = time.Now()
		e.Release(ctx, l)
		if took := time.Since(sent); took > hold/2 {
			t.Errorf("a release with %v left took %v", hold/2, took)
		}
		if got := len(c.callsTo("release")); got != before {
			t.Errorf("node c got %d more releases with less time left than its hold; want none", got-before)
		}
	})
}

// TestEffectRunCarriesItsDeadline: a run of a script served by its
// effect goes to each node with its deadline field (Engine.writeUntil at
// the fan-out's end), and the engine answers a run a node left
// unanswered only once that node's clock is past it (attack18 A6).
func TestEffectRunCarriesItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		nodes := []*fakeNode{{addr: "a", offset: 5 * time.Second}, {addr: "b"}, {addr: "c"}}
		for _, n := range nodes {
			n.effect = &NodeEffect{Reply: Value{Kind: ValueInt, Int: 1}, Keys: []KeyEffect{{}}}
		}
		e := New(Config{MaxTTL: time.Minute, NodeTimeout: 50 * time.Millisecond, ProbeInterval: time.Second, DriftFactor: 0.01},
			nodes[0], nodes[1], nodes[2])
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		nodes[2].silent = true
		time.Sleep(300 * time.Millisecond) // the reading ages
		eff := e.Wrap("return 1", nil)
		sent := time.Now()
		d := sent.Add(firstLoadTimeout) // a body's first run waits so long
		if _, err := e.RunEffect(t.Context(), eff, []string{"k"}, nil); err != nil {
			t.Fatal(err)
		}
		_, hold := e.writeUntil(2, d)
		if took := time.Since(sent); took != firstLoadTimeout+hold {
			t.Errorf("a run node c left unanswered took %v; want its wait and hold, %v", took, firstLoadTimeout+hold)
		}
		for i, n := range nodes {
			calls := n.callsTo("effect")
			if want, _ := e.writeUntil(i, d); len(calls) != 1 || want <= 0 || calls[0].until != want {
				t.Errorf("%s: effect calls %+v; want one with until %d", n.addr, calls, want)
			}
		}
	})
}

// startedFakes is an engine over three fake nodes (node_timeout 50ms,
// drift_factor 0.01), started (probed), and closed when the test ends.
func startedFakes(t *testing.T) (e *Engine, a, b, c *fakeNode) {
	t.Helper()
	a, b, c = &fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c"}
	e = New(Config{MaxTTL: time.Minute, NodeTimeout: 50 * time.Millisecond, ProbeInterval: time.Second, DriftFactor: 0.01}, a, b, c)
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, a, b, c
}
