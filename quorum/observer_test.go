package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// recorder is an Observer that keeps every event as a line of text.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

func (r *recorder) OperationDone(op Op, res Result, took time.Duration) {
	r.add("op %v %v %v", op, res, took)
}
func (r *recorder) LeaseGranted(op Op, validity, ttl time.Duration) {
	r.add("lease %v %v/%v", op, validity, ttl)
}
func (r *recorder) NodeDone(node int, addr string, took time.Duration, err error) {
	kind := "ok"
	if err != nil {
		kind = ErrorKind(err)
	}
	r.add("node %d %s %v %s", node, addr, took, kind)
}
func (r *recorder) NodeStateChanged(node int, addr string, from, to NodeState) {
	r.add("state %d %s %v->%v", node, addr, from, to)
}
func (r *recorder) NodeQuarantined(node int, addr string, reason QuarantineReason) {
	r.add("quarantine %d %s %s", node, addr, reason)
}

// take returns the events so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	slices.Sort(ev)
	return ev
}

func TestObserverSeesOperationsAndNodes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		fs := []*fakeNode{
			{addr: "a", delay: 10 * time.Millisecond},
			{addr: "b", delay: 30 * time.Millisecond},
			{addr: "c", silent: true},
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, Observer: rec}, asNodes(fs)...)
		l := Lock{Keys: []string{"k"}, Token: "t"}
		if _, err := e.Acquire(t.Context(), l, time.Second); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		want := []string{
			"lease acquire 938ms/1s", // 1s - 50ms (c's timeout) - 12ms drift
			"node 0 a 10ms ok",
			"node 1 b 30ms ok",
			"node 2 c 50ms timeout",
			"op acquire granted 50ms",
		}
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("events of a granted acquire = %q; want %q", got, want)
		}

		// Taken: a second token is denied; no lease.
		if _, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "u"}, time.Second); !errors.Is(err, ErrDenied) {
			t.Fatalf("second Acquire = %v; want ErrDenied", err)
		}
		if got := rec.take(); !slices.Contains(got, "op acquire denied 50ms") || slices.ContainsFunc(got, func(s string) bool { return s[:5] == "lease" }) {
			t.Errorf("events of a denied acquire = %q; want op acquire denied and no lease", got)
		}

		if _, err := e.Inspect(t.Context(), "k"); err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if _, err := e.Inspect(t.Context(), "nokey"); err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		if _, err := e.Extend(t.Context(), l, 2*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if _, err := e.Release(t.Context(), l); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if _, err := e.Release(t.Context(), l); err != nil {
			t.Fatalf("Release again: %v", err)
		}
		var ops []string
		for _, ev := range rec.take() {
			if ev[:2] == "op" || ev[:5] == "lease" {
				ops = append(ops, ev)
			}
		}
		want = []string{
			"lease extend 1.928s/2s", // 2s - 50ms - 22ms drift
			"op extend granted 50ms",
			"op read denied 50ms", // nokey: not held
			"op read granted 50ms",
			"op release denied 50ms", // the second release: nothing was ours
			"op release granted 50ms",
		}
		if !slices.Equal(ops, want) {
			t.Errorf("operation events = %q; want %q", ops, want)
		}

		// Two of three silent: no quorum.
		fs[1].silent = true
		if _, err := e.Acquire(t.Context(), l, time.Second); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Acquire with 2 of 3 silent = %v; want ErrUnavailable", err)
		}
		if got := rec.take(); !slices.Contains(got, "op acquire no_quorum 50ms") {
			t.Errorf("events with 2 of 3 silent = %q; want op acquire no_quorum", got)
		}
	})
}

func TestObserverSeesStateChangesAndQuarantines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		fs := threeFakes()
		cfg := monitorConfig(t)
		cfg.Observer = rec
		e := started(t, cfg, fs)
		var states []string
		for _, ev := range rec.take() {
			if ev[:5] == "state" {
				states = append(states, ev)
			}
		}
		// Sorted: each node went up->unverified, then unverified->up.
		want := []string{"state 0 a unverified->up", "state 0 a up->unverified", "state 1 b unverified->up",
			"state 1 b up->unverified", "state 2 c unverified->up", "state 2 c up->unverified"}
		if !slices.Equal(states, want) {
			t.Errorf("state events at Start = %q; want %q", states, want)
		}

		fs[0].restart("run-a2")
		time.Sleep(150 * time.Millisecond) // one probe
		wantState(t, e, 0, StateQuarantined, "restarted")
		got := rec.take()
		// It stops counting when its new run_id is seen, before the
		// records are read.
		if !slices.Contains(got, "quarantine 0 a restart") || !slices.Contains(got, "state 0 a up->unverified") ||
			!slices.Contains(got, "state 0 a unverified->quarantined") {
			t.Errorf("events after a restart = %q; want a restart quarantine of node 0", got)
		}

		// A failing node: the breaker opens, and the request path
		// reports the skipped node as down.
		fs[1].fail(errors.New("connection refused"))
		e.Acquire(t.Context(), Lock{Keys: []string{"x"}, Token: "t"}, time.Second)
		e.Acquire(t.Context(), Lock{Keys: []string{"y"}, Token: "t"}, time.Second)
		got = rec.take()
		if !slices.Contains(got, "state 1 b up->down") || !slices.Contains(got, "node 1 b 0s down") ||
			!slices.Contains(got, "node 1 b 0s connection") {
			t.Errorf("events of a failing node = %q; want its failure, up->down, then down skips", got)
		}
	})
}

// ExtendBy adds to what each node has left: the lease's TTL is the one a
// quorum now has, not the increment, so validity never exceeds it (the
// validity/TTL metric stays at or under 1).
func TestObserverSeesExtendByAtTheTTLItSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "mine", 300*ms),
			(&fakeNode{addr: "b"}).with("k", "mine", 300*ms),
			(&fakeNode{addr: "c"}).with("k", "mine", 300*ms),
		}
		e := New(Config{NodeTimeout: 50 * ms, Observer: rec}, asNodes(fs)...)
		lease, err := e.ExtendBy(t.Context(), Lock{Keys: []string{"k"}, Token: "mine"}, time.Second, 0)
		if err != nil {
			t.Fatalf("ExtendBy: %v", err)
		}
		// Each node has 1.3s now: 1300 - 13 - 2.
		if lease.Validity != 1285*ms {
			t.Errorf("ExtendBy validity = %v; want 1.285s", lease.Validity)
		}
		var leases []string
		for _, ev := range rec.take() {
			if ev[:5] == "lease" {
				leases = append(leases, ev)
			}
		}
		if want := []string{"lease extend 1.285s/1.3s"}; !slices.Equal(leases, want) {
			t.Errorf("lease events of ExtendBy = %q; want %q", leases, want)
		}
	})
}

// A wrapped script is reported as the operation it did, with a lease for
// a hold only: a key taken beside a release is in the result's lease,
// not reported as one.
func TestObserverSeesEffectHoldsAsLeases(t *testing.T) {
	tests := []struct {
		name      string
		keys      []KeyEffect // every node's report
		want      []string
		wantLease time.Duration
	}{
		// 1s - 10ms - 12ms.
		{"a take", []KeyEffect{took(time.Second)}, []string{"lease acquire 978ms/1s", "op acquire granted 10ms"}, 978 * ms},
		{"an extend", []KeyEffect{extended(2 * time.Second)}, []string{"lease extend 1.968s/2s", "op extend granted 10ms"}, 1968 * ms},
		{"a release", []KeyEffect{released()}, []string{"op release granted 10ms"}, 0},
		{"a release handing off to a take", []KeyEffect{released(), took(time.Second)}, []string{"op release granted 10ms"}, 978 * ms},
		{"a read", []KeyEffect{readOwn()}, []string{"op read granted 10ms"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				ne := NodeEffect{Reply: okReply, Keys: tt.keys}
				nodes := []*fakeNode{
					{addr: "a", effect: &ne, delay: 10 * ms},
					{addr: "b", effect: &ne, delay: 10 * ms},
					{addr: "c", effect: &ne, delay: 10 * ms},
				}
				e := New(Config{NodeTimeout: 50 * ms, MaxTTL: time.Minute, Observer: rec}, asNodes(nodes)...)
				keys := []string{"k", "k2"}[:len(tt.keys)]
				res, err := e.RunEffect(t.Context(), e.Wrap("return 1", nil), keys, []string{"own", "1000"})
				if err != nil || !res.Granted {
					t.Fatalf("RunEffect = %+v, %v; want granted", res, err)
				}
				if res.Lease.Validity != tt.wantLease || tt.wantLease > 0 && !res.Lease.Expires.Equal(time.Now().Add(tt.wantLease)) {
					t.Errorf("RunEffect lease = %+v; want validity %v, ending then from now", res.Lease, tt.wantLease)
				}
				var got []string
				for _, ev := range rec.take() {
					if ev[:2] == "op" || ev[:5] == "lease" {
						got = append(got, ev)
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("events = %q; want %q", got, tt.want)
				}
			})
		})
	}
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (e replyErr) RedisError()   {}

func TestErrorKind(t *testing.T) {
	var _ redis.Error = replyErr("")
	tests := []struct {
		err  error
		want string
	}{
		{ErrNodeDown, "down"},
		{&NodeError{Err: ErrNodeDown}, "down"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
		{replyErr("NOPERM no"), "reply"},
		{errors.New("dial tcp: connection refused"), "connection"},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %q; want %q", tt.err, got, tt.want)
		}
	}
}

func TestResultOf(t *testing.T) {
	tests := []struct {
		err  error
		want Result
	}{
		{nil, ResultGranted},
		{&OutcomeError{}, ResultDenied},
		{&OutcomeError{Unavailable: true}, ResultNoQuorum},
		{fmt.Errorf("%w: x", ErrOverMaxTTL), ResultError},
		{context.DeadlineExceeded, ResultError},
	}
	for _, tt := range tests {
		if got := ResultOf(tt.err); got != tt.want {
			t.Errorf("ResultOf(%v) = %v; want %v", tt.err, got, tt.want)
		}
	}
}
