package integration

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack10 K3 (the new-deployment rule of fenceseed.go, as F2): a
// majority restarted empty beside a master that has no counter (it
// missed the latch's set, as a master down then) must not read as a new
// deployment, seeded at zero: the latch would read open with no
// countDown. The docs (and TestRedissonLatchMajorityRestartedEmpty)
// promise NOQUORUM, never 0, with 2 of 3 restarted empty. 3 masters:
// trySetCount(3) on A and B (C's count deleted: it missed the set; its
// hash keeps "seeded" alone); A and B restart empty; getCount, at once
// and after the seeding's wait, must not read 0.
func TestAttack10LatchMajorityRestartedBesideAMasterThatMissedTheSet(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := latchEngineConfig(time.Second) // the seeding waits max_ttl
	p := startProxy(t, latchConfig(), qcfg, c.addrs...)
	const name = "latch:k3"
	l := newLatchClient(p.Client, name)
	ctx := t.Context()
	if v, err := l.trySetCount(t, 3); v != 1 || err != nil {
		t.Fatalf("trySetCount(3) = %d, %v", v, err)
	}
	// C missed the set: none of its fields (its claim slot's tag, "o:",
	// with no count would read as the set counted down to 0 there).
	c.direct[2].HDel(ctx, quorum.CountersKey, "l:"+name, "n:"+name, "o:"+name, "m:"+name)
	t.Logf("C's counters: %v", c.direct[2].HGetAll(ctx, quorum.CountersKey).Val())
	if v, err := l.getCount(t); v != 3 || err != nil {
		t.Fatalf("getCount with C missing the set = %d, %v; want 3", v, err)
	}
	c.procs[0] = restartRedis(t, c.procs[0])
	c.procs[1] = restartRedis(t, c.procs[1])
	for _, when := range []string{"at once", "after the wait"} {
		if when != "at once" {
			time.Sleep(1500 * time.Millisecond)
		}
		l.getCount(t) // marks, then seeds
		v, err := l.getCount(t)
		t.Logf("%s: getCount = %d, %v", when, v, err)
		if err == nil && v == 0 {
			t.Errorf("2 of 3 masters restarted empty, %s: the count-3 latch reads OPEN with no countDown (A %v, B %v); the docs promise NOQUORUM, never 0",
				when, c.direct[0].HGetAll(ctx, quorum.CountersKey).Val(), c.direct[1].HGetAll(ctx, quorum.CountersKey).Val())
		}
	}
}
