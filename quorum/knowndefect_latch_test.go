//go:build knowndefect

package quorum

import "testing"

// TestLatchOlderDeletesTombstoneOnMissedMasterSplitClaimsSendOneZeroMessage
// is attack15 L4 on real masters (not fixed: it fails): latch L set,
// opened and deleted, a tombstone ("o:" -1) on every master; a new
// trySetCount(2) granted on masters 0 and 1 misses master 2, which keeps
// the tombstone. It answers every claim of the new latch nobody's, so
// the last two countDowns' split claims decide none, and a countDown too
// many sends none either: no zero message.
func TestLatchOlderDeletesTombstoneOnMissedMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	s := newOlderSlotStage(t, func(s *olderSlotStage) {
		ctx := t.Context()
		if err := s.plain.LatchCountDown(ctx, "L", s.m); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.plain.LatchDelete(ctx, "L", s.m); err != nil || ok {
			t.Fatalf("the older latch's delete: %v, %v; want false (opened: no count)", ok, err)
		}
		for i, p := range s.procs {
			if v := p.admin(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(); v != "-1" {
				t.Fatalf("master %d after the delete: slot tag %q; want the tombstone -1", i, v)
			}
		}
	}, func(*olderSlotStage) {})
	s.splitLastCountDowns(t)
}
