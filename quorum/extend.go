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

func (e *Engine) extend(ctx context.Context, l Lock, ttl time.Duration, mode ExtendMode, limit time.Duration) (Lease, error) {
	start := time.Now()
	results := fanOutCall(ctx, e, func(b Batch) Call[time.Duration] { return b.ExtendCall(l, ttl, mode, limit) }, func(nctx context.Context, i int, n Node) (time.Duration, error) {
		return dated(nctx, ctx, e, i, func(nctx context.Context, until int64) (time.Duration, error) {
			return n.Extend(nctx, l, ttl, mode, limit, until)
		})
	})
	// A node grants with the TTL it set (in ExtendAdd mode, its own), 0
	// when it set none, and -1 when it would have passed limit.
	ballots := make([]ballot, len(results))
	over := false
	for i, r := range results {
		ballots[i] = ballot{err: r.err, granted: r.v > 0, ttl: r.v, counts: e.counts(i)}
		over = over || r.err == nil && r.v < 0
	}
	d := decide(ballots, e.quorum, start, time.Now(), e.cfg.DriftFactor)
	if oe := (*OutcomeError)(nil); over && errors.As(d.err, &oe) && !oe.Unavailable && !oe.Expired {
		d.err = fmt.Errorf("%w (%v): %w", ErrOverMaxTTL, limit, d.err)
	}
	e.report(OpExtend, start, d)
	return d.lease, d.err
}
