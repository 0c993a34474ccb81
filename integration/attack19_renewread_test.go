package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack18 A6 through Redisson's read lock watchdog (ReadLockTask,
// RenewRead: a quorum operation sent to each master alone): a renewal
// that proxy P gave up on must not land on masters after the same
// reader's unlock and new, longer read lock through proxy Q and cut its
// timeout key to the watchdog's lease. It carries the lock
// writes' deadline on each master's clock (quorum's writeUntil), which
// until now only a unit test showed (TestRenewalsPastTheirDeadlineDoNothing).
//
// Three masters; P's links to masters 1 and 2 hold the first chunk
// naming the lock 700ms (node_timeout 500ms). The reader holds the read
// lock through Q; its renewal (2s) through P fails; it unlocks through Q
// and reads again for 20s, told it holds it; another reader takes it for
// 10s. The renewal lands on masters 1 and 2: there it would cut the
// reader's timeout key to 2s (the hash keeps its TTL), and the other
// reader's unlock, at 2.5s, finding no timeout key left alive, would
// delete the lock there. Then a writer must not get the write lock.
func TestAttack19LateReadLockRenewalDoesNotCutTheReadersLaterLock(t *testing.T) {
	c := startNodes(t, 3)
	const name = "attack19:rrenew"
	var h1, h2 attack18HoldFirst
	pAddrs := []string{c.addrs[0], startHoldRelay(t, c.addrs[1], &h1), startHoldRelay(t, c.addrs[2], &h2)}
	p := mustStartMonitored(t, attack16Config(), pAddrs...).Client
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	ctx := t.Context()
	r := readLockClient{name, "7d2e-0019:1"}
	renew := func(lease int) ([]int64, error) {
		return redis.NewScript(redissonReadRenew).Run(ctx, p, []string{name, "{" + name + "}"}, lease, 1, r.thread).Int64Slice()
	}
	r.mustTake(t, q, 30000)
	// P knows the script (its first renewal, all links fast).
	if got, err := renew(30000); err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("renewal through P, links fast: %v, %v; want [1]", got, err)
	}
	h1.reset(name, 1, 700*time.Millisecond)
	h2.reset(name, 1, 700*time.Millisecond)
	got, err := renew(2000)
	t.Logf("renewal (2s) through P with two links holding: %v, %v", got, err)
	if err == nil && len(got) == 1 && got[0] == 1 {
		t.Fatal("the renewal through P was granted; want it failed")
	}
	if v, err := r.unlock(t, q, "u1"); v != 1 || err != nil {
		t.Fatalf("the reader's unlock through Q: %d, %v; want 1", v, err)
	}
	start := time.Now()
	r.mustTake(t, q, 20000)
	expires := start.Add(20 * time.Second)
	r2 := readLockClient{name, "7d2e-0021:1"}
	r2.mustTake(t, q, 10000)
	time.Sleep(time.Second) // the renewal lands on masters 1 and 2
	dump := func(what string) {
		for i, d := range c.direct {
			t.Logf("%s: master %d %s = %v, PTTL %v; timeout key PTTL %v", what, i, name, d.HGetAll(ctx, name).Val(),
				d.PTTL(ctx, name).Val(), d.PTTL(ctx, r.timeoutPrefix()+":1").Val())
		}
	}
	dump("after P's renewal landed")
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	if v, err := r2.unlock(t, q, "u2"); err != nil {
		t.Fatalf("the other reader's unlock through Q: %d, %v", v, err)
	}
	err = redis.NewScript(redissonWriteLock).Run(ctx, q, []string{name}, 10000, "7d2e-0020:1:write").Err()
	if errors.Is(err, redis.Nil) && time.Now().Before(expires) {
		dump("after the writer's lock")
		t.Errorf("a writer took %s while the reader's lock is valid for %v more", name, time.Until(expires).Round(time.Millisecond))
	}
}
