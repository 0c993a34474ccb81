//go:build knowndefect

package quorum

import (
	"strconv"
	"testing"
)

// TestLatchTwoOlderVotesOnMissedMasterSplitClaimsSendOneZeroMessage is
// the rest of L3 on real masters (not fixed: it fails): latch L set and
// opened twice, each opening's claim on every master (the second's 1,
// the least a claim can be), so each master keeps the first vote by its
// ballot ("p:") beside the second; a new trySetCount(2) granted on
// masters 0 and 1 misses master 2. It answers both last countDowns'
// claims with the second opening's vote, the least, so the tie-break
// sends nothing, and a countDown too many sends nothing either.
func TestLatchTwoOlderVotesOnMissedMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	s := newOlderSlotStage(t, func(s *olderSlotStage) {
		ctx := t.Context()
		open := func(claim int64) {
			for _, p := range s.procs {
				tag, _ := strconv.ParseInt(p.admin(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(), 10, 64)
				if d, err := p.node(t).LatchDecrement(ctx, "L", tag); err != nil || d.New != 0 {
					t.Fatalf("an older countDown: %+v, %v", d, err)
				}
				if a, err := p.node(t).LatchClaim(ctx, "L", claim, tag, tag); err != nil || a.Value != claim {
					t.Fatalf("an older opening's claim: %+v, %v", a, err)
				}
			}
		}
		open(2)
		if ok, err := s.plain.LatchSet(ctx, "L", 1, LatchMessages{Publish: "publish", Channel: "latch20h:L:set", Message: "set"}); err != nil || !ok {
			t.Fatalf("the second older LatchSet: %v, %v; want true", ok, err)
		}
		open(1)
		if p := s.procs[2].admin(t).HGet(ctx, CountersKey, latchKeptBallotPrefix+"L").Val(); p == "" {
			t.Fatal("master 2 keeps no vote by its ballot after the second opening")
		}
	}, func(*olderSlotStage) {})
	s.splitLastCountDowns(t)
}
