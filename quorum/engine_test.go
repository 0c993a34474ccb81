package quorum

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestNewAppliesDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want Config
	}{
		{"zero config", Config{}, Config{NodeTimeout: 50 * time.Millisecond, DriftFactor: 0.01,
			MinTTL: 100 * time.Millisecond, MaxTTL: 5 * time.Minute, ProbeInterval: 500 * time.Millisecond, ClockJumpLimit: 100 * time.Millisecond}},
		{"explicit values kept", Config{NodeTimeout: 20 * time.Millisecond, DriftFactor: 0.05,
			MaxTTL: time.Second, ProbeInterval: 100 * time.Millisecond, ClockJumpLimit: 10 * time.Millisecond, TrustFsyncAlways: true},
			Config{NodeTimeout: 20 * time.Millisecond, DriftFactor: 0.05, MinTTL: 100 * time.Millisecond,
				MaxTTL: time.Second, ProbeInterval: 100 * time.Millisecond, ClockJumpLimit: 10 * time.Millisecond, TrustFsyncAlways: true}},
		{"negative drift factor means none", Config{DriftFactor: -1}, Config{NodeTimeout: 50 * time.Millisecond, DriftFactor: 0,
			MinTTL: 100 * time.Millisecond, MaxTTL: 5 * time.Minute, ProbeInterval: 500 * time.Millisecond, ClockJumpLimit: 100 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(tt.cfg, &fakeNode{addr: "a"})
			if e.cfg.Log == nil {
				t.Errorf("New(%+v).cfg.Log = nil; want a discarding logger", tt.cfg)
			}
			e.cfg.Log = nil
			if e.cfg != tt.want {
				t.Errorf("New(%+v).cfg = %+v; want %+v", tt.cfg, e.cfg, tt.want)
			}
		})
	}
}

func TestValidateNamesKeyAndValue(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // the error; empty for none
	}{
		{"defaults", Config{}, ""},
		{"node timeout over half min ttl", Config{NodeTimeout: 80 * time.Millisecond},
			"node_timeout (80ms) must be at most half of min_ttl (100ms)"},
		{"node timeout under 1ms", Config{NodeTimeout: time.Microsecond}, "node_timeout (1µs) must be at least 1ms"},
		{"min ttl under 1ms", Config{MinTTL: time.Microsecond}, "min_ttl (1µs) must be at least 1ms"},
		{"max ttl under min ttl", Config{MaxTTL: 50 * time.Millisecond}, "max_ttl (50ms) must not be under min_ttl (100ms)"},
		{"drift", Config{DriftFactor: 0.9}, "drift_factor (0.9) must be from 0 to 0.5"},
		{"negative drift", Config{DriftFactor: -0.1}, "drift_factor (-0.1) must be from 0 to 0.5"},
		{"probe interval", Config{ProbeInterval: time.Millisecond}, "probe_interval (1ms) must be from 10ms to 10s"},
		{"clock jump limit over max ttl", Config{ClockJumpLimit: 10 * time.Minute},
			"clock_jump_limit (10m0s) must be from 1ms to max_ttl (5m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if got := fmt.Sprint(err); (tt.want == "" && err != nil) || (tt.want != "" && got != tt.want) {
				t.Errorf("Validate(%+v) = %v; want %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func TestEngineOwnsTTLBounds(t *testing.T) {
	e := New(Config{MinTTL: 200 * time.Millisecond, MaxTTL: 3 * time.Second}, &fakeNode{addr: "a"})
	if e.MinTTL() != 200*time.Millisecond || e.MaxTTL() != 3*time.Second {
		t.Errorf("MinTTL(), MaxTTL() = %v, %v; want 200ms, 3s", e.MinTTL(), e.MaxTTL())
	}
	if q := e.quarantine(); q < e.MaxTTL() {
		t.Errorf("quarantine() = %v; want at least MaxTTL (%v)", q, e.MaxTTL())
	}
}

func TestNewQuorumAndDrift(t *testing.T) {
	tests := []struct {
		name       string
		nodes      int
		cfg        Config
		wantQuorum int
		wantDrift  time.Duration // Drift(time.Second)
	}{
		{"one node", 1, Config{}, 1, 12 * time.Millisecond},
		{"three nodes", 3, Config{}, 2, 12 * time.Millisecond},
		{"five nodes, no proportional drift", 5, Config{DriftFactor: -1}, 3, 2 * time.Millisecond},
		{"four nodes, larger drift", 4, Config{DriftFactor: 0.1}, 3, 102 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := make([]*fakeNode, tt.nodes)
			for i := range fs {
				fs[i] = &fakeNode{addr: string(rune('a' + i))}
			}
			e := New(tt.cfg, asNodes(fs)...)
			if e.quorum != tt.wantQuorum || e.Nodes() != tt.nodes {
				t.Errorf("New(%d nodes): quorum %d, Nodes() %d; want %d, %d", tt.nodes, e.quorum, e.Nodes(), tt.wantQuorum, tt.nodes)
			}
			if got := e.Drift(time.Second); got != tt.wantDrift {
				t.Errorf("Drift(1s) = %v; want %v", got, tt.wantDrift)
			}
		})
	}
}

func TestNewPanicsWithoutNodes(t *testing.T) {
	defer func() {
		if p := recover(); p != "quorum: no nodes" {
			t.Errorf("New(Config{}) panicked with %v; want %q", p, "quorum: no nodes")
		}
	}()
	New(Config{})
}

func TestAddrsInConfigOrder(t *testing.T) {
	e := New(Config{}, &fakeNode{addr: "c:1"}, &fakeNode{addr: "a:1"}, &fakeNode{addr: "b:1"})
	if got, want := e.Addrs(), []string{"c:1", "a:1", "b:1"}; !slices.Equal(got, want) {
		t.Errorf("Addrs() = %v; want %v", got, want)
	}
}

// The engine promises its nodes never change after New, so it must not
// share the caller's slice.
func TestNewKeepsItsOwnNodeList(t *testing.T) {
	nodes := []Node{&fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c"}}
	e := New(Config{}, nodes...)
	nodes[0] = &fakeNode{addr: "x"}
	if got, want := e.Addrs(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("Addrs() after the caller reused its slice = %v; want %v", got, want)
	}
}

func TestCloseClosesEveryNode(t *testing.T) {
	errA, errC := errors.New("a broke"), errors.New("c broke")
	tests := []struct {
		name      string
		closeErrs []error
		want      []error // each must match; nil slice: Close returns nil
	}{
		{"all close", []error{nil, nil, nil}, nil},
		{"errors joined", []error{errA, nil, errC}, []error{errA, errC}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := make([]*fakeNode, len(tt.closeErrs))
			for i, err := range tt.closeErrs {
				fs[i] = &fakeNode{addr: string(rune('a' + i)), closeErr: err}
			}
			err := New(Config{}, asNodes(fs)...).Close()
			if tt.want == nil && err != nil {
				t.Errorf("Close() = %v; want nil", err)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("Close() = %v; want it to match %v", err, w)
				}
			}
			for _, f := range fs {
				if got := f.ops(); !slices.Equal(got, []string{"close"}) {
					t.Errorf("node %s got calls %v; want [close]", f.addr, got)
				}
			}
		})
	}
}

func TestLeaseValidUntilExpires(t *testing.T) {
	expires := time.Date(2000, 1, 1, 0, 0, 1, 0, time.UTC)
	l := Lease{Validity: time.Second, Expires: expires, Granted: 2}
	tests := []struct {
		name string
		now  time.Time
		want bool
	}{
		{"well before", expires.Add(-time.Second), true},
		{"just before", expires.Add(-time.Nanosecond), true},
		{"at expiry", expires, false},
		{"after", expires.Add(time.Millisecond), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := l.Valid(tt.now); got != tt.want {
				t.Errorf("Valid(%v) = %v; want %v", tt.now, got, tt.want)
			}
		})
	}
	if (Lease{}).Valid(expires) {
		t.Errorf("Lease{}.Valid(%v) = true; want false", expires)
	}
}

// A retry's lease counted from the first try's start ends as much
// earlier, with as much less validity; counted from a later time, or
// for a lease without a start (nothing held), it is unchanged.
func TestLeaseFromAnEarlierStart(t *testing.T) {
	start := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	l := Lease{Validity: 400 * time.Millisecond, Expires: start.Add(490 * time.Millisecond), Start: start, Granted: 3}
	got := l.From(start.Add(-300 * time.Millisecond))
	want := Lease{Validity: 100 * time.Millisecond, Expires: start.Add(190 * time.Millisecond), Start: start.Add(-300 * time.Millisecond), Granted: 3}
	if got != want {
		t.Errorf("From(300ms earlier) = %+v; want %+v", got, want)
	}
	if got := l.From(start.Add(time.Second)); got != l {
		t.Errorf("From(later) = %+v; want the lease unchanged, %+v", got, l)
	}
	if got := (Lease{}).From(start); got != (Lease{}) {
		t.Errorf("Lease{}.From = %+v; want the zero Lease", got)
	}
}

func TestLockStringShowsOnlyKeys(t *testing.T) {
	l := Lock{Keys: []string{"a", "b c"}, Token: "secret"}
	if got, want := l.String(), `["a" "b c"]`; got != want {
		t.Errorf("String() = %q; want %q", got, want)
	}
}
