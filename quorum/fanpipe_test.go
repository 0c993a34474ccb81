package quorum

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The engine's fan-out over real nodes starts each operation on every
// node's pipeline and waits once: a node that lost the scripts (a
// restart, SCRIPT FLUSH) gets the script's body within the same call,
// and the observer hears every node's part.
func TestPipedFanOutResendsScriptsNodesLack(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
		if b := nodes[i].Batch(); b == nil || b.Node() != nodes[i] {
			t.Fatalf("node %d is not piped: the test would not reach the pipelined fan-out", i)
		}
	}
	rec := &recorder{}
	e := New(Config{NodeTimeout: 10 * time.Second, Observer: rec}, nodes...)
	ctx := t.Context()
	l := Lock{Keys: []string{"a", "b"}, Token: "mine"} // two keys: a script
	flush := func() {
		for _, i := range []int{0, 2} {
			if err := procs[i].Client(t).ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
		}
	}
	flush()
	if lease, err := e.Acquire(ctx, l, 10*time.Second); err != nil || lease.Granted != 3 {
		t.Fatalf("Acquire after SCRIPT FLUSH on 2 of 3 nodes = %+v, %v; want 3 granted", lease, err)
	}
	flush()
	if lease, err := e.Extend(ctx, l, 20*time.Second); err != nil || lease.Granted != 3 {
		t.Errorf("Extend after SCRIPT FLUSH on 2 of 3 nodes = %+v, %v; want 3 granted", lease, err)
	}
	flush()
	if rel, err := e.Release(ctx, l); err != nil || rel != (Released{Keys: 2}) {
		t.Errorf("Release after SCRIPT FLUSH on 2 of 3 nodes = %+v, %v; want {Keys:2}", rel, err)
	}
	nodeEvents := 0
	for _, ev := range rec.take() {
		if !strings.HasPrefix(ev, "node ") {
			continue
		}
		nodeEvents++
		if !strings.HasSuffix(ev, " ok") {
			t.Errorf("observer heard %q; want every node ok", ev)
		}
	}
	if nodeEvents != 9 {
		t.Errorf("observer heard %d node events; want 9 (3 operations on 3 nodes)", nodeEvents)
	}
}

// A node that lost the scripts gets the body as soon as its NOSCRIPT
// comes, not once every node answered: with another node silent (frozen,
// not marked down) the call still has a quorum. Before, the body went
// out only after the wait for every node, which the silent one ended at
// the deadline: every script operation failed until the breaker marked
// it down.
func TestPipedFanOutResendsScriptsWithANodeSilent(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{NodeTimeout: 500 * time.Millisecond}, nodes...)
	ctx := t.Context()
	l := Lock{Keys: []string{"a", "b"}, Token: "mine"} // two keys: a script
	if _, err := e.Acquire(ctx, Lock{Keys: []string{"warm"}, Token: "t"}, time.Minute); err != nil {
		t.Fatalf("Acquire: %v", err) // every node connected
	}
	procs[1].Freeze(t)
	flush := func() {
		for _, i := range []int{0, 2} {
			if err := procs[i].Client(t).ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
		}
	}
	flush()
	if lease, err := e.Acquire(ctx, l, 10*time.Second); err != nil || lease.Granted != 2 {
		t.Fatalf("Acquire after SCRIPT FLUSH on the 2 nodes that answer = %+v, %v; want 2 granted", lease, err)
	}
	flush()
	if lease, err := e.Extend(ctx, l, 20*time.Second); err != nil || lease.Granted != 2 {
		t.Errorf("Extend after SCRIPT FLUSH on the 2 nodes that answer = %+v, %v; want 2 granted", lease, err)
	}
	flush()
	if rel, err := e.Release(ctx, l); err != nil || rel != (Released{Keys: 2}) {
		t.Errorf("Release after SCRIPT FLUSH on the 2 nodes that answer = %+v, %v; want {Keys:2}", rel, err)
	}
	procs[1].Thaw()
	for _, i := range []int{0, 2} {
		if n, err := procs[i].Client(t).Exists(ctx, "a", "b").Result(); err != nil || n != 0 {
			t.Errorf("node %d: EXISTS a b = %d, %v after the release; want 0", i, n, err)
		}
	}
}

// The pipelined fan-out waits no longer than the caller: a caller's
// deadline before NodeTimeout ends it, and so does a cancel.
func TestPipedFanOutEndsWithTheCaller(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{NodeTimeout: 10 * time.Second}, nodes...)
	l := Lock{Keys: []string{"k"}, Token: "mine"}
	if _, err := e.Acquire(t.Context(), l, time.Second); err != nil { // dials
		t.Fatalf("Acquire: %v", err)
	}
	for _, p := range procs {
		p.Freeze(t)
	}
	const wait = 200 * time.Millisecond
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"deadline", func() (context.Context, context.CancelFunc) { return context.WithTimeout(t.Context(), wait) }},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(wait, cancel)
			return ctx, cancel
		}},
	}
	// A context that ends only at its deadline, and says so (the proxy's
	// command context), is never asked for Done: the fan's timer ends it.
	tests = append(tests, struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{"ends at deadline", func() (context.Context, context.CancelFunc) {
		return atDeadline{Context: t.Context(), t: t, dl: time.Now().Add(wait)}, func() {}
	}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now() // before the context: its wait starts there
			ctx, cancel := tt.ctx()
			defer cancel()
			_, err := e.Release(ctx, l)
			// A bound against waiting out NodeTimeout, not a speed test.
			if took := time.Since(start); err == nil || took < wait || took > 5*time.Second {
				t.Errorf("Release on frozen nodes, caller ends after %v = %v after %v; want an error after about %v", wait, err, took, wait)
			}
		})
	}
}

// atDeadline is a context that ends only at its deadline and says so
// (EndsAtDeadline); asking it for Done fails the test.
type atDeadline struct {
	context.Context
	t  *testing.T
	dl time.Time
}

func (c atDeadline) Deadline() (time.Time, bool) { return c.dl, true }
func (atDeadline) EndsAtDeadline() bool          { return true }

func (c atDeadline) Done() <-chan struct{} {
	c.t.Error("a fan-out asked for Done of a context that ends at its deadline")
	return nil
}

func (c atDeadline) Err() error {
	if !time.Now().Before(c.dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// A frozen node (no breaker to mark it down) is written to from the
// caller's goroutine, before or after the other nodes: its writes must
// never hold theirs back. What bounds them is that each op's overdue
// reply drops the node's connection, so what waits in its buffers is at
// most one NodeTimeout's worth; here 1MB per call, more than a loopback
// socket takes at first.
func TestPipedFanOutFullNodeDoesNotHoldBackTheOthers(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{NodeTimeout: 300 * time.Millisecond}, nodes...)
	if _, err := e.Acquire(t.Context(), Lock{Keys: []string{"warm"}, Token: "t"}, time.Minute); err != nil {
		t.Fatalf("Acquire: %v", err) // every node connected
	}
	procs[0].Freeze(t)
	big := strings.Repeat("k", 1<<20)
	for i := range 8 {
		l := Lock{Keys: []string{fmt.Sprint(i, big)}, Token: "t"}
		lease, err := e.Acquire(t.Context(), l, time.Minute)
		if err != nil || lease.Granted != 2 {
			t.Fatalf("Acquire %d of a 1MB key with node 0 frozen = %+v, %v; want 2 granted", i, lease, err)
		}
	}
}
