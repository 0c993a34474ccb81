package quorum

import (
	"slices"
	"time"
)

// validity is how long a lock stays safe to use after it was acquired
// (Redlock step 4): the TTL, minus the time the acquire took, minus the
// drift allowance. A result <= 0 means the lock was not acquired.
func validity(ttl, elapsed time.Duration, driftFactor float64) time.Duration {
	return ttl - elapsed - drift(ttl, driftFactor)
}

// expiry is when a lock that a quorum set to ttl, the first of them no
// earlier than start, stops being valid: ttl less the drift allowance
// after start.
func expiry(start time.Time, ttl time.Duration, driftFactor float64) time.Time {
	return start.Add(ttl - drift(ttl, driftFactor))
}

// drift is the clock-drift allowance for a TTL: driftFactor of it, plus
// 2ms for Redis's 1ms expiry precision.
func drift(ttl time.Duration, driftFactor float64) time.Duration {
	return time.Duration(float64(ttl)*driftFactor) + 2*time.Millisecond
}

// verdict decides an operation from its outcome: nil when a quorum
// granted, ErrUnavailable when the failed or quarantined nodes could have
// changed the result or too few answered, ErrDenied otherwise.
func verdict(o Outcome, quorum int, failures error) error {
	switch {
	case o.Granted >= quorum:
		return nil
	case o.Granted+o.Failed+o.Quarantined+o.Unseeded >= quorum, o.Answered() < quorum:
		return &OutcomeError{Outcome: o, Unavailable: true, Failures: failures}
	default:
		return &OutcomeError{Outcome: o, Failures: failures}
	}
}

// quorumTTL is the longest TTL that at least quorum of ttls reach: the
// quorum-th largest. A negative TTL (no expiry) counts as the longest.
// It returns false when there are fewer than quorum TTLs.
func quorumTTL(ttls []time.Duration, quorum int) (time.Duration, bool) {
	if len(ttls) < quorum || quorum < 1 {
		return 0, false
	}
	s := slices.Clone(ttls)
	slices.SortFunc(s, func(a, b time.Duration) int {
		switch {
		case a == b, a < 0 && b < 0:
			return 0
		case a < 0, b >= 0 && a > b:
			return -1
		}
		return 1
	})
	return s[quorum-1], true
}
