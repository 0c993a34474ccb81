package quorum

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// extendCall is one of the three extend operations.
type extendCall struct {
	name string
	fn   func(e *Engine, ctx context.Context, l Lock, ttl time.Duration) (Lease, error)
}

var (
	callExtend   = extendCall{"Extend", (*Engine).Extend}
	callExtendBy = extendCall{"ExtendBy", func(e *Engine, ctx context.Context, l Lock, ttl time.Duration) (Lease, error) {
		return e.ExtendBy(ctx, l, ttl, 0)
	}}
	callExtendOrAcquire = extendCall{"ExtendOrAcquire", (*Engine).ExtendOrAcquire}
)

func TestExtendGrantsWithValidity(t *testing.T) {
	tests := []struct {
		name         string
		call         extendCall
		nodes        func() []*fakeNode
		wantValidity time.Duration
		wantGranted  int
		wantTTLs     map[string]time.Duration // per node, of k, once the call returns
	}{
		{"set: held on all", callExtend, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a", delay: 10 * ms}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "b", delay: 10 * ms}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c", delay: 10 * ms}).with("k", "mine", 100*ms),
			}
		}, 978 * ms, 3, map[string]time.Duration{"a": time.Second, "b": time.Second, "c": time.Second}},
		{"set: another token on one", callExtend, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "other", 100*ms),
				(&fakeNode{addr: "b"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", -1),
			}
		}, 988 * ms, 2, map[string]time.Duration{"a": 100 * ms, "b": time.Second, "c": time.Second}},
		{"set: one silent costs NodeTimeout", callExtend, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "b"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c", silent: true}).with("k", "mine", 100*ms),
			}
		}, 938 * ms, 2, map[string]time.Duration{"a": 950 * ms, "b": 950 * ms, "c": 50 * ms}},
		// Node TTLs 1.1s, 1.2s, 1.3s: a quorum of two has 1.2s, less
		// 12ms drift and 2ms.
		{"add: validity from the quorum-th largest TTL", callExtendBy, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "b"}).with("k", "mine", 300*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", 200*ms),
			}
		}, 1186 * ms, 3, map[string]time.Duration{"a": 1100 * ms, "b": 1300 * ms, "c": 1200 * ms}},
		// Third largest of 1.1s-1.5s is 1.3s: 1300 - 13 - 2.
		{"add: five nodes", callExtendBy, func() []*fakeNode {
			fs := make([]*fakeNode, 5)
			for i := range fs {
				fs[i] = (&fakeNode{addr: string(rune('a' + i))}).with("k", "mine", time.Duration(i+1)*100*ms)
			}
			return fs
		}, 1285 * ms, 5, map[string]time.Duration{"a": 1100 * ms, "e": 1500 * ms}},
		{"add: a key without expiry is denied there", callExtendBy, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", -1),
				(&fakeNode{addr: "b"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", 100*ms),
			}
		}, 1087 * ms, 2, map[string]time.Duration{"a": -ms, "b": 1100 * ms, "c": 1100 * ms}},
		{"add: elapsed time is charged", callExtendBy, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a", delay: 20 * ms}).with("k", "mine", 500*ms),
				(&fakeNode{addr: "b", delay: 20 * ms}).with("k", "mine", 500*ms),
				(&fakeNode{addr: "c", delay: 20 * ms}).with("k", "mine", 500*ms),
			}
		}, 1480*ms - 14800*time.Microsecond - 2*ms - 20*ms, 3, map[string]time.Duration{"a": 1480 * ms}},
		{"acquire: missing keys are set", callExtendOrAcquire, func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "mine", 100*ms), {addr: "b"}, {addr: "c"}}
		}, 988 * ms, 3, map[string]time.Duration{"a": time.Second, "b": time.Second, "c": time.Second}},
		{"acquire: another token is left alone", callExtendOrAcquire, func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "other", 100*ms), {addr: "b"}, {addr: "c"}}
		}, 988 * ms, 2, map[string]time.Duration{"a": 100 * ms, "b": time.Second, "c": time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := tt.nodes()
				e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
				start := time.Now()
				lease, err := tt.call.fn(e, t.Context(), mine, time.Second)
				call := fmt.Sprintf("%s(1s)", tt.call.name)
				checkSentinel(t, call, err, nil)
				if lease.Validity != tt.wantValidity || lease.Granted != tt.wantGranted {
					t.Errorf("%s = %+v; want Validity %v, Granted %d", call, lease, tt.wantValidity, tt.wantGranted)
				}
				var wantFailures []error
				for _, f := range fs {
					if f.silent {
						wantFailures = append(wantFailures, context.DeadlineExceeded)
					}
				}
				checkFailures(t, call+": Lease.Failures", lease.Failures, wantFailures)
				// Expires is the decision time plus the validity.
				if want := start.Add(time.Since(start) + lease.Validity); !lease.Expires.Equal(want) {
					t.Errorf("%s.Expires = %v; want %v", call, lease.Expires, want)
				}
				for _, f := range fs {
					want, ok := tt.wantTTLs[f.addr]
					if got := f.ttl("k"); ok && got != want {
						t.Errorf("node %s: TTL = %v; want %v", f.addr, got, want)
					}
				}
			})
		})
	}
}

func TestExtendDenied(t *testing.T) {
	tests := []struct {
		name        string
		call        extendCall
		ttl         time.Duration
		nodes       func() []*fakeNode
		wantErr     error
		wantOutcome Outcome
		wantExpired bool
	}{
		{"held by a minority only", callExtend, time.Second, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "b"}).with("k", "other", 100*ms),
				{addr: "c"},
			}
		}, ErrDenied, Outcome{Total: 3, Granted: 1, Denied: 2}, false},
		{"held nowhere", callExtendBy, time.Second, func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		}, ErrDenied, Outcome{Total: 3, Denied: 3}, false},
		{"taken elsewhere", callExtendOrAcquire, time.Second, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "other", 100*ms),
				(&fakeNode{addr: "b"}).with("k", "other", 100*ms),
				{addr: "c"},
			}
		}, ErrDenied, Outcome{Total: 3, Granted: 1, Denied: 2}, false},
		{"failures decide", callExtend, time.Second, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "b", err: errBoom}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c", silent: true}).with("k", "mine", 100*ms),
			}
		}, ErrUnavailable, Outcome{Total: 3, Granted: 1, Failed: 2}, false},
		// The nodes answer after the new TTL: nothing is left to rely on.
		{"validity runs out", callExtend, 20 * ms, func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a", delay: 30 * ms}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b", delay: 30 * ms}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c", delay: 30 * ms}).with("k", "mine", time.Second),
			}
		}, ErrDenied, Outcome{Total: 3, Granted: 3}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := tt.nodes()
				others := map[string]time.Duration{}
				for _, f := range fs {
					if tok, ok := f.token("k"); ok && tok != "mine" {
						others[f.addr] = f.ttl("k")
					}
				}
				e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
				call := fmt.Sprintf("%s(%v)", tt.call.name, tt.ttl)
				lease, err := tt.call.fn(e, t.Context(), mine, tt.ttl)
				checkSentinel(t, call, err, tt.wantErr)
				if lease != (Lease{}) {
					t.Errorf("%s = %+v; want the zero Lease", call, lease)
				}
				if oe := outcome(t, call, err); oe.Outcome != tt.wantOutcome || oe.Expired != tt.wantExpired {
					t.Errorf("%s outcome = %+v, expired %v; want %+v, expired %v", call, oe.Outcome, oe.Expired, tt.wantOutcome, tt.wantExpired)
				}
				// Another holder's key keeps its TTL and token.
				for _, f := range fs {
					if want, ok := others[f.addr]; ok {
						if tok, _ := f.token("k"); tok == "mine" || f.ttl("k") != want {
							t.Errorf("node %s: %q with TTL %v; want the other holder's untouched, TTL %v", f.addr, tok, f.ttl("k"), want)
						}
					}
				}
				// A failed extend is not undone: no release follows.
				for _, f := range fs {
					if n := len(f.callsTo("release")); n != 0 {
						t.Errorf("node %s got calls %v; want no release", f.addr, f.ops())
					}
				}
			})
		})
	}
}

func TestExtendManyKeysNeedsEveryKeyHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lock := Lock{Keys: []string{"k1", "k2"}, Token: "mine"}
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k1", "mine", 100*ms).with("k2", "other", 100*ms),
			(&fakeNode{addr: "b"}).with("k1", "mine", 100*ms).with("k2", "mine", 200*ms),
			(&fakeNode{addr: "c"}).with("k1", "mine", 100*ms).with("k2", "mine", 200*ms),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		lease, err := e.ExtendBy(t.Context(), lock, time.Second, 0)
		checkSentinel(t, "ExtendBy", err, nil)
		// Each node reports its shortest key, 1.1s: 1100 - 11 - 2.
		if lease.Validity != 1087*ms || lease.Granted != 2 {
			t.Errorf("ExtendBy = %+v; want Validity 1.087s, Granted 2", lease)
		}
		if got := fs[0].ttl("k1"); got != 100*ms {
			t.Errorf("node a: k1 TTL = %v; want 100ms, untouched because k2 is not held", got)
		}
		if got := fs[1].ttl("k2"); got != 1200*ms {
			t.Errorf("node b: k2 TTL = %v; want 1.2s", got)
		}
	})
}

func TestExtendByOverMaxTTLIsRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "mine", 4*time.Second),
			(&fakeNode{addr: "b"}).with("k", "mine", 4*time.Second),
			(&fakeNode{addr: "c"}).with("k", "mine", 4*time.Second),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		l := Lock{Keys: []string{"k"}, Token: "mine"}
		_, err := e.ExtendBy(t.Context(), l, 2*time.Second, 5*time.Second)
		if !errors.Is(err, ErrOverMaxTTL) || !errors.Is(err, ErrDenied) {
			t.Fatalf("ExtendBy(2s) past limit 5s = %v; want ErrOverMaxTTL and ErrDenied", err)
		}
		for _, f := range fs {
			if got := f.ttl("k"); got != 4*time.Second {
				t.Errorf("node %s: TTL after a refused ExtendBy = %v; want 4s (unchanged)", f.addr, got)
			}
		}
		if _, err := e.ExtendBy(t.Context(), l, time.Second, 5*time.Second); err != nil {
			t.Errorf("ExtendBy(1s) up to limit 5s = %v; want granted", err)
		}
	})
}
