package integration

import (
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack18 A7: FENCE's write-back round sets the key's hold record to
// its T wherever the token holds the key. One that lands late, after
// the same token's next hold got a higher T, sets that hold's record
// back to the older T: a repeat FENCE of the later hold must never get a
// lower T. It went on a connection F4b's kill spared (its own, then:
// landsLate); it now goes on the lock operations' connection, whose
// kill orders it behind the release's new one.
//
// Three masters, each behind a relay; masters 0 and 1 hold the first
// write-back naming the key 1500ms. Their counters are raised behind
// the proxy (by 10 and 20), so no quorum of the first FENCE's answers
// agrees and it writes back T1; that fails on them (node_timeout
// 500ms), and the FENCE with it. A releases, obtains K again with the
// same token and FENCEs (through P, or all three through another
// proxy, Q): T2.
// The held write-backs land; A's repeat FENCE must get T2 or more.
func TestAttack18LateFenceWriteBackDoesNotLowerTheLaterHoldsToken(t *testing.T) {
	attack18LateFenceWriteBack(t, false, true)
}

// Across proxies no kill orders the late write-back: P here runs no
// monitor, so it has read no master's clock and its write-back carries
// no deadline (as from a proxy before its first probe). The record of
// the same token with a higher T stays where it lands
// (counter_write.lua); TestLockWritesPastTheirDeadlineDoNothing in
// quorum/redisnode shows a dated late write-back doing nothing.
func TestAttack18LateFenceWriteBackDoesNotLowerTheLaterHoldsTokenThroughAnotherProxy(t *testing.T) {
	attack18LateFenceWriteBack(t, true, false)
}

// attack18LateFenceWriteBack runs the scenario above, the second hold
// through Q if throughQ, P then monitored if pMonitored.
func attack18LateFenceWriteBack(t *testing.T, throughQ, pMonitored bool) {
	c := startNodes(t, 3)
	holds := make([]*attack18HoldFirst, 3)
	addrs := make([]string, 3)
	for i, a := range c.addrs {
		holds[i] = &attack18HoldFirst{}
		addrs[i] = startHoldRelay(t, a, holds[i])
	}
	const first, second = 0, 1
	var p *redis.Client
	q := p // the second hold's proxy
	if !throughQ {
		p = mustStartMonitored(t, attack16Config(), addrs...).Client
		q = p
	} else {
		// P dials no connection after the FENCE (as one that crashed, or
		// went idle): none of its kills orders the late write-back.
		if pMonitored {
			p = mustStartMonitored(t, attack16Config(), addrs...).Client
		} else {
			p = startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), addrs...).Client
		}
		q = mustStartMonitored(t, attack16Config(), c.addrs...).Client
		attack16Warm(t, q)
	}
	attack16Warm(t, p)
	ctx := t.Context()
	const key, tokA = "attack18:fence", "attack18-token-A"
	fenceOn := func(cl *redis.Client, what string) int64 {
		v, err := cl.Do(ctx, "FENCE", key, tokA).Int64()
		t.Logf("%s: FENCE = %d, %v", what, v, err)
		return v
	}
	fence := func(what string) int64 { return fenceOn(p, what) }
	obtainOn := func(cl *redis.Client) *redislock.Lock {
		l, err := redislock.New(cl).Obtain(ctx, key, 20*time.Second, &redislock.Options{Token: tokA})
		if err != nil {
			t.Fatalf("A's obtain: %v", err)
		}
		return l
	}
	obtain := func() *redislock.Lock { return obtainOn(p) }
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
	if throughQ && pMonitored {
		// P's monitor dials masters 0 and 1 again at its next probe, and
		// the new connection's CLIENT KILL would order the write-back
		// first: its link holds that too (as a cut one would), so the
		// write-back's deadline alone stands in the way.
		for _, i := range []int{first, second} {
			holds[i].reset("kill", 10, 2500*time.Millisecond)
		}
	}
	time.Sleep(100 * time.Millisecond) // the write-back's connections dropped
	if !throughQ {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("A's release: %v", err)
		}
	} else if n, err := q.Eval(ctx, distlockRelease, []string{key}, tokA).Int(); n != 1 || err != nil {
		t.Fatalf("A's release through Q: %d, %v", n, err)
	}
	obtainOn(q)
	t2 := fenceOn(q, "the second hold")
	if t2 <= 0 {
		t.Fatalf("the second hold's FENCE failed")
	}
	time.Sleep(1500 * time.Millisecond) // the held write-backs land
	for i, d := range c.direct {
		t.Logf("master %d: record %q, counter %q", i, d.Get(ctx, quorum.HoldPrefix+key).Val(), d.HGet(ctx, quorum.CountersKey, quorum.FenceField).Val())
	}
	if t3 := fenceOn(q, "the second hold, again"); t3 > 0 && t3 < t2 {
		t.Errorf("a repeat FENCE of the second hold got %d, below its first %d", t3, t2)
	}
}
