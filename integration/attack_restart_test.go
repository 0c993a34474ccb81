package integration

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Two of five masters restart empty while A holds a lock taken by a
// script served by effect (a string lock, and a limit-1 semaphore scored
// by expiry): while they are quarantined, B's same scripts take the key
// on them alone. B must not be told it holds either lock, and what B took
// on the restarted masters is given back; with one more master frozen,
// B gets an error, never a hold.
func TestAttackRestartedEmptyMastersEffect(t *testing.T) {
	skipLong(t)
	const semaphore = `redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", ARGV[3])
if redis.call("ZSCORE", KEYS[1], ARGV[1]) then return 1 end
if redis.call("ZCARD", KEYS[1]) >= 1 then return 0 end
redis.call("ZADD", KEYS[1], ARGV[2], ARGV[1])
redis.call("PEXPIRE", KEYS[1], ARGV[4])
return 1`
	c := startNodes(t, 5)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	ctx := t.Context()
	cl := p.Client
	sem := func(tok string) (int64, error) {
		now := time.Now()
		return cl.Eval(ctx, semaphore, []string{"rs:sem"}, tok,
			strconv.FormatInt(now.Add(1800*time.Millisecond).UnixMilli(), 10), strconv.FormatInt(now.UnixMilli(), 10), 1800).Int64()
	}
	if v, err := cl.Eval(ctx, idempotentAcquire, []string{"rs:lock"}, "tokA", 1800).Int64(); v != 1 || err != nil {
		t.Fatalf("A's lock = %d, %v", v, err)
	}
	if v, err := sem("tokA"); v != 1 || err != nil {
		t.Fatalf("A's semaphore = %d, %v", v, err)
	}
	for _, i := range []int{0, 1} {
		c.procs[i] = restartRedis(t, c.procs[i])
		c.direct[i] = direct(t, c.procs[i].Addr)
	}
	for _, i := range []int{0, 1} {
		waitState(t, cl, i, "quarantined", 5*time.Second)
	}
	if v, err := cl.Eval(ctx, idempotentAcquire, []string{"rs:lock"}, "tokB", 1800).Int64(); v != 0 || err != nil {
		t.Errorf("B's lock while A holds it on 3 of 5 and 2 restarted empty = %d, %v; want 0", v, err)
	}
	if v, err := sem("tokB"); v != 0 || err != nil {
		t.Errorf("B's semaphore while A holds it on 3 of 5 and 2 restarted empty = %d, %v; want 0", v, err)
	}
	for _, i := range []int{0, 1} {
		if v, ok := c.value(t, i, "rs:lock"); ok {
			t.Errorf("restarted node %d keeps B's take of the lock (%q)", i, v)
		}
		if n, _ := c.direct[i].ZCard(ctx, "rs:sem").Result(); n != 0 {
			t.Errorf("restarted node %d keeps B's take of the semaphore", i)
		}
	}
	c.procs[2].Freeze(t)
	c.killed[2] = true
	v, err := cl.Eval(ctx, idempotentAcquire, []string{"rs:lock"}, "tokB", 1800).Int64()
	if err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("B's lock with 2 quarantined and 1 frozen = %d, %v; want an error", v, err)
	}
	v, err = sem("tokB")
	if err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("B's semaphore with 2 quarantined and 1 frozen = %d, %v; want an error", v, err)
	}
}
