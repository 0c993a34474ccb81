package quorum

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-multierror"
)

// errBoom is a node failure that tests can find with errors.Is.
var errBoom = errors.New("boom")

// twoFailures returns the node errors of node 1, which failed with
// errBoom, and node 2, which timed out, and what gather makes of them.
func twoFailures(t *testing.T) (boom, timeout *NodeError, failures error) {
	t.Helper()
	boom = &NodeError{Node: 1, Addr: "127.0.0.1:7002", Err: errBoom}
	timeout = &NodeError{Node: 2, Addr: "127.0.0.1:7003", Err: context.DeadlineExceeded}
	failures = gather([]error{nil, boom, timeout})
	if failures == nil {
		t.Fatal("gather(two failures) = nil; want an error")
	}
	return boom, timeout, failures
}

func TestGatherIsOneLine(t *testing.T) {
	boom := &NodeError{Node: 1, Addr: "127.0.0.1:7002", Err: errBoom}
	timeout := &NodeError{Node: 2, Addr: "127.0.0.1:7003", Err: context.DeadlineExceeded}
	tests := []struct {
		name string
		errs []error
		want string // "" means a nil error
	}{
		{"no results", nil, ""},
		{"no failures", []error{nil, nil, nil}, ""},
		{"one failure", []error{nil, boom, nil}, "node 1 (127.0.0.1:7002): boom"},
		{"several failures", []error{nil, boom, timeout},
			"node 1 (127.0.0.1:7002): boom; node 2 (127.0.0.1:7003): context deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := gather(tt.errs)
			if tt.want == "" {
				// A typed nil inside the interface would not compare equal.
				if err != nil {
					t.Fatalf("gather(%v) = %#v; want nil", tt.errs, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("gather(%v) = nil; want %q", tt.errs, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("gather(%v).Error() = %q; want %q", tt.errs, got, tt.want)
			}
		})
	}
}

func TestOutcomeErrorText(t *testing.T) {
	_, _, failures := twoFailures(t)
	tests := []struct {
		name string
		err  *OutcomeError
		want string
	}{
		{"denied", &OutcomeError{Outcome: Outcome{Total: 3, Granted: 1, Denied: 2}},
			"quorum: denied: 1 granted, 2 denied, 0 failed of 3 nodes"},
		{"denied with a failure", &OutcomeError{Outcome: Outcome{Total: 5, Denied: 3, Failed: 2}, Failures: failures},
			"quorum: denied: 0 granted, 3 denied, 2 failed of 5 nodes: node 1 (127.0.0.1:7002): boom; node 2 (127.0.0.1:7003): context deadline exceeded"},
		{"unavailable", &OutcomeError{Outcome: Outcome{Total: 3, Granted: 1, Failed: 2}, Unavailable: true, Failures: failures},
			"quorum: unavailable: 1 granted, 0 denied, 2 failed of 3 nodes: node 1 (127.0.0.1:7002): boom; node 2 (127.0.0.1:7003): context deadline exceeded"},
		{"unavailable counts denials as answers", &OutcomeError{Outcome: Outcome{Total: 4, Denied: 2, Failed: 2}, Unavailable: true},
			"quorum: unavailable: 0 granted, 2 denied, 2 failed of 4 nodes"},
		{"quarantined grants counted apart", &OutcomeError{Outcome: Outcome{Total: 5, Granted: 1, Quarantined: 2, Denied: 2}, Unavailable: true},
			"quorum: unavailable: 1 granted, 2 quarantined, 2 denied, 0 failed of 5 nodes"},
		{"expired", &OutcomeError{Outcome: Outcome{Total: 3, Granted: 3}, Expired: true},
			"quorum: denied: validity expired: 3 granted, 0 denied, 0 failed of 3 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestOutcomeErrorMatchesOneSentinel(t *testing.T) {
	boom, timeout, failures := twoFailures(t)
	tests := []struct {
		name      string
		err       error
		want      error // the sentinel it matches
		wantNodes []*NodeError
	}{
		{"denied", &OutcomeError{Outcome: Outcome{Total: 3, Denied: 3}}, ErrDenied, nil},
		{"expired is a denial", &OutcomeError{Outcome: Outcome{Total: 3, Granted: 3}, Expired: true}, ErrDenied, nil},
		{"denied with failures", &OutcomeError{Outcome: Outcome{Total: 5, Denied: 3, Failed: 2}, Failures: failures},
			ErrDenied, []*NodeError{boom, timeout}},
		{"unavailable", &OutcomeError{Outcome: Outcome{Total: 3, Granted: 1, Failed: 2}, Unavailable: true, Failures: failures},
			ErrUnavailable, []*NodeError{boom, timeout}},
		{"unavailable without failures", &OutcomeError{Outcome: Outcome{Total: 4, Denied: 2, Failed: 2}, Unavailable: true},
			ErrUnavailable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := ErrUnavailable
			if tt.want == ErrUnavailable {
				other = ErrDenied
			}
			if !errors.Is(tt.err, tt.want) {
				t.Errorf("errors.Is(%v, %v) = false; want true", tt.err, tt.want)
			}
			if errors.Is(tt.err, other) {
				t.Errorf("errors.Is(%v, %v) = true; want false", tt.err, other)
			}
			var oe *OutcomeError
			if !errors.As(tt.err, &oe) {
				t.Errorf("errors.As(%v, *OutcomeError) = false; want true", tt.err)
			}
			if len(tt.wantNodes) == 0 {
				var ne *NodeError
				if errors.As(tt.err, &ne) {
					t.Errorf("errors.As(%v, *NodeError) = %v; want no match", tt.err, ne)
				}
				return
			}
			// errors.As finds the first node failure, errors.Is reaches
			// every one and its cause, through the multierror.
			var ne *NodeError
			if !errors.As(tt.err, &ne) || ne != tt.wantNodes[0] {
				t.Errorf("errors.As(%v, *NodeError) = %v; want %v", tt.err, ne, tt.wantNodes[0])
			}
			for _, want := range tt.wantNodes {
				if !errors.Is(tt.err, want) {
					t.Errorf("errors.Is(%v, %v) = false; want true", tt.err, want)
				}
			}
			for _, cause := range []error{errBoom, context.DeadlineExceeded} {
				if !errors.Is(tt.err, cause) {
					t.Errorf("errors.Is(%v, %v) = false; want true", tt.err, cause)
				}
			}
			// Each failure in the list is a *NodeError in its own right.
			var merr *multierror.Error
			if !errors.As(tt.err, &merr) {
				t.Fatalf("errors.As(%v, *multierror.Error) = false; want true", tt.err)
			}
			if len(merr.Errors) != len(tt.wantNodes) {
				t.Fatalf("failures = %d errors; want %d", len(merr.Errors), len(tt.wantNodes))
			}
			for i, e := range merr.Errors {
				var got *NodeError
				if !errors.As(e, &got) || got != tt.wantNodes[i] {
					t.Errorf("errors.As(failure %d, *NodeError) = %v; want %v", i, got, tt.wantNodes[i])
				}
			}
		})
	}
}

func TestNodeErrorWrapsCause(t *testing.T) {
	err := error(&NodeError{Node: 0, Addr: "a:1", Err: context.DeadlineExceeded})
	if got, want := err.Error(), "node 0 (a:1): context deadline exceeded"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, context.DeadlineExceeded) = false; want true", err)
	}
}
