package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Extend resets the TTL of every key of l on every node where all of them
// still hold l's token. It is granted like an acquire: by a quorum, with
// validity left. A failed extend is not undone: the lock keeps whatever
// TTL each node had, and the holder must stop relying on it.
func (e *Engine) Extend(ctx context.Context, l Lock, ttl time.Duration) (Lease, error) {
	return e.extend(ctx, l, ttl, ExtendSet, 0)
}

// ExtendBy adds ttl to the remaining TTL of every key of l on every node
// where all of them hold l's token (redis-py's extend). Each node adds to
// its own remaining TTL, so the validity is taken from what the nodes set.
// A node whose TTL would pass limit (if above zero) extends nothing; if
// that decides the outcome, the error matches ErrOverMaxTTL.
func (e *Engine) ExtendBy(ctx context.Context, l Lock, ttl, limit time.Duration) (Lease, error) {
	return e.extend(ctx, l, ttl, ExtendAdd, limit)
}

// ExtendOrAcquire resets the TTL of l's keys where they hold its token
// and sets them where they are missing (redsync's touch-or-setnx).
func (e *Engine) ExtendOrAcquire(ctx context.Context, l Lock, ttl time.Duration) (Lease, error) {
	return e.extend(ctx, l, ttl, ExtendOrAcquire, 0)
}

func (e *Engine) extend(ctx context.Context, l Lock, ttl time.Duration, mode ExtendMode, limit time.Duration) (lease Lease, err error) {
	start := time.Now()
	if e.cfg.Observer != nil {
		defer func() {
			e.observe(OpExtend, start, err)
			if err == nil {
				e.cfg.Observer.LeaseGranted(OpExtend, lease.Validity, ttl)
			}
		}()
	}
	results := fanOut(ctx, e, func(ctx context.Context, n Node) (time.Duration, error) {
		return n.Extend(ctx, l, ttl, mode, limit)
	})
	elapsed := time.Since(start)
	o := Outcome{Total: len(e.nodes)}
	var set []time.Duration
	over := false
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
		case r.v > 0 && !e.counts(i):
			o.Quarantined++
		case r.v > 0:
			o.Granted++
			set = append(set, r.v)
		default:
			o.Denied++
			over = over || r.v < 0
		}
	}
	fails := failures(results)
	if err := verdict(o, e.quorum, fails); err != nil {
		if over && errors.Is(err, ErrDenied) {
			err = fmt.Errorf("%w (%v): %w", ErrOverMaxTTL, limit, err)
		}
		return Lease{}, err
	}
	// The TTL a quorum now has; in ExtendAdd mode it differs per node.
	newTTL, _ := quorumTTL(set, e.quorum)
	v := validity(newTTL, elapsed, e.cfg.DriftFactor)
	if v <= 0 && !brokenNoValidity() {
		return Lease{}, &OutcomeError{Outcome: o, Expired: true, Failures: fails}
	}
	return Lease{Validity: v, Expires: start.Add(newTTL - e.Drift(newTTL)), Granted: o.Granted, Failures: fails}, nil
}
