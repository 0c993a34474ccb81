package integration

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// RReadWriteLock's read lock, byte for byte as Java's string
// concatenation builds it at redisson/redisson commit
// 66863978b4a92093b97c1f8c96f182a77e81d50e (2026-08-21), file
// redisson/src/main/java/org/redisson/… and lines:
const (
	// RedissonReadLock.java:58-76, tryLockInnerAsync; KEYS: name,
	// "{name}:<uuid>:<threadId>:rwlock_timeout"; ARGV: lease ms,
	// "<uuid>:<threadId>", "<uuid>:<threadId>:write".
	redissonReadLock = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'read'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('set', KEYS[2] .. ':1', 1); redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1); local key = KEYS[2] .. ':' .. ind;redis.call('set', key, 1); redis.call('pexpire', key, ARGV[1]); local remainTime = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1])); return nil; end;return redis.call('pttl', KEYS[1]);"
	// RedissonReadLock.java:87-137, unlockInnerAsync; KEYS: name,
	// "redisson_rwlock:{name}", the timeout prefix, "{name}",
	// "redisson_unlock_latch:{name}:<request>"; ARGV: UNLOCK_MESSAGE (0),
	// "<uuid>:<threadId>", "PUBLISH", latch timeout ms.
	redissonReadUnlock = "local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(val);end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[4]); return nil; end; local lockExists = redis.call('hexists', KEYS[1], ARGV[2]); if (lockExists == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1); if (counter == 0) then redis.call('hdel', KEYS[1], ARGV[2]); end;redis.call('del', KEYS[3] .. ':' .. (counter+1)); if (redis.call('hlen', KEYS[1]) > 1) then local maxRemainTime = -3; local keys = redis.call('hkeys', KEYS[1]); for n, key in ipairs(keys) do counter = tonumber(redis.call('hget', KEYS[1], key)); if type(counter) == 'number' then for i=counter, 1, -1 do local remainTime = redis.call('pttl', KEYS[4] .. ':' .. key .. ':rwlock_timeout:' .. i); maxRemainTime = math.max(remainTime, maxRemainTime);end; end; end; if maxRemainTime > 0 then redis.call('pexpire', KEYS[1], maxRemainTime); redis.call('set', KEYS[5], 0, 'px', ARGV[4]); return 0; end;if mode == 'write' then redis.call('set', KEYS[5], 0, 'px', ARGV[4]); return 0;end; end; redis.call('del', KEYS[1]); redis.call(ARGV[3], KEYS[2], ARGV[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[4]); return 1; "
	// RedissonReadLock.java:168-173, forceUnlockAsync; KEYS: name,
	// channel; ARGV: UNLOCK_MESSAGE, "PUBLISH".
	redissonReadForceUnlock = "if (redis.call('hget', KEYS[1], 'mode') == 'read') then redis.call('del', KEYS[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1; end; return 0; "
	// RedissonReadLock.java:181-185, isLocked (served by its effect: a read).
	redissonReadIsLocked = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == 'read') or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then return 1; end; return 0; "
	// renewal/ReadLockTask.java:93-116, the read locks' watchdog; KEYS:
	// pairs of name and "{name}"; ARGV: lease ms, then per pair a count
	// and that many "<uuid>:<threadId>".
	redissonReadRenew = "local result = {} local argIdx = 2 for i = 1, #KEYS, 2 do local anyAlive = false; local lockNamesCount = tonumber(ARGV[argIdx]); argIdx = argIdx + 1; for k = 1, lockNamesCount do local counter = redis.call('hget', KEYS[i], ARGV[argIdx]); if (counter ~= false) then anyAlive = true; for c=counter, 1, -1 do redis.call('pexpire', KEYS[i+1] .. ':' .. ARGV[argIdx] .. ':rwlock_timeout:' .. c, ARGV[1]); end; end; argIdx = argIdx + 1; end; if (anyAlive) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;"
)

// readLockClient is one Redisson thread's view of a read-write lock.
type readLockClient struct {
	name, thread string // the lock; "<uuid>:<threadId>"
}

func (c readLockClient) timeoutPrefix() string {
	return "{" + c.name + "}:" + c.thread + ":rwlock_timeout"
}

func (c readLockClient) take(t *testing.T, cl *redis.Client, lease int) (int64, error) {
	t.Helper()
	return redis.NewScript(redissonReadLock).Run(t.Context(), cl, []string{c.name, c.timeoutPrefix()}, lease, c.thread, c.thread+":write").Int64()
}

func (c readLockClient) unlock(t *testing.T, cl *redis.Client, request string) (int64, error) {
	t.Helper()
	keys := []string{c.name, "redisson_rwlock:{" + c.name + "}", c.timeoutPrefix(), "{" + c.name + "}", "redisson_unlock_latch:{" + c.name + "}:" + request}
	return redis.NewScript(redissonReadUnlock).Run(t.Context(), cl, keys, 0, c.thread, "PUBLISH", 3000).Int64()
}

// mustTake takes the read lock and fails the test unless granted (nil).
func (c readLockClient) mustTake(t *testing.T, cl *redis.Client, lease int) {
	t.Helper()
	if ms, err := c.take(t, cl, lease); !errors.Is(err, redis.Nil) {
		t.Fatalf("read lock by %s = %d, %v; want nil (acquired)", c.thread, ms, err)
	}
}

// TestRedissonReadLockSideBySide replays RReadWriteLock's read lock: two
// readers share it (one re-entrant), a writer is kept out (the PTTL),
// isLocked, the watchdog's renewal (also of a lock gone), unlock down to
// 0 and then 1 with its one message, the latch, an unlock by a non-holder
// and of a lock gone, a writer then in and readers out, a reader under
// its own write lock (a downgrade); forceUnlock is refused through the
// proxy without allow_force_del.
func TestRedissonReadLockSideBySide(t *testing.T) {
	wlock, wunlock := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteUnlock)
	isLocked, renew, force := redis.NewScript(redissonReadIsLocked), redis.NewScript(redissonReadRenew), redis.NewScript(redissonReadForceUnlock)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, proxied bool, c *cluster) {
		ctx := t.Context()
		const name, channel = "rl", "redisson_rwlock:{rl}"
		a, b := readLockClient{name, "8c1f-0001:1"}, readLockClient{name, "8c1f-0002:7"}
		w := readLockClient{name, "8c1f-0003:2"}
		sub := cl.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}

		a.mustTake(t, cl, 30000)
		a.mustTake(t, cl, 30000)
		b.mustTake(t, cl, 30000)
		if c != nil {
			for _, i := range c.live() {
				if h := c.direct[i].HGetAll(ctx, name).Val(); len(h) != 3 || h["mode"] != "read" || h[a.thread] != "2" || h[b.thread] != "1" {
					t.Errorf("node %d holds %v; want mode=read, A=2, B=1", i, h)
				}
				for _, k := range []string{a.timeoutPrefix() + ":1", a.timeoutPrefix() + ":2", b.timeoutPrefix() + ":1"} {
					if ms := c.direct[i].PTTL(ctx, k).Val(); ms <= 0 || ms > 30*time.Second {
						t.Errorf("node %d: PTTL %s = %v; want in (0, 30s]", i, k, ms)
					}
				}
			}
		}
		if ms, err := wlock.Run(ctx, cl, []string{name}, 30000, w.thread+":write").Int64(); err != nil || ms <= 0 || ms > 30000 {
			t.Fatalf("write lock beside readers = %d, %v; want the PTTL", ms, err)
		}
		if v, err := isLocked.Run(ctx, cl, []string{name}).Int64(); v != 1 || err != nil {
			t.Errorf("isLocked = %d, %v; want 1", v, err)
		}

		// The watchdog: one call renews A's lock, and answers 0 for a
		// lock no name of it holds.
		got, err := renew.Run(ctx, cl, []string{name, "{rl}", "gone", "{gone}"}, 45000, 2, a.thread, "8c1f-0001:9", 1, a.thread).Int64Slice()
		if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 0 {
			t.Fatalf("renewal = %v, %v; want [1 0]", got, err)
		}
		if ms := cl.PTTL(ctx, name).Val(); ms <= 30*time.Second || ms > 45*time.Second {
			t.Errorf("PTTL after renewal = %v; want in (30s, 45s]", ms)
		}
		if got, err := renew.Run(ctx, cl, []string{name, "{rl}"}, 45000, 1, "8c1f-0009:1").Int64Slice(); err != nil || len(got) != 1 || got[0] != 0 {
			t.Fatalf("renewal by a non-holder = %v, %v; want [0]", got, err)
		}

		// Unlock: A 2 -> 1 -> 0 while B holds: 0, 0; a non-holder: nil;
		// B's: 1 and one message; again with the same request: 1 (the
		// latch), no message; once the lock is gone: nil and a message.
		for i, req := range []string{"r1", "r2"} {
			if v, err := a.unlock(t, cl, req); v != 0 || err != nil {
				t.Fatalf("unlock %d of A = %d, %v; want 0", i+1, v, err)
			}
		}
		if _, err := (readLockClient{name, "8c1f-0009:1"}).unlock(t, cl, "r3"); !errors.Is(err, redis.Nil) {
			t.Fatalf("unlock by a non-holder: %v; want nil", err)
		}
		if v, err := b.unlock(t, cl, "r4"); v != 1 || err != nil {
			t.Fatalf("last unlock = %d, %v; want 1", v, err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
			t.Fatalf("unlock message = %v, %v; want 0 on %s", msg, err, channel)
		}
		if n := cl.Exists(ctx, name).Val(); n != 0 {
			t.Errorf("EXISTS %s after the last unlock = %d; want 0", name, n)
		}
		if v, err := b.unlock(t, cl, "r4"); v != 1 || err != nil {
			t.Fatalf("repeated unlock = %d, %v; want 1 from the latch", v, err)
		}
		if _, err := b.unlock(t, cl, "r5"); !errors.Is(err, redis.Nil) {
			t.Fatalf("unlock of a lock gone: %v; want nil", err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
			t.Fatalf("message of the unlock of a lock gone = %v, %v; want 0 (and none for the latched one)", msg, err)
		}

		// A writer in: readers out, but its own thread reads under it.
		if err := wlock.Run(ctx, cl, []string{name}, 30000, w.thread+":write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock once free: %v; want nil (acquired)", err)
		}
		if ms, err := a.take(t, cl, 30000); err != nil || ms <= 0 || ms > 30000 {
			t.Fatalf("read lock beside a writer = %d, %v; want the PTTL", ms, err)
		}
		// A reader under its own write lock (a downgrade): granted, and
		// the write lock's unlock then leaves it (mode read), through
		// the proxy as on one Redis (TestRedissonLockDowngradeSideBySide).
		wu := func(req string) (int64, error) {
			return wunlock.Run(ctx, cl, []string{name, channel, "redisson_unlock_latch:{rl}:" + req}, 1, 30000, w.thread+":write", "PUBLISH", 3000).Int64()
		}
		w.mustTake(t, cl, 30000)
		if v, err := isLocked.Run(ctx, cl, []string{name}).Int64(); v != 1 || err != nil {
			t.Errorf("isLocked under a write lock with its reader = %d, %v; want 1", v, err)
		}
		if v, err := wu("w1"); v != 1 || err != nil {
			t.Fatalf("write unlock under its reader = %d, %v; want 1", v, err)
		}
		if m, err := cl.HGet(ctx, name, "mode").Result(); m != "read" || err != nil {
			t.Errorf("mode after the write unlock = %q, %v; want read", m, err)
		}
		b.mustTake(t, cl, 30000)
		if ms, err := wlock.Run(ctx, cl, []string{name}, 30000, "8c1f-0004:1:write").Int64(); err != nil || ms <= 0 {
			t.Fatalf("another writer beside the readers = %d, %v; want the PTTL", ms, err)
		}

		// forceUnlock deletes the read lock on one Redis; the proxy
		// serves it only with allow_force_del.
		n, err := force.Run(ctx, cl, []string{name, channel}, 0, "PUBLISH").Int64()
		if !proxied {
			if n != 1 || err != nil {
				t.Fatalf("forceUnlock = %d, %v; want 1", n, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "forceUnlock is refused") {
			t.Fatalf("forceUnlock through the proxy = %d, %v; want a refusal", n, err)
		}
		if v, err := isLocked.Run(ctx, cl, []string{name}).Int64(); v != 1 || err != nil {
			t.Errorf("isLocked after the refused forceUnlock = %d, %v; want 1", v, err)
		}
	})
}

// TestRedissonReadLockThroughTwoProxies: readers through two proxies
// share the lock, a writer through either is kept out, the last unlock's
// message reaches a subscriber of the other proxy once, and forceUnlock
// (allow_force_del on) deletes it and publishes.
func TestRedissonReadLockThroughTwoProxies(t *testing.T) {
	wlock, force := redis.NewScript(redissonWriteLock), redis.NewScript(redissonReadForceUnlock)
	for _, down := range []int{0, 2} {
		t.Run(map[int]string{0: "all up", 2: "2 of 5 down"}[down], func(t *testing.T) {
			ctx := t.Context()
			c := startNodes(t, 5)
			for i := range down {
				c.kill(i)
			}
			cfg := proxy.Config{CommandTimeout: commandTimeout, AllowForceDel: true}
			p1 := startProxy(t, cfg, engineConfig(), c.addrs...).Client
			p2 := startProxy(t, cfg, engineConfig(), c.addrs...).Client
			const name, channel = "rl2", "redisson_rwlock:{rl2}"
			a, b := readLockClient{name, "5e6f-0001:1"}, readLockClient{name, "5e6f-0002:3"}
			sub := p2.Subscribe(ctx, channel)
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			a.mustTake(t, p1, 30000)
			b.mustTake(t, p2, 30000)
			for _, p := range []*redis.Client{p1, p2} {
				if ms, err := wlock.Run(ctx, p, []string{name}, 30000, "5e6f-0003:1:write").Int64(); err != nil || ms <= 0 {
					t.Fatalf("write lock beside readers = %d, %v; want the PTTL", ms, err)
				}
			}
			if v, err := a.unlock(t, p2, "q1"); v != 0 || err != nil {
				t.Fatalf("A's unlock through proxy 2 = %d, %v; want 0 (B reads)", v, err)
			}
			if v, err := b.unlock(t, p1, "q2"); v != 1 || err != nil {
				t.Fatalf("B's unlock through proxy 1 = %d, %v; want 1", v, err)
			}
			if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
				t.Fatalf("unlock message through proxy 2 = %v, %v; want 0", msg, err)
			}
			a.mustTake(t, p2, 30000)
			if n, err := force.Run(ctx, p1, []string{name, channel}, 0, "PUBLISH").Int64(); n != 1 || err != nil {
				t.Fatalf("forceUnlock = %d, %v; want 1", n, err)
			}
			if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
				t.Fatalf("forceUnlock message = %v, %v; want 0", msg, err)
			}
			if err := wlock.Run(ctx, p2, []string{name}, 30000, "5e6f-0003:1:write").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock after forceUnlock: %v; want nil (acquired)", err)
			}
			// No second copy of either message came.
			select {
			case m := <-sub.Channel():
				t.Fatalf("a second message %v; want each once", m)
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}

// TestRedissonReadLockWatchdogOutlivesLease: the read locks' watchdog
// renews two readers' holds (their timeout keys and the hash) for several
// leases while a writer asks and stays out; once it stops, the read lock
// lapses and the writer gets in.
func TestRedissonReadLockWatchdogOutlivesLease(t *testing.T) {
	wlock, renew := redis.NewScript(redissonWriteLock), redis.NewScript(redissonReadRenew)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, _ bool, _ *cluster) {
		ctx := t.Context()
		const lease = 1500
		a, b := readLockClient{"rwd", "7d2e-0001:1"}, readLockClient{"rwd", "7d2e-0001:2"}
		a.mustTake(t, cl, lease)
		a.mustTake(t, cl, lease)
		b.mustTake(t, cl, lease)
		for end := time.Now().Add(3 * lease * time.Millisecond); time.Now().Before(end); time.Sleep(lease / 3 * time.Millisecond) {
			// One client's two threads on one lock: one pair, two names.
			got, err := renew.Run(ctx, cl, []string{"rwd", "{rwd}"}, lease, 2, a.thread, b.thread).Int64Slice()
			if err != nil || len(got) != 1 || got[0] != 1 {
				t.Fatalf("renewal = %v, %v; want [1]", got, err)
			}
			if ms, err := wlock.Run(ctx, cl, []string{"rwd"}, lease, "7d2e-0002:1:write").Int64(); err != nil || ms <= 0 {
				t.Fatalf("a writer while renewed = %d, %v; want the PTTL", ms, err)
			}
		}
		// Still held past three leases: unlock counts down as one Redis.
		if v, err := a.unlock(t, cl, "u1"); v != 0 || err != nil {
			t.Fatalf("unlock after the renewals = %d, %v; want 0", v, err)
		}
		time.Sleep((lease + 100) * time.Millisecond)
		if err := wlock.Run(ctx, cl, []string{"rwd"}, lease, "7d2e-0002:1:write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock after the renewals stopped: %v; want nil (acquired)", err)
		}
	})
}

// TestRedissonReadLockWatchdogPastItsTimeout: Redisson's defaults, a 30s
// lease renewed every 10s, through the proxy over 5 masters for 40s: the
// read lock stays held and a writer stays out.
func TestRedissonReadLockWatchdogPastItsTimeout(t *testing.T) {
	skipLong(t)
	wlock, renew := redis.NewScript(redissonWriteLock), redis.NewScript(redissonReadRenew)
	_, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	a := readLockClient{"rwd2", "9a9a-0001:1"}
	a.mustTake(t, p.Client, 30000)
	for range 4 { // 40s
		time.Sleep(10 * time.Second)
		got, err := renew.Run(ctx, p.Client, []string{"rwd2", "{rwd2}"}, 30000, 1, a.thread).Int64Slice()
		if err != nil || len(got) != 1 || got[0] != 1 {
			t.Fatalf("watchdog renewal = %v, %v; want [1]", got, err)
		}
		if ms, err := wlock.Run(ctx, p.Client, []string{"rwd2"}, 30000, "9a9a-0002:1:write").Int64(); err != nil || ms <= 20000 {
			t.Fatalf("a writer = %d, %v; want the PTTL of a renewed read lock", ms, err)
		}
	}
	if v, err := a.unlock(t, p.Client, "u1"); v != 1 || err != nil {
		t.Fatalf("unlock after 40s = %d, %v; want 1", v, err)
	}
}

// TestRedissonReadLockDeniedOnAQuorumIsUndone: a writer's hash on 3 of 5
// masters; a reader's take is granted by the other 2 only: the reply is
// the PTTL, and the 2 grants are given back (no read lock left there).
// With 3 of 5 masters down, a take is NOQUORUM naming the answers, never
// nil (which would say granted).
func TestRedissonReadLockDeniedOnAQuorumIsUndone(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	a := readLockClient{"rlu", "6a6a-0001:1"}
	for _, i := range []int{0, 1, 2} {
		c.direct[i].HSet(ctx, "rlu", "mode", "write", "6a6a-0009:1:write", "1")
		c.direct[i].PExpire(ctx, "rlu", 20*time.Second)
	}
	if ms, err := a.take(t, p.Client, 30000); err != nil || ms <= 0 || ms > 20000 {
		t.Fatalf("read lock beside a writer on 3 of 5 = %d, %v; want the PTTL", ms, err)
	}
	for _, i := range []int{3, 4} {
		if n := c.direct[i].Exists(ctx, "rlu", a.timeoutPrefix()+":1").Val(); n != 0 {
			t.Errorf("node %d keeps %d keys of the denied take; want none", i, n)
		}
	}
	for i := range 3 {
		c.kill(i)
	}
	_, err := a.take(t, p.Client, 30000)
	if err == nil || errors.Is(err, redis.Nil) || !strings.Contains(err.Error(), "of 5 nodes") {
		t.Fatalf("read lock with 3 of 5 down: %v; want NOQUORUM naming the answers", err)
	}
	if n := c.direct[3].Exists(ctx, "rlu").Val(); n != 0 {
		t.Errorf("node 3 keeps the unavailable take; want it undone")
	}
}

// TestRedissonReadLockRefusesReservedAndOtherLayouts: the read lock's
// scripts name keys from their arguments, so a timeout prefix or a
// renewed name that could reach the proxy's own keys is refused, as is a
// call in another layout than Redisson's; nothing of them reaches a node.
func TestRedissonReadLockRefusesReservedAndOtherLayouts(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	take, renew, unlock := redis.NewScript(redissonReadLock), redis.NewScript(redissonReadRenew), redis.NewScript(redissonReadUnlock)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"a reserved timeout prefix", take.Run(ctx, p.Client, []string{"r", "redlock-proxy:fence"}, 30000, "a:1", "a:1:write").Err(), "reserved"},
		{"a prefix below the proxy's keys", take.Run(ctx, p.Client, []string{"r", "redlock-proxy"}, 30000, "a:1", "a:1:write").Err(), "reserved"},
		{"a renewed name reaching the proxy's keys", renew.Run(ctx, p.Client, []string{"r", "redlock-proxy"}, 30000, 1, "fence").Err(), "reserved"},
		{"an unlock's reserved timeout prefix", unlock.Run(ctx, p.Client, []string{"r", "ch", "redlock-proxy:members", "{r}", "latch"}, 0, "a:1", "PUBLISH", 3000).Err(), "reserved"},
		{"a take with one key", take.Run(ctx, p.Client, []string{"r"}, 30000, "a:1", "a:1:write").Err(), "served only as Redisson calls it"},
		{"a renewal with a wrong count", renew.Run(ctx, p.Client, []string{"r", "{r}"}, 30000, 2, "a:1").Err(), "served only as Redisson calls it"},
		{"an unlock publishing by another command", unlock.Run(ctx, p.Client, []string{"r", "ch", "{r}:a:1:rwlock_timeout", "{r}", "latch"}, 0, "a:1", "DEL", 3000).Err(), "PUBLISH or SPUBLISH"},
		{"a lease over max_ttl", take.Run(ctx, p.Client, []string{"r", "{r}:a:1:rwlock_timeout"}, 3600000, "a:1", "a:1:write").Err(), "max_ttl"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v; want a refusal saying %q", tc.name, tc.err, tc.want)
		}
	}
	for i := range c.procs {
		if keys := c.direct[i].Keys(ctx, "*").Val(); slices.ContainsFunc(keys, func(k string) bool { return !strings.HasPrefix(k, "redlock-proxy:members") }) {
			t.Errorf("node %d has keys %v after the refusals; want none of them", i, keys)
		}
	}
}

// TestRedissonReadLockWrongTypeAsOneRedis: the read lock's scripts on a
// key of another type (a string lock) answer as one Redis holding it:
// the script's WRONGTYPE error, word for word, once a quorum of masters
// answered it; the grants of masters where the key was missing are
// given back. Where fewer masters hold the other type (the nodes
// disagree), the reply stays NOQUORUM naming the answers.
func TestRedissonReadLockWrongTypeAsOneRedis(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{AllowForceDel: true})
	rc := direct(t, startRedis(t).Addr)
	ctx := t.Context()
	x := readLockClient{"s", "x:1"}
	unlockKeys := []string{"s", "redisson_rwlock:{s}", x.timeoutPrefix(), "{s}", "redisson_unlock_latch:{s}:r1"}
	calls := []struct {
		name string
		call func(cl *redis.Client) error
	}{
		{"take", func(cl *redis.Client) error { _, err := x.take(t, cl, 30000); return err }},
		{"take by EVAL", func(cl *redis.Client) error {
			return cl.Eval(ctx, redissonReadLock, []string{"s", x.timeoutPrefix()}, 30000, x.thread, x.thread+":write").Err()
		}},
		{"unlock", func(cl *redis.Client) error {
			return redis.NewScript(redissonReadUnlock).Run(ctx, cl, unlockKeys, 0, x.thread, "PUBLISH", 3000).Err()
		}},
		{"renew", func(cl *redis.Client) error {
			return redis.NewScript(redissonReadRenew).Run(ctx, cl, []string{"s", "{s}"}, 30000, 1, x.thread).Err()
		}},
		{"forceUnlock", func(cl *redis.Client) error {
			return redis.NewScript(redissonReadForceUnlock).Run(ctx, cl, []string{"s", "redisson_rwlock:{s}"}, 0, "PUBLISH").Err()
		}},
	}
	for _, cl := range []*redis.Client{p.Client, rc} {
		if err := cl.SetNX(ctx, "s", "tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range calls {
		perr, rerr := tc.call(p.Client), tc.call(rc)
		if !strings.HasPrefix(errText(rerr), "WRONGTYPE") || errText(perr) != errText(rerr) {
			t.Errorf("%s on a string key: proxy %q, one Redis %q; want the same WRONGTYPE", tc.name, errText(perr), errText(rerr))
		}
	}
	// A quorum holds a string, the other two nothing: WRONGTYPE, and the
	// two grants undone.
	q := readLockClient{"q", "x:1"}
	for _, i := range []int{0, 1, 2} {
		c.direct[i].Set(ctx, "q", "tok", 30*time.Second)
	}
	rc.Set(ctx, "q", "tok", 30*time.Second)
	_, perr := q.take(t, p.Client, 30000)
	if _, rerr := q.take(t, rc, 30000); errText(perr) != errText(rerr) {
		t.Errorf("take on a string on 3 of 5: proxy %q, one Redis %q; want the same", errText(perr), errText(rerr))
	}
	for _, i := range []int{3, 4} {
		if n := c.direct[i].Exists(ctx, "q", q.timeoutPrefix()+":1").Val(); n != 0 {
			t.Errorf("node %d keeps %d keys of the take answered WRONGTYPE; want none", i, n)
		}
	}
	// Two hold a string, one is down: the nodes disagree, NOQUORUM.
	d := readLockClient{"d", "x:1"}
	for _, i := range []int{0, 1} {
		c.direct[i].Set(ctx, "d", "tok", 30*time.Second)
	}
	c.kill(2)
	if _, err := d.take(t, p.Client, 30000); !strings.HasPrefix(errText(err), "NOQUORUM 2 granted, 0 denied, 3 failed of 5 nodes") {
		t.Errorf("take on a string on 2 of 5 with one down: %q; want NOQUORUM naming the answers", errText(err))
	}
}
