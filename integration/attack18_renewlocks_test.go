package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack18 A6: attack17 F4 through a Redisson watchdog renewal (pexpire
// to the watchdog's lease) that proxy P gave up on: it must not land on
// masters after the same owner's unlock and new, longer lock through
// proxy Q (one client whose connections a load balancer spreads over
// two proxies) and cut that lock, so that C takes it while the owner's
// lock is valid. One Redis runs the renewal before the unlock. The
// renewal is renewExpiration, served by its effect: the wrapped run
// carries a deadline on each master's clock (quorum's writeUntil) and
// does nothing past it (the wrapper's late check).
func TestAttack18LateRedissonRenewalDoesNotCutTheOwnersLaterLock(t *testing.T) {
	attack18LateRenewal(t, func(ctx context.Context, cl *redis.Client, key string, lease int, owner string) (bool, error) {
		v, err := redis.NewScript(redissonRenew).Run(ctx, cl, []string{key}, lease, owner).Int64()
		return v == 1, err
	})
}

// The same through Redisson's newer watchdog, LockTask (RenewLocks: a
// quorum operation of its own, sent to each master alone), which
// carries the same deadline.
func TestAttack18LateRedissonLockTaskRenewalDoesNotCutTheOwnersLaterLock(t *testing.T) {
	attack18LateRenewal(t, func(ctx context.Context, cl *redis.Client, key string, lease int, owner string) (bool, error) {
		v, err := redis.NewScript(redissonRenewAll).Run(ctx, cl, []string{key}, lease, owner).Int64Slice()
		return len(v) == 1 && v[0] == 1, err
	})
}

// attack18LateRenewal: three masters; P's links to masters 1 and 2 hold
// the first chunk naming the key 700ms (node_timeout 500ms). The owner
// holds K through Q; its renewal (2s) through P fails; it unlocks K
// through Q and locks it again for 20s, told it holds it. The renewal
// lands on masters 1 and 2 (2s there, without a deadline). At 2.5s C
// must not get K.
func attack18LateRenewal(t *testing.T, renew func(ctx context.Context, cl *redis.Client, key string, lease int, owner string) (bool, error)) {
	c := startNodes(t, 3)
	const key = "attack18:renew"
	var h1, h2 attack18HoldFirst
	pAddrs := []string{c.addrs[0], startHoldRelay(t, c.addrs[1], &h1), startHoldRelay(t, c.addrs[2], &h2)}
	p := mustStartMonitored(t, attack16Config(), pAddrs...).Client
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	ctx := t.Context()
	lock, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock)
	const owner, other = "9f1c2d3e-aaaa-bbbb-cccc-000000000018:1", "9f1c2d3e-aaaa-bbbb-cccc-000000000018:2"
	channel := "redisson_lock__channel:{" + key + "}"
	keys := func(req string) []string {
		return []string{key, channel, "redisson_unlock_latch:{" + key + "}:" + req}
	}
	taken := func(cl *redis.Client, owner string, lease int) error {
		if err := lock.Run(ctx, cl, []string{key}, lease, owner).Err(); !errors.Is(err, redis.Nil) {
			return errors.New("not taken: " + errString(err))
		}
		return nil
	}
	if err := taken(q, owner, 30000); err != nil {
		t.Fatalf("the owner's lock through Q: %v", err)
	}
	// P knows the wrapper (its first renewal, all links fast).
	if ok, err := renew(ctx, p, key, 30000, owner); !ok || err != nil {
		t.Fatalf("renewal through P, links fast: %v, %v; want renewed", ok, err)
	}
	h1.reset(key, 1, 700*time.Millisecond)
	h2.reset(key, 1, 700*time.Millisecond)
	ok, err := renew(ctx, p, key, 2000, owner)
	t.Logf("renewal (2s) through P with two links holding: %v, %v", ok, err)
	if err == nil && ok {
		t.Fatal("the renewal through P was granted; want it failed")
	}
	if v, err := unlock.Run(ctx, q, keys("u1"), 0, 30000, owner, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
		t.Fatalf("the owner's unlock through Q: %d, %v; want 1", v, err)
	}
	start := time.Now()
	if err := taken(q, owner, 20000); err != nil {
		t.Fatalf("the owner's lock again through Q (20s): %v", err)
	}
	expires := start.Add(20 * time.Second)
	time.Sleep(time.Second) // the renewal lands on masters 1 and 2
	dump := func(what string) {
		for i, d := range c.direct {
			t.Logf("%s: master %d %s = %v, PTTL %v", what, i, key, d.HGetAll(ctx, key).Val(), d.PTTL(ctx, key).Val())
		}
	}
	dump("after P's renewal landed")
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	if err := taken(q, other, 10000); err == nil && time.Now().Before(expires) {
		dump("after C's lock")
		t.Errorf("C took %s while the owner's lock is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
