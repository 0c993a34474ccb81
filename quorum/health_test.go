package quorum

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ratelog"
)

// put moves node i to state, as the monitor would.
func (e *Engine) put(i int, state NodeState, reason string) {
	h := e.health[i]
	h.mu.Lock()
	defer h.mu.Unlock()
	var until time.Time
	if state == StateQuarantined {
		until = time.Now().Add(time.Minute)
	}
	h.setLocked(state, until, reason)
}

func TestQuarantinedGrantsDoNotCount(t *testing.T) {
	tests := []struct {
		name    string
		nodes   int
		held    []int // nodes where another token holds the key
		skip    []int // nodes in state, whose grants do not count
		state   NodeState
		want    error
		outcome Outcome
	}{
		{"3 of 5 granted, one quarantined: unavailable", 5, []int{3, 4}, []int{0}, StateQuarantined, ErrUnavailable,
			Outcome{Total: 5, Granted: 2, Denied: 2, Quarantined: 1}},
		{"3 of 5 granted, one unverified: unavailable", 5, []int{3, 4}, []int{2}, StateUnverified, ErrUnavailable,
			Outcome{Total: 5, Granted: 2, Denied: 2, Quarantined: 1}},
		{"3 of 5 granted, one refused: unavailable", 5, []int{3, 4}, []int{1}, StateRefused, ErrUnavailable,
			Outcome{Total: 5, Granted: 2, Denied: 2, Quarantined: 1}},
		{"denial from a quarantined node still denies", 3, []int{0, 1}, []int{0}, StateQuarantined, ErrDenied,
			Outcome{Total: 3, Granted: 1, Denied: 2}},
		{"4 of 5 granted, one quarantined: granted", 5, []int{4}, []int{0}, StateQuarantined, nil,
			Outcome{Total: 5, Granted: 3, Denied: 1, Quarantined: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := make([]*fakeNode, tt.nodes)
				for i := range fs {
					fs[i] = &fakeNode{addr: string(rune('a' + i))}
				}
				for _, i := range tt.held {
					fs[i].with("k", "other", time.Minute)
				}
				e := New(Config{}, asNodes(fs)...)
				for _, i := range tt.skip {
					e.put(i, tt.state, "test")
				}
				l := Lock{Keys: []string{"k"}, Token: "t"}
				lease, err := e.Acquire(t.Context(), l, time.Second)
				checkSentinel(t, "Acquire", err, tt.want)
				if err != nil {
					if got := outcome(t, "Acquire", err).Outcome; got != tt.outcome {
						t.Errorf("Acquire outcome = %+v; want %+v", got, tt.outcome)
					}
					// Step 5 undid the write on the quarantined node too.
					if got := holders(fs, "k", "t"); len(got) != 0 {
						t.Errorf("after a failed Acquire, t holds k on %v; want nowhere", got)
					}
					return
				}
				if lease.Granted != tt.outcome.Granted {
					t.Errorf("Acquire granted %d; want %d", lease.Granted, tt.outcome.Granted)
				}
				// A quarantined node still gets the write.
				for _, i := range tt.skip {
					if tok, _ := fs[i].token("k"); tok != "t" {
						t.Errorf("quarantined node %d holds %q; want t", i, tok)
					}
				}
			})
		})
	}
}

func TestQuarantinedExtendDoesNotCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		fs[0].with("k", "t", time.Second)
		fs[1].with("k", "t", time.Second)
		e := New(Config{}, asNodes(fs)...)
		e.put(1, StateQuarantined, "restarted")
		l := Lock{Keys: []string{"k"}, Token: "t"}
		_, err := e.Extend(t.Context(), l, 5*time.Second)
		checkSentinel(t, "Extend", err, ErrUnavailable)
		if got := outcome(t, "Extend", err).Outcome; got != (Outcome{Total: 3, Granted: 1, Denied: 1, Quarantined: 1}) {
			t.Errorf("Extend outcome = %+v", got)
		}
		// Extends still reach a quarantined node.
		if got := fs[1].ttl("k"); got != 5*time.Second {
			t.Errorf("quarantined node's TTL = %v; want 5s", got)
		}
	})
}

func TestInspectIgnoresQuarantinedHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		fs[0].with("k", "t", time.Second)
		fs[1].with("k", "t", time.Second)
		e := New(Config{}, asNodes(fs)...)
		e.put(1, StateQuarantined, "restarted")
		_, err := e.Inspect(t.Context(), "k")
		checkSentinel(t, "Inspect", err, ErrUnavailable)
	})
}

func TestDownNodeIsNotCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c", silent: true}}
		e := New(Config{NodeTimeout: 50 * time.Millisecond}, asNodes(fs)...)
		e.monitored.Store(true)
		e.put(2, StateDown, "unreachable")
		l := Lock{Keys: []string{"k"}, Token: "t"}
		start := time.Now()
		lease, err := e.Acquire(t.Context(), l, time.Second)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Acquire with a down node took %v; want 0", took)
		}
		if !errors.Is(lease.Failures, ErrNodeDown) {
			t.Errorf("lease.Failures = %v; want ErrNodeDown", lease.Failures)
		}
		if ops := fs[2].ops(); len(ops) != 0 {
			t.Errorf("down node got calls %v; want none", ops)
		}
		// Two down nodes of three: unavailable, at once.
		e.put(1, StateDown, "unreachable")
		_, err = e.Acquire(t.Context(), Lock{Keys: []string{"k2"}, Token: "t"}, time.Second)
		checkSentinel(t, "Acquire", err, ErrUnavailable)
		if got := outcome(t, "Acquire", err).Total; got != 3 {
			t.Errorf("Total = %d; want 3: N never changes", got)
		}
	})
}

func TestBreakerOpens(t *testing.T) {
	tests := []struct {
		name  string
		node  *fakeNode
		calls int // acquires before the node is down
	}{
		{"connection failure: at once", &fakeNode{addr: "c", err: errors.New("connection refused")}, 1},
		{"timeouts: after three", &fakeNode{addr: "c", silent: true}, stallLimit},
		{"error reply: never", &fakeNode{addr: "c", err: replyErr("ERR boom")}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := New(Config{NodeTimeout: 50 * time.Millisecond}, &fakeNode{addr: "a"}, &fakeNode{addr: "b"}, tt.node)
				e.monitored.Store(true)
				for n := 1; n <= 5; n++ {
					e.Acquire(t.Context(), Lock{Keys: []string{fmt.Sprint("k", n)}, Token: "t"}, time.Second)
					down := e.health[2].down.Load()
					if want := tt.calls > 0 && n >= tt.calls; down != want {
						t.Fatalf("after %d acquires, down = %v; want %v", n, down, want)
					}
				}
				if st := e.Status()[2]; tt.calls > 0 && (st.State != StateDown || st.LastError == "") {
					t.Errorf("Status()[2] = %+v; want down with its last error", st)
				}
			})
		})
	}
}

// A probe that times out in the same stall as requests is that stall,
// counted once: one hiccup of the proxy (a pause, a starved CPU) does not
// count twice towards the breaker, once for the requests and once for
// the monitor.
func TestBreakerCountsAProbeInAStallOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Config{NodeTimeout: 50 * time.Millisecond, ProbeInterval: 50 * time.Millisecond},
			&fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c", silent: true})
		e.monitored.Store(true)
		e.health[2].stalls.Store(stallLimit - 2) // one stall before
		var wg sync.WaitGroup
		for n := range 8 {
			wg.Go(func() { e.Acquire(t.Context(), Lock{Keys: []string{fmt.Sprint("k", n)}, Token: "t"}, time.Second) })
		}
		wg.Go(func() { e.check(t.Context(), 2) })
		wg.Wait()
		if e.health[2].down.Load() || e.health[2].stalls.Load() != stallLimit-1 {
			t.Fatalf("down = %v, stalls = %d after one stall seen by requests and a probe; want up, %d",
				e.health[2].down.Load(), e.health[2].stalls.Load(), stallLimit-1)
		}
		// The next probe, sent after that stall, is the next stall.
		e.check(t.Context(), 2)
		if !e.health[2].down.Load() {
			t.Errorf("a probe timing out after the stall did not count; want the node down at %d stalls", stallLimit)
		}
	})
}

// A node that answers calls with an error that says it cannot serve them
// (OOM, NOPERM, ...) is logged at once, then once per troubleLogEvery with
// the count of the ones between; an error about the call itself
// (WRONGTYPE) is not.
func TestTroubleRepliesAreLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs ratelog.Lines
		oom := &fakeNode{addr: "c", err: replyErr("OOM command not allowed when used memory > 'maxmemory'.")}
		wrong := &fakeNode{addr: "d", err: replyErr("WRONGTYPE Operation against a key holding the wrong kind of value")}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))},
			&fakeNode{addr: "a"}, &fakeNode{addr: "b"}, oom, wrong, &fakeNode{addr: "e"})
		e.monitored.Store(true)
		acquire := func(n int) {
			for i := range n {
				e.Acquire(t.Context(), Lock{Keys: []string{fmt.Sprint("k", i)}, Token: "t"}, time.Second)
			}
		}
		acquire(5)
		// Past the interval's line (its timer fires at troubleLogEvery;
		// a call at that same instant races it).
		time.Sleep(troubleLogEvery + time.Second)
		acquire(1)
		e.Close() // writes the count still pending
		lines := logs.Lines()
		n, err := ratelog.Count(lines)
		if err != nil || n != 6 || len(lines) != 3 || !strings.Contains(lines[0], "node=c") ||
			!strings.Contains(lines[0], "OOM command not allowed") || strings.Contains(lines[0], "suppressed") {
			t.Errorf("logs:\n%s\nwant node c's OOM at once, then two lines counting the other 5 (%d, %v)",
				strings.Join(lines, "\n"), n, err)
		}
		if strings.Contains(strings.Join(lines, "\n"), "node=d") || e.health[2].down.Load() {
			t.Errorf("WRONGTYPE logged, or the OOM node marked down:\n%s", strings.Join(lines, "\n"))
		}
	})
}

// Timeouts in a row are one after another: many calls that time out
// together, in one stall, count once.
func TestBreakerCountsAStallOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(Config{NodeTimeout: 50 * time.Millisecond}, &fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c", silent: true})
		e.monitored.Store(true)
		var wg sync.WaitGroup
		for n := range 32 {
			wg.Go(func() { e.Acquire(t.Context(), Lock{Keys: []string{fmt.Sprint("k", n)}, Token: "t"}, time.Second) })
		}
		wg.Wait()
		if e.health[2].down.Load() {
			t.Fatalf("32 acquires timing out together marked the node down; want one stall counted")
		}
		for n := 2; n <= stallLimit; n++ {
			e.Acquire(t.Context(), Lock{Keys: []string{fmt.Sprint("s", n)}, Token: "t"}, time.Second)
			if down := e.health[2].down.Load(); down != (n == stallLimit) {
				t.Fatalf("after stall %d, down = %v; want %v", n, down, n == stallLimit)
			}
		}
	})
}
