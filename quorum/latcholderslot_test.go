package quorum

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// firstClaim lands another countDown's claim on the node (before) just
// ahead of the engine's own: that claim reached the node first.
type firstClaim struct {
	Node
	before func()
}

func (f firstClaim) LatchClaim(ctx context.Context, name string, claim, nonce, ballot int64) (LatchAnswer, error) {
	f.before()
	return f.Node.LatchClaim(ctx, name, claim, nonce, ballot)
}

// olderSlotStage is three masters where latch L was set and opened once
// (older), and a new trySetCount(2) was granted on masters 0 and 1 while
// master 2 was cut off (stage, between the two).
type olderSlotStage struct {
	procs []*redisProc
	plain *Engine
	cfg   Config
	m     LatchMessages
	got   func() int // zero messages since the new set
}

func newOlderSlotStage(t *testing.T, older func(s *olderSlotStage), between func(s *olderSlotStage)) *olderSlotStage {
	s := &olderSlotStage{procs: []*redisProc{startRedis(t), startRedis(t), startRedis(t)}}
	ctx := t.Context()
	s.m = LatchMessages{Publish: "publish", Channel: "latch20h:L", Message: "0"}
	setMsg := LatchMessages{Publish: "publish", Channel: "latch20h:L:set", Message: "set"}
	msgs := subscribe(t, s.procs[0].Client(t), s.m.Channel).Channel()
	s.cfg = Config{MaxTTL: time.Second, NodeTimeout: 500 * time.Millisecond}
	s.plain = New(s.cfg, s.procs[0].node(t), s.procs[1].node(t), s.procs[2].node(t))
	if _, err := s.plain.Incr(ctx, "seed", 1); err != nil { // seeds the deployment
		t.Fatal(err)
	}
	if ok, err := s.plain.LatchSet(ctx, "L", 1, setMsg); err != nil || !ok {
		t.Fatalf("the older LatchSet: %v, %v; want true", ok, err)
	}
	older(s)
	quietCount(msgs) // the older latch's
	var held [3]any
	cut := New(s.cfg, s.procs[0].node(t), s.procs[1].node(t), heldSet{Node: s.procs[2].node(t), held: &held})
	if ok, err := cut.LatchSet(ctx, "L", 2, setMsg); err != nil || !ok {
		t.Fatalf("LatchSet(2) with master 2 cut: %v, %v; want true", ok, err)
	}
	between(s)
	n := 0
	s.got = func() int {
		n += quietCount(msgs)
		return n
	}
	return s
}

// splitLastCountDowns makes the new latch's three countDowns: one, then
// Y, which counts master 1 down and claims there first, and X (an
// engine's), which counts master 0 down, reads open and claims; then
// one too many. Y decides as a countDown would. It checks one zero
// message.
func (s *olderSlotStage) splitLastCountDowns(t *testing.T) {
	ctx := t.Context()
	if err := s.plain.LatchCountDown(ctx, "L", s.m); err != nil {
		t.Fatal(err)
	}
	tag := s.procs[1].Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val()
	set, err := strconv.ParseInt(tag, 10, 64)
	if err != nil {
		t.Fatalf("master 1's slot tag %q: %v", tag, err)
	}
	if d, err := s.procs[1].node(t).LatchDecrement(ctx, "L", set); err != nil || d.New != 0 {
		t.Fatalf("Y's decrement on master 1: %+v, %v", d, err)
	}
	y := positiveNonce()
	var yClaims []int64
	claimY := func(i int) {
		read, _ := strconv.ParseInt(s.procs[i].Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(), 10, 64)
		a, err := s.procs[i].node(t).LatchClaim(ctx, "L", y, read, set)
		if err != nil {
			t.Fatal(err)
		}
		if a.Value != 0 {
			yClaims = append(yClaims, a.Value)
		}
	}
	x := New(s.cfg, s.procs[0].node(t), firstClaim{Node: s.procs[1].node(t), before: func() { claimY(1) }}, s.procs[2].node(t))
	if err := x.LatchCountDown(ctx, "L", s.m); err != nil {
		t.Fatal(err)
	}
	claimY(0)
	claimY(2)
	extra := 0
	if latchClaimWon(yClaims, y, 3, 2) {
		extra++ // Y sends it
	}
	if err := s.plain.LatchCountDown(ctx, "L", s.m); err != nil { // one too many
		t.Fatal(err)
	}
	if v, err := s.plain.LatchCount(ctx, "L"); err != nil || v != 0 {
		t.Fatalf("LatchCount after 3 countDowns of 2: %d, %v; want 0", v, err)
	}
	if n := s.got() + extra; n != 1 {
		for i, p := range s.procs {
			t.Logf("master %d: %v", i, p.Client(t).HGetAll(ctx, CountersKey).Val())
		}
		t.Errorf("%d zero messages for the new latch; want 1 (a waiter's await() waits for good)", n)
	}
}

// TestLatchDeniedSetUndoneOverOlderSlotSplitClaimsSendOneZeroMessage is
// attack15 L6' on real masters: latch L set and opened once, its opening
// claim lost to master 2, whose older slot stays free; a new
// trySetCount(2) granted on masters 0 and 1 misses master 2, where a
// second participant's trySetCount, denied, lands and is undone: it left
// "m:" "0" with no tag. The last two countDowns split their claims over
// masters 0 and 1: master 2 answered both nobody's, so neither claim
// held a quorum, nor could the tie-break run: no zero message, and a
// countDown too many sends none either. Now the undo takes "m:" too
// where the set found a free slot (latch_set.lua, latch_undo.lua), so
// the first claim to master 2 creates its slot there, of the ballot.
func TestLatchDeniedSetUndoneOverOlderSlotSplitClaimsSendOneZeroMessage(t *testing.T) {
	s := newOlderSlotStage(t, func(s *olderSlotStage) {
		older := New(s.cfg, s.procs[0].node(t), s.procs[1].node(t), lostClaim{Node: s.procs[2].node(t)})
		if err := older.LatchCountDown(t.Context(), "L", s.m); err != nil {
			t.Fatal(err)
		}
	}, func(s *olderSlotStage) {
		if ok, err := s.plain.LatchSet(t.Context(), "L", 2, LatchMessages{Publish: "publish", Channel: "latch20h:L:set", Message: "set"}); err != nil || ok {
			t.Fatalf("a second participant's LatchSet(2): %v, %v; want false (denied)", ok, err)
		}
		c := s.procs[2].Client(t).HGetAll(t.Context(), CountersKey).Val()
		for _, p := range []string{latchCountPrefix, latchNoncePrefix, latchClaimPrefix, latchSlotPrefix} {
			if v, ok := c[p+"L"]; ok {
				t.Errorf("master 2 after the denied set's undo has %sL %q; want no field of the latch", p, v)
			}
		}
	})
	s.splitLastCountDowns(t)
}

// TestLatchOlderOpeningsVoteOnMissedMasterSplitClaimsSendOneZeroMessage
// is attack15 L3 on real masters: latch L set and opened once, its
// opening claim (here 1, the least a claim can be) on every master; a
// new trySetCount(2) granted on masters 0 and 1 misses master 2, which
// keeps the older slot and its vote. The last two countDowns split
// their claims over masters 0 and 1; master 2 answered both with the
// older opening's claim, the least, so the tie-break sent nothing, and a
// countDown too many sends nothing either. Now master 2 keeps that vote
// by its ballot and votes for the new latch's (latch_claim.lua): one
// zero message.
func TestLatchOlderOpeningsVoteOnMissedMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	s := newOlderSlotStage(t, func(s *olderSlotStage) {
		ctx := t.Context()
		for _, p := range s.procs {
			tag, _ := strconv.ParseInt(p.Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(), 10, 64)
			if d, err := p.node(t).LatchDecrement(ctx, "L", tag); err != nil || d.New != 0 {
				t.Fatalf("the older countDown: %+v, %v", d, err)
			}
			if a, err := p.node(t).LatchClaim(ctx, "L", 1, tag, tag); err != nil || a.Value != 1 {
				t.Fatalf("the older opening's claim: %+v, %v", a, err)
			}
		}
	}, func(*olderSlotStage) {})
	s.splitLastCountDowns(t)
}

// TestLatchOlderDeletesTombstoneOnMissedMasterSplitClaimsSendOneZeroMessage
// is attack15 L4 on real masters: latch L set, opened and deleted, a
// tombstone ("o:" -1) on every master; a new trySetCount(2) granted on
// masters 0 and 1 misses master 2, which keeps the tombstone. It
// answered every claim of the new latch nobody's, so the last two
// countDowns' split claims decided none, and a countDown too many sent
// none either: no zero message. Now the tombstone remembers the ballot
// its master voted for ("d:"), and a claim of the new latch's ballot
// votes there (latch_claim.lua): one zero message.
func TestLatchOlderDeletesTombstoneOnMissedMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	for try := 0; ; try++ {
		var older string
		s := newOlderSlotStage(t, func(s *olderSlotStage) {
			ctx := t.Context()
			older = s.procs[2].Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val()
			if err := s.plain.LatchCountDown(ctx, "L", s.m); err != nil {
				t.Fatal(err)
			}
			if ok, err := s.plain.LatchDelete(ctx, "L", s.m); err != nil || ok {
				t.Fatalf("the older latch's delete: %v, %v; want false (opened: no count)", ok, err)
			}
			for i, p := range s.procs {
				if v := p.Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(); v != "-1" {
					t.Fatalf("master %d after the delete: slot tag %q; want the tombstone -1", i, v)
				}
			}
		}, func(*olderSlotStage) {})
		// The memory keeps a bit per ballot: where the new ballot shares
		// the older one's (1 in 52), master 2 answers nobody's still.
		tag := s.procs[1].Client(t).HGet(t.Context(), CountersKey, latchSlotPrefix+"L").Val()
		if latchVotedBitForTest(t, tag) == latchVotedBitForTest(t, older) && try < 3 {
			continue
		}
		s.splitLastCountDowns(t)
		return
	}
}

// latchVotedBitForTest is latch_voted.lua's ballotbit, as a bit number.
func latchVotedBitForTest(t *testing.T, ballot string) int64 {
	t.Helper()
	digits := ballot[max(len(ballot)-9, 0):]
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		t.Fatalf("ballot %q: %v", ballot, err)
	}
	return v / 2 % 52
}

// TestLatchTwoOlderVotesOnMissedMasterSplitClaimsSendOneZeroMessage is
// the rest of L3 on real masters: latch L set and opened twice, each
// opening's claim on every master (the second's 1, the least a claim can
// be), so each master keeps the first vote by its ballot ("p:") beside
// the second; a new trySetCount(2) granted on masters 0 and 1 misses
// master 2. It answered both last countDowns' claims with the second
// opening's vote, the least, so the tie-break sent nothing, and a
// countDown too many sends nothing either. Now master 2 forgets the
// first vote, its ballot remembered apart ("x:"), keeps the second by
// its ballot and votes for the new latch's (latch_claim.lua): one zero
// message.
func TestLatchTwoOlderVotesOnMissedMasterSplitClaimsSendOneZeroMessage(t *testing.T) {
	s := newOlderSlotStage(t, func(s *olderSlotStage) {
		ctx := t.Context()
		open := func(claim int64) {
			for _, p := range s.procs {
				tag, _ := strconv.ParseInt(p.Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(), 10, 64)
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
		if p := s.procs[2].Client(t).HGet(ctx, CountersKey, latchKeptBallotPrefix+"L").Val(); p == "" {
			t.Fatal("master 2 keeps no vote by its ballot after the second opening")
		}
	}, func(*olderSlotStage) {})
	s.splitLastCountDowns(t)
}
