package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2ReadLockTimeoutPrefixClobbersALock: Redisson's read lock
// names its timeout keys from KEYS[2] (prefix ":" n). Through the proxy a
// take whose prefix is another lock's name less ":1" overwrites that
// lock's token on every master (SET without NX), and the read unlock
// deletes it: a second client then gets OK for a key the first still
// holds. The effect path refuses a script that writes over another
// token's lock; the read lock path must not do it either.
func TestAttack2ReadLockTimeoutPrefixClobbersALock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()

	if ok, err := cl.SetNX(ctx, "job:1", "victim", 30*time.Second).Result(); !ok || err != nil {
		t.Fatalf("victim's SET NX = %v, %v; want OK", ok, err)
	}
	_, takeErr := redis.NewScript(redissonReadLock).Run(ctx, cl, []string{"rl", "job"}, 30000, "x:1", "x:1:write").Result()
	for _, i := range c.live() {
		if v := c.direct[i].Get(ctx, "job:1").Val(); v != "victim" {
			t.Errorf("node %d: job:1 = %q after a read take with prefix %q (take: %v); want the victim's token kept", i, v, "job", takeErr)
		}
	}
	keys := []string{"rl", "redisson_rwlock:{rl}", "job", "{rl}", "redisson_unlock_latch:{rl}:r1"}
	unlockRes, unlockErr := redis.NewScript(redissonReadUnlock).Run(ctx, cl, keys, 0, "x:1", "PUBLISH", 3000).Result()
	ok, err := cl.SetNX(ctx, "job:1", "thief", 30*time.Second).Result()
	if ok {
		t.Fatalf("a second SET NX job:1 got OK while the victim holds it (read take: %v; read unlock: %v, %v)", takeErr, unlockRes, unlockErr)
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("second SET NX = %v", err)
	}
}

// TestAttack2ReadLockShortensAnRLock: a read lock taken on a name an
// RLock holds (a hash without Redisson's mode field) is granted, and its
// take sets the RLock's hash to the read lease. The RLock's holder was
// told 30s; once the read lease runs out another RLock take gets OK. The
// effect path refuses a change of another token's hold's expiry (the
// write lock's watchdog beside a reader, ba2841c); the read take does it.
func TestAttack2ReadLockShortensAnRLock(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	lock := redis.NewScript(redissonLock)
	if err := lock.Run(ctx, cl, []string{"k"}, "30000", "victim:1").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("victim's RLock = %v; want nil (acquired)", err)
	}
	_, takeErr := redis.NewScript(redissonReadLock).Run(ctx, cl, []string{"k", "{k}:x:1:rwlock_timeout"}, 1000, "x:1", "x:1:write").Result()
	time.Sleep(1200 * time.Millisecond)
	if err := lock.Run(ctx, cl, []string{"k"}, "30000", "thief:1").Err(); errors.Is(err, redis.Nil) {
		t.Fatalf("a second RLock on k got nil (acquired) 1.2s into the victim's 30s (read take on k: %v)", takeErr)
	}
}

// TestAttack2ReadRenewalShortensAnotherReader: reader B's watchdog
// renewal with a short lease sets the shared hash's expiry to it, below
// reader A's lease (the take keeps the longer of the two, the renewal
// does not): once it runs out a writer gets the write lock while A was
// told 30s.
func TestAttack2ReadRenewalShortensAnotherReader(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	a, b := readLockClient{"rl", "aaaa:1"}, readLockClient{"rl", "bbbb:1"}
	a.mustTake(t, cl, 30000)
	b.mustTake(t, cl, 30000)
	got, err := redis.NewScript(redissonReadRenew).Run(ctx, cl, []string{"rl", "{rl}"}, 1000, 1, b.thread).Int64Slice()
	if err != nil || len(got) != 1 || got[0] != 1 {
		t.Fatalf("B's renewal = %v, %v; want [1]", got, err)
	}
	time.Sleep(1200 * time.Millisecond)
	if err := redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{"rl"}, 30000, "wwww:1:write").Err(); errors.Is(err, redis.Nil) {
		t.Fatalf("write lock granted (nil) 1.2s into reader A's 30s lease, after reader B renewed with 1s")
	}
}

// TestAttack2ReadUnlockLatchOutlivesMaxTTL: Redisson's read unlock sets
// its latch (KEYS[5]) with PX ARGV[4]; the proxy checks only that it is
// above 0. Any key name gets a value that outlives max_ttl, which every
// other TTL through the proxy is bounded by (the restart quarantine is
// max_ttl long), and then that name cannot be locked.
func TestAttack2ReadUnlockLatchOutlivesMaxTTL(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	keys := []string{"none", "redisson_rwlock:{none}", "{none}:x:1:rwlock_timeout", "{none}", "job:9"}
	res, err := redis.NewScript(redissonReadUnlock).Run(ctx, cl, keys, 0, "x:1", "PUBLISH", 10*365*24*3600*1000).Result()
	for _, i := range c.live() {
		if ms := c.direct[i].PTTL(ctx, "job:9").Val(); ms > 24*time.Hour {
			t.Errorf("node %d: PTTL job:9 = %v after a read unlock naming it as its latch (unlock: %v, %v); want nothing over max_ttl", i, ms, res, err)
		}
	}
}

// TestAttack2ReadUnlockKeyPrefixDropsAnotherReader: the read unlock finds
// the other readers' timeout keys from its KEYS[4]; one whose KEYS[4] is
// not the lock's "{name}" finds none, deletes the shared hash and answers
// 1: a writer then gets the write lock while reader A holds it.
func TestAttack2ReadUnlockKeyPrefixDropsAnotherReader(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	a, b := readLockClient{"rl", "aaaa:1"}, readLockClient{"rl", "bbbb:1"}
	a.mustTake(t, cl, 30000)
	b.mustTake(t, cl, 30000)
	keys := []string{"rl", "redisson_rwlock:{rl}", b.timeoutPrefix(), "{elsewhere}", "redisson_unlock_latch:{rl}:r1"}
	v, uerr := redis.NewScript(redissonReadUnlock).Run(ctx, cl, keys, 0, b.thread, "PUBLISH", 3000).Int64()
	if err := redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{"rl"}, 30000, "wwww:1:write").Err(); errors.Is(err, redis.Nil) {
		t.Fatalf("write lock granted (nil) while reader A holds rl (B's unlock with KEYS[4] {elsewhere}: %d, %v)", v, uerr)
	}
}
