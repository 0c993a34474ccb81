package quorum

import (
	"testing"
	"time"
)

// attack9 E1: 7f5ac40 lets an unchanged hold count beside an extend when
// it runs at least as long as the shortest extend less the run's time and
// 2ms. The run's time is not how far apart the two holds were read: each
// node reads its own hold in its own run, right after the write it did or
// did not do, so a hold left in the extend's millisecond reads as the
// extend's ttl (less PTTL's rounding) however long the run took. A slow
// master (here one that timed out after 400ms) makes the run's time
// large, and a hold that ends 350ms before the extend's counts: 2 of 5
// failed, one master extended to 30s, two left at 29.65s, PEXPIRE answers
// 1 on all three, and the quorum ends up to 350ms before the lock the
// client was told it extended (one Redis: 30s from its run).
func TestAttack9UnchangedHoldShorterByASlowRunNotCounted(t *testing.T) {
	s := 30 * time.Second
	down := &NodeError{Err: ErrNodeDown}
	slow := &NodeError{Err: errTimeoutForTest{}}
	left := func(hold time.Duration) KeyEffect {
		return KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: hold}
	}
	elapsed := 400 * time.Millisecond // the slow master's timeout
	short := s - 350*time.Millisecond
	d := decideEffect(effectVotes{
		results:     []result[NodeEffect]{vote(intReply(1), extended(s)), vote(intReply(1), left(short)), vote(intReply(1), left(short)), failedVote(slow), failedVote(down)},
		nkeys:       1,
		counted:     []bool{true, true, true, true, true},
		quorum:      3,
		elapsed:     elapsed,
		nodeTimeout: 400 * time.Millisecond,
		driftFactor: 0.01,
	})
	if d.granted {
		t.Errorf("an extend to %v on one master, beside two holds left at %v (a slow master made the run %v), granted: the quorum ends %v before the extend the client was told of",
			s, short, elapsed, s-short)
	}
}

type errTimeoutForTest struct{}

func (errTimeoutForTest) Error() string   { return "i/o timeout" }
func (errTimeoutForTest) Timeout() bool   { return true }
func (errTimeoutForTest) Temporary() bool { return true }
