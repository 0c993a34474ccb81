package quorum

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
)

var (
	// ErrDenied means the nodes that answered decided against the
	// operation: the key is held by another token, is not held by this
	// one, or the validity ran out.
	ErrDenied = errors.New("quorum: denied")
	// ErrUnavailable means too few nodes answered to decide: failed nodes
	// could have changed the outcome.
	ErrUnavailable = errors.New("quorum: unavailable")
	// ErrOverMaxTTL means ExtendBy would have left a key with a TTL over
	// its limit; nothing was extended.
	ErrOverMaxTTL = errors.New("quorum: ttl over max_ttl")
	// ErrOverflow means a counter's increment would pass the largest
	// 64-bit integer; nothing was written.
	ErrOverflow = errors.New("quorum: increment or value is out of range")
)

// Outcome counts the nodes' answers to one operation.
type Outcome struct {
	Total   int // configured nodes
	Granted int // nodes that did it
	Denied  int // nodes that answered no
	Failed  int // nodes that did not answer usefully
	// Quarantined counts the nodes that granted, but whose grant does not
	// count: quarantined, unverified or refused. For the verdict they
	// are like failed nodes: they could have changed the outcome.
	Quarantined int
	// Unseeded counts the nodes whose counters were lost and are not yet
	// seeded again (counters only): they do not count either.
	Unseeded int
}

// Answered is how many nodes gave an answer, yes or no.
func (o Outcome) Answered() int { return o.Granted + o.Denied }

// String counts every kind of answer, so that "not enough answered" can
// never read like "enough answered": "1 granted, 2 denied, 2 failed of 5
// nodes", with "1 quarantined" and "1 unseeded" after the grants when
// there are such.
func (o Outcome) String() string {
	q := ""
	if o.Quarantined > 0 {
		q = fmt.Sprintf(", %d quarantined", o.Quarantined)
	}
	if o.Unseeded > 0 {
		q += fmt.Sprintf(", %d unseeded", o.Unseeded)
	}
	return fmt.Sprintf("%d granted%s, %d denied, %d failed of %d nodes", o.Granted, q, o.Denied, o.Failed, o.Total)
}

// OutcomeError reports why an operation was not granted. It matches
// ErrDenied or ErrUnavailable with errors.Is, and unwraps to the node
// failures.
type OutcomeError struct {
	Outcome
	Unavailable bool  // failed nodes decided it
	Expired     bool  // a quorum granted, but the validity ran out
	Failures    error // the node failures, nil if none failed
}

func (e *OutcomeError) Error() string {
	var b strings.Builder
	switch {
	case e.Unavailable:
		fmt.Fprintf(&b, "%v: %v", ErrUnavailable, e.Outcome)
	case e.Expired:
		fmt.Fprintf(&b, "%v: validity expired: %v", ErrDenied, e.Outcome)
	default:
		fmt.Fprintf(&b, "%v: %v", ErrDenied, e.Outcome)
	}
	if e.Failures != nil {
		b.WriteString(": ")
		b.WriteString(e.Failures.Error())
	}
	return b.String()
}

// Is matches ErrUnavailable or ErrDenied, whichever e is.
func (e *OutcomeError) Is(target error) bool {
	if e.Unavailable {
		return target == ErrUnavailable
	}
	return target == ErrDenied
}

// Unwrap returns the node failures.
func (e *OutcomeError) Unwrap() error { return e.Failures }

// NodeError is one node's failure.
type NodeError struct {
	Node int    // index in the configured node list
	Addr string // the node's address
	Err  error
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("node %d (%s): %v", e.Node, e.Addr, e.Err)
}

// Unwrap returns the underlying failure.
func (e *NodeError) Unwrap() error { return e.Err }

// gather joins the node failures into one error, nil when none failed.
func gather(errs []error) error {
	var merr *multierror.Error
	for _, err := range errs {
		if err != nil {
			merr = multierror.Append(merr, err)
		}
	}
	if merr != nil {
		merr.ErrorFormat = oneLine // one line fits a RESP error and one log record
	}
	return merr.ErrorOrNil()
}

func oneLine(errs []error) string {
	parts := make([]string, len(errs))
	for i, err := range errs {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}
