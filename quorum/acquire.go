package quorum

import (
	"context"
	"errors"
	"slices"
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
	// taken is what an acquire's nodes answered, for UndoAcquire; nil
	// unless a node took a key again (a release undoes the others).
	taken *taken
}

// taken is every node's answer to a granted acquire.
type taken struct {
	results []result[Acquired]
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
// wherever they hold the token. A key taken again (l.PrefixLen) keeps
// its TTL where that is longer, granted or not: the lease counts from
// ttl alone. No later round shortens it, since one could land after a
// later acquire of the same token and cut that grant (attack16 R2b).
func (e *Engine) Acquire(ctx context.Context, l Lock, ttl time.Duration) (Lease, error) {
	// Step 1: the start time, before the first send.
	start := time.Now()
	// Steps 2-3: try every node at once, each under its own deadline.
	results := fanOutCall(ctx, e, func(b Batch) Call[Acquired] { return b.AcquireCall(l, ttl, e.reveal()) }, func(ctx context.Context, _ int, n Node) (Acquired, error) {
		return n.Acquire(ctx, l, ttl)
	})
	// Step 4: granted by a quorum, with validity left. A grant from a
	// node in quarantine does not count: it may have lost locks.
	ballots := make([]ballot, len(results))
	for i, r := range results {
		ballots[i] = ballot{err: r.err, granted: r.v.Granted, ttl: ttl, counts: e.counts(i)}
	}
	d := decide(ballots, e.quorum, start, time.Now(), e.cfg.DriftFactor)
	e.report(OpAcquire, start, d)
	if d.err == nil {
		if tookAgain(results) {
			d.lease.taken = &taken{results}
		}
		return d.lease, nil
	}
	// Step 5: undo. The caller may have given up already; the cleanup
	// must still run.
	e.undo(context.WithoutCancel(ctx), l, results, leavesSilent(l, results, ballots, e.quorum))
	return Lease{}, d.err
}

// UndoAcquire gives back a granted acquire of l, lease, that its client is
// not told of (its validity ran out before the reply), as a failed one's
// undo does: a key taken again is set back, not released.
func (e *Engine) UndoAcquire(ctx context.Context, l Lock, lease Lease) {
	if lease.taken == nil {
		e.Release(ctx, l)
		return
	}
	e.undo(ctx, l, lease.taken.results, false) // a re-entry: undoOf leaves its silent nodes
}

// reveal reports whether every node's batch path may ask a plain
// acquire's denial to reveal what the key holds (Batch.Reveals): the
// batch sends one command to all of them.
func (e *Engine) reveal() bool {
	for _, n := range e.nodes {
		if !n.Batch().Reveals() {
			return false
		}
	}
	return true
}

// tookAgain reports whether a node took a key again.
func tookAgain(results []result[Acquired]) bool {
	for _, r := range results {
		if r.err == nil && r.v.Before != nil {
			return true
		}
	}
	return false
}

// undo gives back what an acquire of l took, on each node as undoOf says
// of its answer in results and of leave (leavesSilent's). Not observed:
// the observer sees each node's part of the acquire itself. Only the
// nodes undoOf gives something to do are called, so the command's trace
// keeps the others' answers (a node that failed reads failed); a called
// node's answer is whether it gave anything back.
func (e *Engine) undo(ctx context.Context, l Lock, results []result[Acquired], leave bool) {
	what := make([]undoing, len(results))
	ask := make([]bool, len(results))
	for i, r := range results {
		what[i] = undoOf(l, r.v, r.err, leave)
		ask[i] = what[i] != undoNothing
	}
	fanOutOn(ctx, e, e.cfg.NodeTimeout, false, nil, ask, func(nctx context.Context, i int, n Node) (bool, error) {
		switch what[i] {
		case undoRelease:
			found, err := dated(nctx, ctx, e, i, func(nctx context.Context, until int64) ([]Found, error) { return n.Release(nctx, l, until) })
			return slices.Contains(found, FoundDeleted), err
		case undoSetBack:
			given, err := dated(nctx, ctx, e, i, func(nctx context.Context, until int64) (int, error) {
				return n.Undo(nctx, l, results[i].v.Before, until)
			})
			return given > 0, err
		}
		return false, nil
	})
}

// undoing is what a failed acquire's undo does on one node.
type undoing uint8

const (
	undoNothing undoing = iota
	undoRelease         // delete each key that holds the token
	undoSetBack         // Node.Undo: set keys taken again back, delete the others
)

// undoOf is the undo on a node that answered a, err to an acquire of l.
// A node that denied wrote nothing, and a key it holds with the token is
// an earlier grant to the same token, which a single Redis would keep
// too. A node the breaker had marked down was not called. A node that
// granted gives back what it took: a key it took again (a re-entry by
// l.PrefixLen) is the token's earlier grant, whose validity its client
// was told, and is set back, not deleted (review28 F0b). A node that
// failed or timed out may hold the write, a lost reply hiding it: it is
// released, as one that the breaker marked down during this acquire (a
// third timeout in a row) is, past the breaker; but with l.PrefixLen the
// write may have taken an earlier grant again, which a release would
// delete: the keys are left there to their TTL. So they are where leave
// says (leavesSilent): the write may have landed on the token's earlier
// grant.
func undoOf(l Lock, a Acquired, err error, leave bool) undoing {
	switch {
	case err == nil && !a.Granted, errors.Is(err, ErrNodeDown):
		return undoNothing
	case err == nil && a.Before != nil:
		return undoSetBack
	case err != nil && (l.PrefixLen > 0 || leave):
		return undoNothing
	}
	return undoRelease
}

// leavesSilent reports whether a failed plain acquire of l (no
// PrefixLen), whose nodes answered results and ballots, leaves its keys
// on the nodes that failed to their TTL instead of releasing them. Such
// a node may hold the acquire's write, its reply lost, or the same
// token's earlier grant, which a holder sending its SET NX again keeps
// on one Redis, and a release cannot tell them apart. An earlier grant
// whose validity runs is on a quorum of counted nodes, and there a
// plain acquire is denied: so the release is safe when a quorum of
// counted nodes said they do not hold the token (they granted, or denied
// and revealed that no key holds it) and no node said it does. A denial
// that reveals nothing (a master older than Redis 7.0) says neither.
func leavesSilent(l Lock, results []result[Acquired], ballots []ballot, quorum int) bool {
	if l.PrefixLen > 0 {
		return false // undoOf leaves them anyway
	}
	free := 0
	for i, r := range results {
		switch {
		case r.err != nil:
		case r.v.holds(l.Token):
			return true
		case ballots[i].counts && (r.v.Granted || r.v.Revealed):
			free++
		}
	}
	return free < quorum
}
