package quorum

import (
	"testing"
	"time"
)

// attack8 A1: an unchanged hold counts beside an extend when it runs at
// least as long as the shortest extend less the run's time and the drift
// allowance. A hold left in the extend's millisecond differs from the
// extend's only by when each node read it (at most the run's time); the
// drift allowance (1% of the ttl, 300ms of 30s) lets a hold that ends
// well before the one the client asked for make the quorum: 2 of 5 down,
// one master extended to 30s, two left at 29.7s, PEXPIRE answers 1 and
// the quorum ends 300ms before the client's lock does.
func TestAttack8UnchangedHoldShorterByDriftNotCounted(t *testing.T) {
	s := 30 * time.Second
	down := &NodeError{Err: ErrNodeDown}
	left := func(hold time.Duration) KeyEffect {
		return KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: hold}
	}
	elapsed := 5 * time.Millisecond
	short := s - 300*time.Millisecond // well past the run's time
	d := decideEffect(effectVotes{
		results:     []result[NodeEffect]{vote(intReply(1), extended(s)), vote(intReply(1), left(short)), vote(intReply(1), left(short)), failedVote(down), failedVote(down)},
		nkeys:       1,
		counted:     []bool{true, true, true, true, true},
		quorum:      3,
		elapsed:     elapsed,
		nodeTimeout: 50 * time.Millisecond,
		driftFactor: 0.01,
	})
	if d.granted {
		t.Errorf("an extend to %v on one master, beside two holds left at %v (the run took %v), granted: the quorum ends %v before the client's lock",
			s, short, elapsed, s-short-elapsed)
	}
}
