package quorum

import (
	"errors"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	boom := &NodeError{Node: 2, Addr: "c", Err: errors.New("boom")}
	// Ballot shorthands: a counted grant with ttl, a grant that does not
	// count, a denial and a failure.
	yes := func(ttl time.Duration) ballot { return ballot{granted: true, ttl: ttl, counts: true} }
	quarantined := func(ttl time.Duration) ballot { return ballot{granted: true, ttl: ttl} }
	no := ballot{counts: true}
	failed := ballot{err: boom, counts: true}
	const s = time.Second
	tests := []struct {
		name    string
		ballots []ballot
		elapsed time.Duration
		// want is nil, ErrDenied or ErrUnavailable; expired, whether a
		// denial is for lack of validity.
		want    error
		expired bool
		outcome Outcome // of the error, when there is one
		// For a grant: the TTL a quorum set, and the lease's validity and
		// grants. The lease's end is ttl - drift after start.
		ttl, validity time.Duration
		granted       int
	}{
		{"all granted", []ballot{yes(s), yes(s), yes(s)}, 50 * ms, nil, false, Outcome{}, s, 938 * ms, 3},
		{"quorum granted, one failed", []ballot{yes(s), yes(s), failed}, 50 * ms, nil, false, Outcome{}, s, 938 * ms, 2},
		{"quorum granted beside a grant that does not count", []ballot{yes(s), quarantined(s), yes(s)}, 0, nil, false, Outcome{}, s, 988 * ms, 2},
		{"one granted, two denied", []ballot{yes(s), no, no}, 0, ErrDenied, false, Outcome{Total: 3, Granted: 1, Denied: 2}, 0, 0, 0},
		// A grant that does not count could have tipped it, as a failure.
		{"quarantined grants decide nothing", []ballot{yes(s), quarantined(s), quarantined(s)}, 0, ErrUnavailable, false,
			Outcome{Total: 3, Granted: 1, Quarantined: 2}, 0, 0, 0},
		{"a failure could tip one grant", []ballot{yes(s), no, failed}, 0, ErrUnavailable, false,
			Outcome{Total: 3, Granted: 1, Denied: 1, Failed: 1}, 0, 0, 0},
		{"two denied, one failed is decided", []ballot{no, no, failed}, 0, ErrDenied, false,
			Outcome{Total: 3, Denied: 2, Failed: 1}, 0, 0, 0},
		// 1s - 990ms - 12ms: a quorum granted, but nothing is left.
		{"validity used up", []ballot{yes(s), yes(s), yes(s)}, 990 * ms, ErrDenied, true, Outcome{Total: 3, Granted: 3}, 0, 0, 0},
		{"validity exactly used up", []ballot{yes(s), yes(s), no}, 988 * ms, ErrDenied, true, Outcome{Total: 3, Granted: 2, Denied: 1}, 0, 0, 0},
		{"one nanosecond left", []ballot{yes(s), yes(s), no}, 988*ms - 1, nil, false, Outcome{}, s, 1, 2},
		// Extends that add: each node set its own TTL; a quorum of two has
		// the second largest, 1.2s: 1200 - 12 - 2.
		{"the quorum-th largest TTL", []ballot{yes(1100 * ms), yes(1300 * ms), yes(1200 * ms)}, 0, nil, false, Outcome{}, 1200 * ms, 1186 * ms, 3},
		// The longest TTL is a grant that does not count: 1.1s it is.
		{"a TTL that does not count", []ballot{yes(1100 * ms), quarantined(5 * s), yes(1200 * ms)}, 0, nil, false, Outcome{}, 1100 * ms, 1087 * ms, 2},
		// Third largest of five: 1.3s - 13ms - 2ms - 10ms.
		{"five nodes", []ballot{yes(1100 * ms), yes(1500 * ms), no, yes(1300 * ms), yes(1400 * ms)}, 10 * ms, nil, false, Outcome{}, 1300 * ms, 1275 * ms, 4},
		{"five nodes, two granted", []ballot{yes(s), yes(s), no, no, no}, 0, ErrDenied, false, Outcome{Total: 5, Granted: 2, Denied: 3}, 0, 0, 0},
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decide(tt.ballots, Quorum(len(tt.ballots)), start, start.Add(tt.elapsed), 0.01)
			if tt.want == nil {
				if d.err != nil {
					t.Fatalf("decide = %v; want granted", d.err)
				}
				want := Lease{Validity: tt.validity, Expires: start.Add(tt.ttl - drift(tt.ttl, 0.01)), Granted: tt.granted}
				if d.lease.Validity != want.Validity || !d.lease.Expires.Equal(want.Expires) || !d.lease.Start.Equal(start) || d.lease.Granted != want.Granted || d.ttl != tt.ttl {
					t.Errorf("decide = lease %+v, ttl %v; want lease %+v, ttl %v", d.lease, d.ttl, want, tt.ttl)
				}
				if got := d.lease.Expires.Sub(start.Add(tt.elapsed)); got != d.lease.Validity {
					t.Errorf("decide: the lease ends %v after now; want its validity, %v", got, d.lease.Validity)
				}
				if failed := d.lease.Failures != nil; failed != errors.Is(d.lease.Failures, boom) {
					t.Errorf("decide: lease failures = %v; want the failed node's error or nil", d.lease.Failures)
				}
				return
			}
			var oe *OutcomeError
			if !errors.Is(d.err, tt.want) || !errors.As(d.err, &oe) {
				t.Fatalf("decide = %v; want an *OutcomeError matching %v", d.err, tt.want)
			}
			if oe.Outcome != tt.outcome || oe.Expired != tt.expired {
				t.Errorf("decide = %+v; want Outcome %+v, Expired %v", oe, tt.outcome, tt.expired)
			}
			if hasFailed := oe.Failed > 0; hasFailed != errors.Is(d.err, boom) {
				t.Errorf("errors.Is(decide, the node's failure) = %v; want %v", !hasFailed, hasFailed)
			}
			if d.lease != (Lease{}) || d.ttl != 0 {
				t.Errorf("decide = lease %+v, ttl %v beside an error; want none", d.lease, d.ttl)
			}
		})
	}
}
