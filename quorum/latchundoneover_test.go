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
	*redisNode
	before func()
}

func (f firstClaim) latchClaim(ctx context.Context, name string, claim, nonce, ballot int64) (latchAnswer, error) {
	f.before()
	return f.redisNode.latchClaim(ctx, name, claim, nonce, ballot)
}

// TestLatchDeniedSetUndoneOverOlderSlotSplitClaimsSendOneZeroMessage is
// attack15 L6' on real masters: latch L set and opened once (its
// opening claim lost to master 2, whose older slot stays free); a new
// trySetCount(2) granted on masters 0 and 1 misses master 2, where a
// second participant's trySetCount, denied, lands and is undone: it
// left "m:" "0" with no tag. After one countDown, the last two split
// their claims over masters 0 and 1 (Y reached master 1 first). Master
// 2 answered both nobody's, so neither claim held a quorum, nor could
// the tie-break run: no zero message, and a later countDown sends none
// either. Now the undo takes "m:" too where the set found a free slot
// (latch_set.lua, latch_undo.lua), so the first claim to master 2
// creates its slot there, of the ballot, and one zero message goes out.
func TestLatchDeniedSetUndoneOverOlderSlotSplitClaimsSendOneZeroMessage(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	m := LatchMessages{Publish: "publish", Channel: "latch20h:L6", Message: "0"}
	setMsg := LatchMessages{Publish: "publish", Channel: "latch20h:L6:set", Message: "set"}
	sub := procs[0].admin(t).Subscribe(ctx, m.Channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := sub.Channel()
	got := 0
	wait := func() {
		for {
			select {
			case <-msgs:
				got++
			case <-time.After(300 * time.Millisecond):
				return
			}
		}
	}
	cfg := Config{MaxTTL: time.Second, NodeTimeout: 500 * time.Millisecond}
	plain := New(cfg, procs[0].node(t), procs[1].node(t), procs[2].node(t))
	if _, err := plain.Incr(ctx, "seed", 1); err != nil { // seeds the deployment
		t.Fatal(err)
	}
	// The older latch: set, opened, its claim lost to master 2.
	if ok, err := plain.LatchSet(ctx, "L", 1, setMsg); err != nil || !ok {
		t.Fatalf("the older LatchSet: %v, %v; want true", ok, err)
	}
	older := New(cfg, procs[0].node(t), procs[1].node(t), lostClaim{redisNode: procs[2].node(t)})
	if err := older.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatal(err)
	}
	wait()
	if got != 1 {
		t.Fatalf("the older latch's opening sent %d zero messages; want 1", got)
	}
	got = 0
	// The new latch, granted on masters 0 and 1; then a denied set.
	var held [3]any
	cut := New(cfg, procs[0].node(t), procs[1].node(t), heldSet{redisNode: procs[2].node(t), held: &held})
	if ok, err := cut.LatchSet(ctx, "L", 2, setMsg); err != nil || !ok {
		t.Fatalf("LatchSet(2) with master 2 cut: %v, %v; want true", ok, err)
	}
	if ok, err := plain.LatchSet(ctx, "L", 2, setMsg); err != nil || ok {
		t.Fatalf("a second participant's LatchSet(2): %v, %v; want false (denied)", ok, err)
	}
	c := procs[2].admin(t).HGetAll(ctx, CountersKey).Val()
	for _, p := range []string{latchCountPrefix, latchNoncePrefix, latchClaimPrefix, latchSlotPrefix} {
		if v, ok := c[p+"L"]; ok {
			t.Errorf("master 2 after the denied set's undo has %sL %q; want no field of the latch", p, v)
		}
	}
	if err := plain.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatal(err)
	}
	// Y: a countDown that counted master 1 down first, and claims there
	// first; X (the engine's) counts master 0 down and reads open.
	tag := procs[1].admin(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val()
	s, err := strconv.ParseInt(tag, 10, 64)
	if err != nil {
		t.Fatalf("master 1's slot tag %q: %v", tag, err)
	}
	if d, err := procs[1].node(t).latchDecr(ctx, "L", s); err != nil || d.new != 0 {
		t.Fatalf("Y's decrement on master 1: %+v, %v", d, err)
	}
	y := positiveNonce()
	yClaims := make([]int64, 0, 3)
	claimY := func(i int, nonce int64) {
		a, err := procs[i].node(t).latchClaim(ctx, "L", y, nonce, s)
		if err != nil {
			t.Fatal(err)
		}
		if a.v != 0 {
			yClaims = append(yClaims, a.v)
		}
	}
	x := New(cfg, procs[0].node(t), firstClaim{redisNode: procs[1].node(t), before: func() { claimY(1, s) }}, procs[2].node(t))
	if err := x.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatal(err)
	}
	claimY(0, s)
	claimY(2, 0) // Y read no tag on master 2
	if latchClaimWon(yClaims, y, 3, 2) {
		got++ // Y sends it
	}
	wait()
	if err := plain.LatchCountDown(ctx, "L", m); err != nil { // one too many
		t.Fatal(err)
	}
	wait()
	if v, err := plain.LatchCount(ctx, "L"); err != nil || v != 0 {
		t.Fatalf("LatchCount after 3 countDowns of 2: %d, %v; want 0", v, err)
	}
	if got != 1 {
		for i, p := range procs {
			t.Logf("master %d: %v", i, p.admin(t).HGetAll(ctx, CountersKey).Val())
		}
		t.Errorf("%d zero messages for the new latch; want 1 (a waiter's await() waits for good)", got)
	}
}
