package quorum

import (
	"context"
	"errors"
	"time"
)

// Lease is a granted lock, as the engine reports it.
type Lease struct {
	// Validity is how long the holder may rely on the lock, counted from
	// when the engine decided: the TTL minus the time taken minus drift.
	Validity time.Duration
	// Expires is when the validity ends, on the monotonic clock. Check it
	// again just before telling the client.
	Expires time.Time
	// Start is when the operation began (its first send): the validity
	// counts from it.
	Start time.Time
	// Granted is how many nodes granted the operation.
	Granted int
	// Failures are the node failures the grant survived; nil if none.
	Failures error
}

// Valid reports whether the lease is still valid at now.
func (l Lease) Valid(now time.Time) bool { return !expired(l.Expires.Sub(now)) }

// From returns l with its validity counted from t, if t is before its
// start: the lease of a retry, for a command whose first try began at t.
// Its client's clock started before t, so a validity counted from the
// retry would end after the client's (a late OK).
func (l Lease) From(t time.Time) Lease {
	if d := l.Start.Sub(t); d > 0 {
		l.Start, l.Expires, l.Validity = t, l.Expires.Add(-d), l.Validity-d
	}
	return l
}

// Acquire tries once to set every key of l to its token with the given
// TTL on every node (Redlock steps 1-5). On failure the error matches
// ErrDenied or ErrUnavailable, and the keys have been released again
// wherever they hold the token.
func (e *Engine) Acquire(ctx context.Context, l Lock, ttl time.Duration) (Lease, error) {
	// Step 1: the start time, before the first send.
	start := time.Now()
	// Steps 2-3: try every node at once, each under its own deadline.
	results := fanOutCall(ctx, e, pipeAcquire(l, ttl), func(ctx context.Context, _ int, n Node) (bool, error) {
		return n.Acquire(ctx, l, ttl)
	})
	// Step 4: granted by a quorum, with validity left. A grant from a
	// node in quarantine does not count: it may have lost locks.
	ballots := make([]ballot, len(results))
	for i, r := range results {
		ballots[i] = ballot{err: r.err, granted: r.v, ttl: ttl, counts: e.counts(i)}
	}
	d := decide(ballots, e.quorum, start, time.Now(), e.cfg.DriftFactor)
	e.report(OpAcquire, start, d)
	if d.err == nil {
		return d.lease, nil
	}
	// Step 5: undo wherever the write may have landed: on the nodes that
	// granted, and on those that failed or timed out, since a lost reply
	// may hide a write. A node that denied wrote nothing, and a key it
	// holds with this token is an earlier grant to the same token, which
	// a single Redis would keep too. A node the breaker had marked down
	// was not called and holds nothing, but one it marked down during
	// this acquire (a third timeout in a row) may hold the write: the
	// undo goes past the breaker. The caller may have given up already;
	// the cleanup must still run.
	skip := make(map[Node]bool, len(results))
	for i, r := range results {
		skip[e.nodes[i]] = r.err == nil && !r.v || errors.Is(r.err, ErrNodeDown)
	}
	// Not observed: the observer sees each node's part of the acquire
	// itself, and this cleanup calls no node that denied.
	fanOutWithin(context.WithoutCancel(ctx), e, e.cfg.NodeTimeout, false, nil, func(ctx context.Context, _ int, n Node) ([]Found, error) {
		if skip[n] {
			return nil, nil
		}
		return n.Release(ctx, l)
	})
	return Lease{}, d.err
}
