package quorum

import "time"

// ballot is one node's answer to a grant (an acquire or an extend), as
// decide reads it.
type ballot struct {
	err     error // the node's failure (a *NodeError); nil if it answered
	granted bool  // it answered yes
	// ttl is the TTL a granting node set: the one asked for, or, for an
	// extend that adds, what the node had left plus the increment.
	ttl time.Duration
	// counts is false for a node whose grant does not count: quarantined
	// (a restart may have lost its locks), unverified or refused.
	counts bool
}

// decision is how one grant is answered.
type decision struct {
	lease Lease
	// ttl is the TTL a quorum of the counted grants set, which the lease's
	// validity is taken from; zero when nothing was granted to hold (also
	// for a granted effect run that holds no lock).
	ttl time.Duration
	err error // nil when granted; else an *OutcomeError
}

// decide is the one grant decision (Redlock step 4) of every operation
// that takes or extends a lock: granted when a quorum of the nodes whose
// grants count said yes and validity is left, counted from start (the
// first send) to now (the last answer). The TTL is the longest that a
// quorum of those grants set; validity is that TTL less now-start and
// the drift allowance. Otherwise the error matches ErrUnavailable when
// the nodes that failed or do not count could have changed the outcome,
// and ErrDenied when the answers decided against it or no validity is
// left (Expired). It does no I/O and reads no clock.
func decide(ballots []ballot, quorum int, start, now time.Time, driftFactor float64) decision {
	o := Outcome{Total: len(ballots)}
	var buf [8]time.Duration
	ttls := buf[:0] // on the stack for up to 8 nodes
	var errs []error
	for _, v := range ballots {
		switch {
		case v.err != nil:
			o.Failed++
			errs = append(errs, v.err)
		case v.granted && !v.counts:
			o.Quarantined++
		case v.granted:
			o.Granted++
			ttls = append(ttls, v.ttl)
		default:
			o.Denied++
		}
	}
	fails := gather(errs)
	if err := verdict(o, quorum, fails); err != nil {
		return decision{err: err}
	}
	ttl, _ := quorumTTL(ttls, quorum)
	v := validity(ttl, now.Sub(start), driftFactor)
	if expired(v) {
		return decision{err: &OutcomeError{Outcome: o, Expired: true, Failures: fails}}
	}
	return decision{ttl: ttl, lease: Lease{Validity: v, Expires: expiry(start, ttl, driftFactor), Start: start, Granted: o.Granted, Failures: fails}}
}

// report tells the observer, if any, how op begun at start was
// decided: the operation, and for a lock granted to hold, the lease's
// validity out of the TTL the nodes set.
func (e *Engine) report(op Op, start time.Time, d decision) {
	obs := e.cfg.Observer
	if obs == nil {
		return
	}
	obs.OperationDone(op, ResultOf(d.err), time.Since(start))
	if d.err == nil && d.ttl != 0 {
		obs.LeaseGranted(op, d.lease.Validity, d.ttl)
	}
}
