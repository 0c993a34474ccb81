package integration

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack7 B2 (what 4cbdc8b missed of attack6 A3). tokenKeys refuses every
// script naming an RFencedLock token counter, except RFencedLock's own
// scripts (runFencedLock returns before it), which check only that KEYS[2]
// is KEYS[1]'s token name. A lock whose name is another lock's token
// counter (Redisson names it redisson_lock_token:<name> when the name
// holds a brace) takes a lock hash on the counter's name: one Redis,
// whose counter is that key, answers WRONGTYPE.
func TestAttack7FencedLockNamedAfterAnotherLocksTokenCounter(t *testing.T) {
	run := func(t *testing.T, cl *redis.Client) (any, error) {
		ctx := t.Context()
		x := fencedLockClient{"a7x", "a7-uuid:1"}
		x.mustToken(t, cl) // x's counter, redisson_lock_token:{a7x}, is 1
		y := fencedLockClient{"redisson_lock_token:{a7x}", "a7-uuid:2"}
		keys := []string{y.name, "redisson_lock_token:" + y.name} // Redisson's name: the name holds a brace
		return redis.NewScript(redissonFencedToken).Run(ctx, cl, keys, 30000, y.thread).Result()
	}
	one, oneErr := run(t, direct(t, startRedis(t).Addr))
	_, p := setup(t, 3, proxy.Config{})
	got, err := run(t, p.Client)
	if err == nil {
		t.Errorf("lockAndGetToken of a lock named after lock a7x's token counter, through the proxy = %v, %v: a lock hash taken on the counter's name; one Redis = %v, %v (or a refusal)",
			got, err, one, oneErr)
	}
}

// attack7 B2b: the same hole through Redisson's read lock script, which
// run serves (runReadLock) before tokenKeys: a read lock taken on a name
// that is an RFencedLock's token counter. One Redis answers WRONGTYPE.
func TestAttack7ReadLockOnAnRFencedLockTokenName(t *testing.T) {
	run := func(t *testing.T, cl *redis.Client) (int64, error) {
		x := fencedLockClient{"a7y", "a7-uuid:1"}
		x.mustToken(t, cl) // redisson_lock_token:{a7y} is 1
		// Redisson's names for a lock name holding a brace: no braces added.
		const name, thread = "redisson_lock_token:{a7y}", "a7-uuid:2"
		keys := []string{name, name + ":" + thread + ":rwlock_timeout"}
		return redis.NewScript(redissonReadLock).Run(t.Context(), cl, keys, 30000, thread, thread+":write").Int64()
	}
	one, oneErr := run(t, direct(t, startRedis(t).Addr))
	_, p := setup(t, 3, proxy.Config{})
	got, err := run(t, p.Client)
	if err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("a read lock on lock a7y's token counter name through the proxy = %d, %v (nil: taken); one Redis = %d, %v (or a refusal)",
			got, err, one, oneErr)
	}
}
