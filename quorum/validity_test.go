package quorum

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestQuorumIsStrictMajority(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int
	}{
		{"one node", 1, 1},
		{"two nodes need both", 2, 2},
		{"three nodes", 3, 2},
		{"four nodes need three", 4, 3},
		{"five nodes", 5, 3},
		{"six nodes need four", 6, 4},
		{"seven nodes", 7, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quorum(tt.n); got != tt.want {
				t.Errorf("Quorum(%d) = %d; want %d", tt.n, got, tt.want)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	tests := []struct {
		name         string
		ttl, elapsed time.Duration
		driftFactor  float64
		want         time.Duration
	}{
		{"fast acquire", 10 * time.Second, 30 * time.Millisecond, 0.01, 9868 * time.Millisecond},
		{"zero elapsed", time.Second, 0, 0.01, 988 * time.Millisecond},
		{"slow acquire leaves nothing", 100 * time.Millisecond, 99 * time.Millisecond, 0.01, -2 * time.Millisecond},
		{"silent node charged at NodeTimeout", time.Second, 50 * time.Millisecond, 0.01, 938 * time.Millisecond},
		{"exactly used up", 100 * time.Millisecond, 97 * time.Millisecond, 0.01, 0},
		{"no proportional drift keeps 2ms", time.Second, 10 * time.Millisecond, 0, 988 * time.Millisecond},
		{"elapsed beyond ttl", 20 * time.Millisecond, 30 * time.Millisecond, 0.01, -12200 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validity(tt.ttl, tt.elapsed, tt.driftFactor); got != tt.want {
				t.Errorf("validity(%v, %v, %v) = %v; want %v", tt.ttl, tt.elapsed, tt.driftFactor, got, tt.want)
			}
		})
	}
}

func TestDrift(t *testing.T) {
	tests := []struct {
		name        string
		ttl         time.Duration
		driftFactor float64
		want        time.Duration
	}{
		{"one second", time.Second, 0.01, 12 * time.Millisecond},
		{"ten seconds", 10 * time.Second, 0.01, 102 * time.Millisecond},
		{"fraction of a millisecond kept", 150 * time.Millisecond, 0.01, 3500 * time.Microsecond},
		{"zero ttl still 2ms", 0, 0.01, 2 * time.Millisecond},
		{"zero factor is 2ms", time.Minute, 0, 2 * time.Millisecond},
		{"larger factor", time.Second, 0.1, 102 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := drift(tt.ttl, tt.driftFactor); got != tt.want {
				t.Errorf("drift(%v, %v) = %v; want %v", tt.ttl, tt.driftFactor, got, tt.want)
			}
		})
	}
}

func TestVerdict(t *testing.T) {
	failures := errors.New("node failures")
	tests := []struct {
		name string
		o    Outcome
		want error // nil, ErrDenied or ErrUnavailable
	}{
		// N=3, quorum 2.
		{"3: all granted", Outcome{Total: 3, Granted: 3}, nil},
		{"3: quorum granted, one denied", Outcome{Total: 3, Granted: 2, Denied: 1}, nil},
		{"3: quorum granted, one failed", Outcome{Total: 3, Granted: 2, Failed: 1}, nil},
		{"3: all denied", Outcome{Total: 3, Denied: 3}, ErrDenied},
		{"3: one granted, two denied", Outcome{Total: 3, Granted: 1, Denied: 2}, ErrDenied},
		{"3: two denied, one failed is decided", Outcome{Total: 3, Denied: 2, Failed: 1}, ErrDenied},
		{"3: failed node could tip one granted", Outcome{Total: 3, Granted: 1, Denied: 1, Failed: 1}, ErrUnavailable},
		{"3: one granted, two failed", Outcome{Total: 3, Granted: 1, Failed: 2}, ErrUnavailable},
		{"3: all failed", Outcome{Total: 3, Failed: 3}, ErrUnavailable},
		{"3: one denied, two failed", Outcome{Total: 3, Denied: 1, Failed: 2}, ErrUnavailable},
		// N=4, quorum 3.
		{"4: three granted", Outcome{Total: 4, Granted: 3, Failed: 1}, nil},
		{"4: two granted, two denied", Outcome{Total: 4, Granted: 2, Denied: 2}, ErrDenied},
		{"4: one granted, two denied, one failed", Outcome{Total: 4, Granted: 1, Denied: 2, Failed: 1}, ErrDenied},
		// Two failed nodes could not have made a quorum, but only two
		// nodes answered: fewer than a quorum, so it is not a decision.
		{"4: two denied, two failed: too few answered", Outcome{Total: 4, Denied: 2, Failed: 2}, ErrUnavailable},
		{"4: two granted, one denied, one failed", Outcome{Total: 4, Granted: 2, Denied: 1, Failed: 1}, ErrUnavailable},
		// N=5, quorum 3.
		{"5: quorum granted, two failed", Outcome{Total: 5, Granted: 3, Failed: 2}, nil},
		{"5: two granted, one denied, two failed", Outcome{Total: 5, Granted: 2, Denied: 1, Failed: 2}, ErrUnavailable},
		{"5: three denied, two failed", Outcome{Total: 5, Denied: 3, Failed: 2}, ErrDenied},
		{"5: two granted, three denied", Outcome{Total: 5, Granted: 2, Denied: 3}, ErrDenied},
		{"5: two granted, two denied, one failed", Outcome{Total: 5, Granted: 2, Denied: 2, Failed: 1}, ErrUnavailable},
		{"5: one granted, three denied, one failed", Outcome{Total: 5, Granted: 1, Denied: 3, Failed: 1}, ErrDenied},
		{"5: two denied, three failed", Outcome{Total: 5, Denied: 2, Failed: 3}, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := Quorum(tt.o.Total)
			err := verdict(tt.o, q, failures)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("verdict(%+v, %d) = %v; want nil", tt.o, q, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("verdict(%+v, %d) = %v; want %v", tt.o, q, err, tt.want)
			}
			other := ErrDenied
			if tt.want == ErrDenied {
				other = ErrUnavailable
			}
			if errors.Is(err, other) {
				t.Errorf("errors.Is(verdict(%+v, %d), %v) = true; want false", tt.o, q, other)
			}
			var oe *OutcomeError
			if !errors.As(err, &oe) {
				t.Fatalf("verdict(%+v, %d) = %T; want *OutcomeError", tt.o, q, err)
			}
			if oe.Outcome != tt.o || oe.Expired || oe.Failures != failures {
				t.Errorf("verdict(%+v, %d) = %+v; want Outcome %+v, not Expired, Failures %v", tt.o, q, oe, tt.o, failures)
			}
		})
	}
}

func TestQuorumTTL(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name   string
		ttls   []time.Duration
		quorum int
		want   time.Duration
		wantOK bool
	}{
		{"quorum-th largest", []time.Duration{100 * ms, 300 * ms, 200 * ms}, 2, 200 * ms, true},
		{"quorum of one takes the largest", []time.Duration{100 * ms, 300 * ms, 200 * ms}, 1, 300 * ms, true},
		{"quorum of all takes the smallest", []time.Duration{100 * ms, 300 * ms, 200 * ms}, 3, 100 * ms, true},
		{"five nodes", []time.Duration{50 * ms, 500 * ms, 400 * ms, 10 * ms, 300 * ms}, 3, 300 * ms, true},
		{"ties", []time.Duration{200 * ms, 200 * ms, 100 * ms}, 2, 200 * ms, true},
		{"no expiry ranks longest", []time.Duration{100 * ms, -ms, 200 * ms}, 2, 200 * ms, true},
		{"no expiry alone is the largest", []time.Duration{100 * ms, -ms, 200 * ms}, 1, -ms, true},
		{"no expiry on a quorum", []time.Duration{-ms, 100 * ms, -ms}, 2, -ms, true},
		{"no expiry then smallest", []time.Duration{-ms, 100 * ms, 50 * ms}, 3, 50 * ms, true},
		{"fewer than quorum", []time.Duration{100 * ms}, 2, 0, false},
		{"none", nil, 1, 0, false},
		{"zero quorum", []time.Duration{100 * ms}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.ttls)
			got, ok := quorumTTL(in, tt.quorum)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("quorumTTL(%v, %d) = %v, %v; want %v, %v", tt.ttls, tt.quorum, got, ok, tt.want, tt.wantOK)
			}
			if !slices.Equal(in, tt.ttls) {
				t.Errorf("quorumTTL changed its input to %v; want %v", in, tt.ttls)
			}
		})
	}
}
