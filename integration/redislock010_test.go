package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// bsm/redislock v0.10.0 (go.mod) side by side: its ObtainMulti (several
// keys in one obtain script: MSETNX, or MSET where every key is the
// token's by prefix, then PEXPIRE each), re-entry, TTL over the keys,
// Refresh with a RetryStrategy, a lost lock's Refresh (ErrNotObtained at
// once, no retry), Release, and a key named twice. The checks run
// against one redis-server and through the proxy over 5 masters, and
// print the same lines; no key is left on a master.
func TestRedislock010SideBySide(t *testing.T) {
	side := func(t *testing.T, addr string) []string {
		rdb := newClient(t, addr, nil)
		return redislock010Checks(t.Context(), rdb)
	}
	var one []string
	t.Run("one redis-server", func(t *testing.T) {
		one = side(t, startRedis(t).Addr)
	})
	t.Run("proxy over 5 masters", func(t *testing.T) {
		c, p := setup(t, 5, proxy.Config{})
		got := side(t, p.Addr)
		if !slices.Equal(got, one) {
			t.Errorf("through the proxy:\n%s\nagainst one redis-server:\n%s", strings.Join(got, "\n"), strings.Join(one, "\n"))
		}
		for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			c.wantFreeEverywhere(t, "rl10:"+k)
		}
	})
	for _, l := range one {
		if !strings.HasPrefix(l, "ok ") {
			t.Errorf("against one redis-server: %s", l)
		}
	}
}

// countingRetry is a RetryStrategy that counts its backoffs.
type countingRetry struct {
	n, max atomic.Int64
}

func (r *countingRetry) NextBackoff() time.Duration {
	if r.n.Add(1) > r.max.Load() {
		return 0 // no more tries
	}
	return 20 * time.Millisecond
}

// redislock010Checks runs the checks against rdb and returns one line
// each: "ok <check>", or the check and what was wrong.
func redislock010Checks(ctx context.Context, rdb *redis.Client) []string {
	var out []string
	check := func(name string, ok bool, got ...any) {
		if ok {
			out = append(out, "ok "+name)
			return
		}
		out = append(out, name+": "+fmt.Sprint(got...))
	}
	free := func(key string) bool {
		_, err := rdb.Get(ctx, key).Result()
		return errors.Is(err, redis.Nil)
	}
	locker := redislock.New(rdb)
	abc := []string{"rl10:a", "rl10:b", "rl10:c"}

	lock, err := locker.ObtainMulti(ctx, abc, 5*time.Second, &redislock.Options{Token: "tokA", Metadata: "m1"})
	check("ObtainMulti of three keys", err == nil, err)
	if err != nil {
		return out
	}
	check("Keys", slices.Equal(lock.Keys(), abc), lock.Keys())
	ttl, err := lock.TTL(ctx)
	check("TTL within the ttl", err == nil && ttl > 0 && ttl <= 5*time.Second, ttl, err)
	v, err := rdb.Get(ctx, "rl10:b").Result()
	check("each key holds the token and metadata", v == "tokAm1", v, err)

	_, err = locker.ObtainMulti(ctx, []string{"rl10:c", "rl10:d"}, 5*time.Second, &redislock.Options{Token: "tokB"})
	check("contended ObtainMulti is ErrNotObtained", errors.Is(err, redislock.ErrNotObtained), err)
	check("contended ObtainMulti takes none of its keys", free("rl10:d"))
	_, err = locker.Obtain(ctx, "rl10:b", 5*time.Second, &redislock.Options{Token: "tokB"})
	check("contended Obtain of one of the keys is ErrNotObtained", errors.Is(err, redislock.ErrNotObtained), err)

	again, err := locker.ObtainMulti(ctx, abc, 6*time.Second, &redislock.Options{Token: "tokA", Metadata: "m2"})
	check("re-entrant ObtainMulti with the same token", err == nil, err)
	if err != nil {
		return out
	}
	v, err = rdb.Get(ctx, "rl10:c").Result()
	check("re-entry replaced the metadata", v == "tokAm2", v, err)
	err = lock.Release(ctx)
	check("Release with the replaced value is ErrLockNotHeld", errors.Is(err, redislock.ErrLockNotHeld), err)
	check("the keys stay held", !free("rl10:a") && !free("rl10:c"))

	retry := &countingRetry{}
	retry.max.Store(3)
	err = again.Refresh(ctx, 7500*time.Millisecond, &redislock.Options{RetryStrategy: retry})
	check("Refresh with a RetryStrategy", err == nil && retry.n.Load() == 0, err, retry.n.Load())
	ttl, err = again.TTL(ctx)
	check("TTL after Refresh", err == nil && ttl > 5*time.Second && ttl <= 7500*time.Millisecond, ttl, err)

	err = again.Release(ctx)
	check("Release", err == nil, err)
	check("every key free after Release", free("rl10:a") && free("rl10:b") && free("rl10:c"))
	err = again.Release(ctx)
	check("second Release is ErrLockNotHeld", errors.Is(err, redislock.ErrLockNotHeld), err)
	retry = &countingRetry{}
	retry.max.Store(3)
	err = again.Refresh(ctx, time.Second, &redislock.Options{RetryStrategy: retry})
	check("Refresh after Release is ErrNotObtained, not retried", errors.Is(err, redislock.ErrNotObtained) && retry.n.Load() == 0, err, retry.n.Load())
	ttl, err = again.TTL(ctx)
	check("TTL after Release is 0", err == nil && ttl == 0, ttl, err)

	// A lock lost while held: one key expired and taken by another.
	lost, err := locker.ObtainMulti(ctx, []string{"rl10:e", "rl10:f"}, 2100*time.Millisecond, nil)
	check("ObtainMulti with a random token", err == nil, err)
	if err != nil {
		return out
	}
	time.Sleep(2300 * time.Millisecond)
	other, err := locker.Obtain(ctx, "rl10:f", 5*time.Second, nil)
	check("another client obtains an expired key", err == nil, err)
	if err != nil {
		return out
	}
	// Its first key taken again under its token (SET NX): one key of
	// the lock is still its own, the other is not.
	ok, err := rdb.SetNX(ctx, "rl10:e", lost.Token(), 5*time.Second).Result()
	check("the lost lock's first key set again with its token", ok && err == nil, ok, err)
	ttl, err = lost.TTL(ctx)
	check("a partly lost lock's TTL is 0", err == nil && ttl == 0, ttl, err)
	retry = &countingRetry{}
	retry.max.Store(3)
	err = lost.Refresh(ctx, 8*time.Second, &redislock.Options{RetryStrategy: retry})
	check("a partly lost lock's Refresh is ErrNotObtained, not retried", errors.Is(err, redislock.ErrNotObtained) && retry.n.Load() == 0, err, retry.n.Load())
	pttl, err := rdb.PTTL(ctx, "rl10:e").Result()
	check("the failed Refresh extended no key", err == nil && pttl > 0 && pttl <= 5*time.Second, pttl, err)
	err = lost.Release(ctx)
	check("a partly lost lock's Release is ErrLockNotHeld", errors.Is(err, redislock.ErrLockNotHeld), err)
	v, err = rdb.Get(ctx, "rl10:f").Result()
	check("the new holder keeps its key", v == other.Token(), v, err)
	// One Redis keeps the key still held until its TTL; the proxy has
	// released it (docs/compatibility.md): not compared.
	rdb.Eval(ctx, distlockRelease, []string{"rl10:e"}, lost.Token())
	err = other.Release(ctx)
	check("the new holder releases", err == nil, err)

	// One key named twice is one key of the lock.
	twice, err := locker.ObtainMulti(ctx, []string{"rl10:g", "rl10:g", "rl10:h"}, 5*time.Second, nil)
	check("ObtainMulti naming a key twice", err == nil, err)
	if err != nil {
		return out
	}
	ttl, err = twice.TTL(ctx)
	check("its TTL", err == nil && ttl > 0 && ttl <= 5*time.Second, ttl, err)
	err = twice.Refresh(ctx, 6*time.Second, nil)
	check("its Refresh", err == nil, err)
	err = twice.Release(ctx)
	check("its Release", err == nil, err)
	check("its keys free", free("rl10:g") && free("rl10:h"))
	return out
}

// ObtainMulti through the proxy is decided by the masters that held none
// of its keys under another token: each master takes all of the keys or
// none, and the keys are granted together only when a quorum of masters
// took them all. Otherwise every key is given back, and no master keeps
// any of them.
func TestRedislockObtainMultiAllOrNothingOnAQuorum(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	locker := redislock.New(p.Client)
	hold := func(key string, nodes ...int) {
		for _, i := range nodes {
			if err := c.direct[i].Set(ctx, key, "other", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantOn := func(key, token string, nodes ...int) {
		t.Helper()
		if got := c.holding(t, key, token); !slices.Equal(got, nodes) {
			t.Errorf("%s holds %q on nodes %v; want %v", key, token, got, nodes)
		}
	}

	// One key held by another token on a quorum: nothing is granted, and
	// the free key is given back on the two masters that took both.
	hold("mq:b", 0, 1, 2)
	_, err := locker.ObtainMulti(ctx, []string{"mq:a", "mq:b"}, 5*time.Second, &redislock.Options{Token: "tok1"})
	if !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("ObtainMulti with one key held on 3 of 5 = %v; want ErrNotObtained", err)
	}
	c.wantFreeEverywhere(t, "mq:a")
	wantOn("mq:b", "other", 0, 1, 2)

	// Each key free on a quorum, but no quorum of masters with both free:
	// denied, although each key alone would be granted.
	hold("mq:c", 0, 1)
	hold("mq:d", 2, 3)
	_, err = locker.ObtainMulti(ctx, []string{"mq:c", "mq:d"}, 5*time.Second, &redislock.Options{Token: "tok2"})
	if !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("ObtainMulti with its keys held on 2 masters each = %v; want ErrNotObtained", err)
	}
	wantOn("mq:c", "tok2")
	wantOn("mq:d", "tok2")
	wantOn("mq:c", "other", 0, 1)
	wantOn("mq:d", "other", 2, 3)

	// One key held on a minority: the three other masters take both, and
	// the masters that held it take neither.
	hold("mq:f", 0, 1)
	l, err := locker.ObtainMulti(ctx, []string{"mq:e", "mq:f"}, 5*time.Second, &redislock.Options{Token: "tok3"})
	if err != nil {
		t.Fatalf("ObtainMulti with one key held on 2 of 5: %v", err)
	}
	wantOn("mq:e", "tok3", 2, 3, 4)
	wantOn("mq:f", "tok3", 2, 3, 4)
	if ttl, err := l.TTL(ctx); err != nil || ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("TTL = %v, %v; want in (0, 5s]", ttl, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	c.wantFreeEverywhere(t, "mq:e")
	wantOn("mq:f", "other", 0, 1)
	wantOn("mq:f", "tok3")

	// A lock one of whose keys was lost: its Release is ErrLockNotHeld,
	// and, unlike one Redis (which deletes none), the proxy releases the
	// keys still its own (docs/compatibility.md).
	l, err = locker.ObtainMulti(ctx, []string{"mq:g", "mq:h"}, 5*time.Second, &redislock.Options{Token: "tok4"})
	if err != nil {
		t.Fatalf("ObtainMulti: %v", err)
	}
	hold("mq:h", 0, 1, 2, 3, 4)
	if err := l.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release of a lock with one key lost = %v; want ErrLockNotHeld", err)
	}
	c.wantFreeEverywhere(t, "mq:g")
	wantOn("mq:h", "other", 0, 1, 2, 3, 4)
}

// bsm/redislock v0.10.0 retries a Refresh that failed with an error
// (not a lost lock): with a quorum of masters down the proxy's NOQUORUM
// is such an error, never ErrNotObtained, and redislock returns it once
// its RetryStrategy is spent.
func TestRedislockRefreshRetriesNoQuorum(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	l, err := redislock.Obtain(ctx, p.Client, "rq:a", 5*time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	for _, i := range []int{0, 1, 2} {
		c.kill(i)
	}
	retry := &countingRetry{}
	retry.max.Store(2)
	err = l.Refresh(ctx, 5*time.Second, &redislock.Options{RetryStrategy: retry})
	if err == nil || errors.Is(err, redislock.ErrNotObtained) || !strings.HasPrefix(err.Error(), "NOQUORUM ") {
		t.Errorf("Refresh with 3 of 5 masters down = %v; want the proxy's NOQUORUM", err)
	}
	if n := retry.n.Load(); n != 3 {
		t.Errorf("RetryStrategy asked %d times; want 3 (two retries, then spent)", n)
	}
	if _, err := l.TTL(ctx); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM ") {
		t.Errorf("TTL with 3 of 5 masters down = %v; want NOQUORUM", err)
	}
}

// A re-entrant ObtainMulti over a key the token holds and a free key:
// one Redis denies it (its MSETNX fails on the held key, and the free key
// has no token prefix to re-enter by), the proxy grants it (each master
// takes every key that is free or the token's by prefix). No other
// token's key is taken either way: a documented difference
// (docs/compatibility.md).
func TestRedislockReObtainBesideAFreeKey(t *testing.T) {
	reObtain := func(t *testing.T, rdb *redis.Client) error {
		ctx := t.Context()
		locker := redislock.New(rdb)
		l, err := locker.Obtain(ctx, "ro:a", 5*time.Second, &redislock.Options{Token: "tokA"})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		again, err := locker.ObtainMulti(ctx, []string{"ro:a", "ro:b"}, 5*time.Second, &redislock.Options{Token: "tokA", Metadata: "m"})
		if err == nil {
			if err := again.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		} else if err := l.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		return err
	}
	t.Run("one redis-server", func(t *testing.T) {
		if err := reObtain(t, newClient(t, startRedis(t).Addr, nil)); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("re-entrant ObtainMulti beside a free key = %v; want ErrNotObtained", err)
		}
	})
	t.Run("proxy over 5 masters", func(t *testing.T) {
		c, p := setup(t, 5, proxy.Config{})
		if err := reObtain(t, p.Client); err != nil {
			t.Errorf("re-entrant ObtainMulti beside a free key = %v; want it granted", err)
		}
		c.wantFreeEverywhere(t, "ro:a")
		c.wantFreeEverywhere(t, "ro:b")
	})
}

// bsm/redislock v0.10.0 through the proxy with every master up and with
// 2 of 5 down: ObtainMulti, a contended ObtainMulti, TTL, Refresh and
// Release, each key held by the live masters and then by none.
func TestRedislock010WithTwoMastersDown(t *testing.T) {
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		locker := redislock.New(p.Client)
		keys := []string{"td:a", "td:b"}
		l, err := locker.ObtainMulti(ctx, keys, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		for _, k := range keys {
			c.wantHeldEverywhere(t, k, l.Token(), 5*time.Second)
		}
		if _, err := locker.ObtainMulti(ctx, []string{"td:b", "td:c"}, 5*time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("contended ObtainMulti = %v; want ErrNotObtained", err)
		}
		c.wantFreeEverywhere(t, "td:c")
		if err := l.Refresh(ctx, 8*time.Second, nil); err != nil {
			t.Errorf("Refresh: %v", err)
		}
		if ttl, err := l.TTL(ctx); err != nil || ttl <= 5*time.Second || ttl > 8*time.Second {
			t.Errorf("TTL after Refresh(8s) = %v, %v; want in (5s, 8s]", ttl, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		for _, k := range keys {
			c.wantFreeEverywhere(t, k)
		}
	})
}

// A call of a redislock v0.10 script that its quorum operation cannot
// take (no key, a token length of 0) is refused with the reason: the
// script is known by digest only, and its MSETNX is no lock command.
func TestRedislock010CallsTheCatalogueCannotTakeAreRefused(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	const obtain = "eb0c00d98f6f33b4262419a509002884540f30be" // its obtain.lua
	for _, call := range [][]any{
		{"EVALSHA", obtain, 0, "tok", 3, 5000},
		{"EVALSHA", obtain, 1, "rf:a", "tok", 0, 5000},
	} {
		err := p.Client.Do(ctx, call...).Err()
		if err == nil || !strings.Contains(err.Error(), "MSETNX is not a lock command") {
			t.Errorf("%v = %v; want it refused, naming MSETNX", call, err)
		}
	}
	c.wantFreeEverywhere(t, "rf:a")
}
