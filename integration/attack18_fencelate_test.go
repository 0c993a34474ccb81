package integration

import (
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// A known defect (docs/guarantees.md, "Known defects"; attack18 A7): it
// fails until the fix. FENCE's write-back round may land late
// (landsLate: F4b's kill spares it), and it sets the key's hold record
// to its T wherever the token holds the key. One that lands after the
// same token's next hold got a higher T sets that hold's record back to
// the older T: a repeat FENCE of the later hold must never get a lower
// T.
//
// Three masters, each behind a relay; masters 0 and 1 hold the first
// write-back naming the key 1500ms. Their counters are raised behind
// the proxy (by 10 and 20), so no quorum of the first FENCE's answers
// agrees and it writes back T1; that fails on them (node_timeout
// 500ms), and the FENCE with it. A releases, obtains K again with the
// same token and FENCEs: T2. The held write-backs land; A's repeat FENCE
// must get T2 or more.
func TestAttack18LateFenceWriteBackDoesNotLowerTheLaterHoldsToken(t *testing.T) {
	c := startNodes(t, 3)
	holds := make([]*attack18HoldFirst, 3)
	addrs := make([]string, 3)
	for i, a := range c.addrs {
		holds[i] = &attack18HoldFirst{}
		addrs[i] = startHoldRelay(t, a, holds[i])
	}
	const first, second = 0, 1
	p := mustStartMonitored(t, attack16Config(), addrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key, tokA = "attack18:fence", "attack18-token-A"
	fence := func(what string) int64 {
		v, err := p.Do(ctx, "FENCE", key, tokA).Int64()
		t.Logf("%s: FENCE = %d, %v", what, v, err)
		return v
	}
	obtain := func() *redislock.Lock {
		l, err := redislock.New(p).Obtain(ctx, key, 20*time.Second, &redislock.Options{Token: tokA})
		if err != nil {
			t.Fatalf("A's obtain: %v", err)
		}
		return l
	}
	// Warm: every master seeded, the scripts known.
	l := obtain()
	fence("warm-up")
	if err := l.Release(ctx); err != nil {
		t.Fatalf("warm-up release: %v", err)
	}
	l = obtain()
	c.direct[first].HIncrBy(ctx, quorum.CountersKey, quorum.FenceField, 10)
	c.direct[second].HIncrBy(ctx, quorum.CountersKey, quorum.FenceField, 20)
	for _, i := range []int{first, second} {
		holds[i].reset(quorum.HoldPrefix+key, 1, 1500*time.Millisecond)
	}
	fence("the first hold (its write-back held on two masters)")
	for _, i := range []int{first, second} {
		if conns, _ := holds[i].held(); len(conns) != 1 {
			t.Skipf("master %d held %d write-backs; want 1 (the FENCE agreed, or wrote back nowhere)", i, len(conns))
		}
	}
	time.Sleep(100 * time.Millisecond) // the write-back's connections dropped
	if err := l.Release(ctx); err != nil {
		t.Fatalf("A's release: %v", err)
	}
	obtain()
	t2 := fence("the second hold")
	if t2 <= 0 {
		t.Fatalf("the second hold's FENCE failed")
	}
	time.Sleep(1500 * time.Millisecond) // the held write-backs land
	for i, d := range c.direct {
		t.Logf("master %d: record %q, counter %q", i, d.Get(ctx, quorum.HoldPrefix+key).Val(), d.HGet(ctx, quorum.CountersKey, quorum.FenceField).Val())
	}
	if t3 := fence("the second hold, again"); t3 > 0 && t3 < t2 {
		t.Errorf("a repeat FENCE of the second hold got %d, below its first %d", t3, t2)
	}
}
