package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Redisson's RReadWriteLock and watchdog scripts, byte for byte as Java's
// string concatenation builds them at redisson/redisson commit
// 66863978b4a92093b97c1f8c96f182a77e81d50e (2026-08-21), file
// redisson/src/main/java/org/redisson/… and lines:
const (
	// RedissonWriteLock.java:56-71, tryLockInnerAsync; KEYS: name;
	// ARGV: leaseTime ms, "<uuid>:<threadId>:write".
	redissonWriteLock = "local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call('hset', KEYS[1], 'mode', 'write'); redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; if (mode == 'write') then if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1); local currentExpire = redis.call('pttl', KEYS[1]); redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]); return nil; end; end;return redis.call('pttl', KEYS[1]);"
	// RedissonWriteLock.java:79-114, unlockInnerAsync; KEYS: name,
	// "redisson_rwlock:{name}", "redisson_unlock_latch:{name}:<request>";
	// ARGV: READ_UNLOCK_MESSAGE (1), lease ms, lock name, "PUBLISH",
	// latch timeout ms.
	redissonWriteUnlock = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; local mode = redis.call('hget', KEYS[1], 'mode'); if (mode == false) then redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return nil; end;if (mode == 'write') then local lockExists = redis.call('hexists', KEYS[1], ARGV[3]); if (lockExists == 0) then return nil;else local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('hdel', KEYS[1], ARGV[3]); if (redis.call('hlen', KEYS[1]) == 1) then redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); else redis.call('hset', KEYS[1], 'mode', 'read'); end; redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; end; end; return nil;"
	// RedissonWriteLock.java:128-133, forceUnlockAsync; KEYS: name,
	// channel; ARGV: READ_UNLOCK_MESSAGE, "PUBLISH".
	redissonWriteForceUnlock = "if (redis.call('hget', KEYS[1], 'mode') == 'write') then redis.call('del', KEYS[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1; end; return 0; "
	// RedissonLock.java:335-345, forceUnlockAsync; KEYS: name, channel;
	// ARGV: UNLOCK_MESSAGE (0), "PUBLISH".
	redissonForceUnlock = "if (redis.call('del', KEYS[1]) == 1) then redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1 else return 0 end"
	// renewal/LockTask.java:84-93, the watchdog: one call renews a chunk
	// of one client's locks (RLock and write locks alike); KEYS: the
	// names; ARGV: lease ms, then each key's lock name.
	redissonRenewAll = "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;"
)

// redissonSideBySide runs f once against one real redis-server and then through
// the proxy over 5 masters (all up, then 2 of 5 down): every assertion of
// f holds for both. proxied says which one runs.
func redissonSideBySide(t *testing.T, f func(t *testing.T, cl *redis.Client, proxied bool, c *cluster)) {
	t.Run("one redis", func(t *testing.T) {
		f(t, direct(t, startRedis(t).Addr), false, nil)
	})
	withTwoDown(t, "proxy, ", func(t *testing.T, c *cluster, p *proxyProc, _ int) {
		f(t, newClient(t, p.Addr, nil), true, c)
	})
}

// TestRedissonWriteLockSideBySide replays RReadWriteLock's write lock:
// lock, re-entry, contention, isLocked, the watchdog renewing a write lock
// and a plain RLock of one client in one call, unlock with its PUBLISH and
// latch, and forceUnlock.
func TestRedissonWriteLockSideBySide(t *testing.T) {
	lock, unlock := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteUnlock)
	force, renew, rlock := redis.NewScript(redissonWriteForceUnlock), redis.NewScript(redissonRenewAll), redis.NewScript(redissonLock)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, proxied bool, c *cluster) {
		ctx := t.Context()
		name, channel, plain := "rw", "redisson_rwlock:{rw}", "plain"
		a, b := "8c1f0a5e-1111-2222-3333-000000000001:1:write", "8c1f0a5e-1111-2222-3333-000000000002:9:write"
		latch := func(req string) []string { return []string{name, channel, "redisson_unlock_latch:{rw}:" + req} }
		sub := cl.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}

		// Lock and re-entry: nil; the lease grows by ARGV[1] on re-entry.
		for i := range 2 {
			if err := lock.Run(ctx, cl, []string{name}, 30000, a).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock #%d: %v; want nil (acquired)", i+1, err)
			}
		}
		if ms := cl.PTTL(ctx, name).Val(); ms <= 30*time.Second || ms > time.Minute {
			t.Errorf("PTTL after re-entry = %v; want in (30s, 60s]", ms)
		}
		if c != nil {
			for _, i := range c.live() {
				if h := c.direct[i].HGetAll(ctx, name).Val(); len(h) != 2 || h["mode"] != "write" || h[a] != "2" {
					t.Errorf("node %d holds %v; want mode=write and %s=2", i, h, a)
				}
			}
		}
		// Contention: the holder's PTTL; a write lock has one holder.
		if ms, err := lock.Run(ctx, cl, []string{name}, 30000, b).Int64(); err != nil || ms <= 0 || ms > 60000 {
			t.Fatalf("contended write lock = %d, %v; want the PTTL", ms, err)
		}
		// isLocked: HGET of mode.
		if v, err := cl.HGet(ctx, name, "mode").Result(); v != "write" || err != nil {
			t.Errorf("HGET %s mode = %q, %v; want write", name, v, err)
		}
		// The watchdog renews the write lock and a plain RLock of the same
		// client in one call, and answers 0 for a lock it does not hold.
		if err := rlock.Run(ctx, cl, []string{plain}, 30000, strings.TrimSuffix(a, ":write")).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("RLock: %v; want nil (acquired)", err)
		}
		got, err := renew.Run(ctx, cl, []string{name, plain, "gone"}, 45000, a, strings.TrimSuffix(a, ":write"), a).Int64Slice()
		if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 1 || got[2] != 0 {
			t.Fatalf("renew of a write lock, an RLock and a free key = %v, %v; want [1 1 0]", got, err)
		}
		for _, k := range []string{name, plain} {
			if ms := cl.PTTL(ctx, k).Val(); ms <= 30*time.Second || ms > 45*time.Second {
				t.Errorf("PTTL %s after renewal = %v; want in (30s, 45s]", k, ms)
			}
		}
		if got, err := renew.Run(ctx, cl, []string{name}, 45000, b).Int64Slice(); err != nil || len(got) != 1 || got[0] != 0 {
			t.Fatalf("renew by another = %v, %v; want [0]", got, err)
		}

		// Unlock by another: nil; then 2 -> 1: 0; then 1 -> 0: 1, with
		// READ_UNLOCK_MESSAGE published and the lock gone.
		if err := unlock.Run(ctx, cl, latch("r0"), 1, 30000, b, "PUBLISH", 3000).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("unlock by another: %v; want nil", err)
		}
		if v, err := unlock.Run(ctx, cl, latch("r1"), 1, 30000, a, "PUBLISH", 3000).Int64(); v != 0 || err != nil {
			t.Fatalf("unlock 1 of 2 = %d, %v; want 0", v, err)
		}
		if v, err := unlock.Run(ctx, cl, latch("r2"), 1, 30000, a, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
			t.Fatalf("unlock 2 of 2 = %d, %v; want 1", v, err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "1" {
			t.Fatalf("unlock message = %v, %v; want 1 on %s", msg, err, channel)
		}
		if n := cl.Exists(ctx, name).Val(); n != 0 {
			t.Errorf("EXISTS %s after unlock = %d; want 0", name, n)
		}
		if v, err := unlock.Run(ctx, cl, latch("r2"), 1, 30000, a, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
			t.Fatalf("repeated unlock = %d, %v; want 1 from the latch", v, err)
		}
		// An unlock once the lock is gone (it expired): nil, and the
		// message and the latch as one Redis (the latch's "1" is ARGV[1]).
		if err := unlock.Run(ctx, cl, latch("r3"), 1, 30000, a, "PUBLISH", 3000).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("unlock of a lock gone: %v; want nil", err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "1" {
			t.Fatalf("message of the unlock of a lock gone = %v, %v; want 1 on %s", msg, err, channel)
		}
		if v, err := cl.Get(ctx, "redisson_unlock_latch:{rw}:r3").Result(); v != "1" || err != nil {
			t.Errorf("latch of the unlock of a lock gone = %q, %v; want 1", v, err)
		}

		// Now B's; forceUnlock deletes whoever holds it on one Redis. The
		// proxy refuses it without allow_force_del (it deletes another
		// token's hold) and B keeps it.
		if err := lock.Run(ctx, cl, []string{name}, 30000, b).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock by B after unlock: %v; want nil (acquired)", err)
		}
		v, err := force.Run(ctx, cl, []string{name, channel}, 1, "PUBLISH").Int64()
		if !proxied {
			if v != 1 || err != nil {
				t.Fatalf("forceUnlock = %d, %v; want 1", v, err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "Redisson's forceUnlock is refused: it deletes every holder's lock") {
			t.Fatalf("forceUnlock through the proxy = %d, %v; want a refusal", v, err)
		}
		if got, err := renew.Run(ctx, cl, []string{name}, 30000, b).Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
			t.Fatalf("B's renewal after the refused forceUnlock = %v, %v; want [1]", got, err)
		}
	})
}

// TestRedissonWatchdogRenewsInTheTakesMillisecond: the watchdog's
// renewal sent right after the take, with the same lease, so that on
// some masters it lands in the take's millisecond and leaves the expiry
// as it was: one Redis renews ([1]), and so does the proxy with 2 of 5
// masters down (it answered NOQUORUM when the masters split between an
// expiry moved and one left as it was: the renewal ran by its effect).
func TestRedissonWatchdogRenewsInTheTakesMillisecond(t *testing.T) {
	lock, renew, rlock := redis.NewScript(redissonWriteLock), redis.NewScript(redissonRenewAll), redis.NewScript(redissonLock)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, _ bool, _ *cluster) {
		ctx := t.Context()
		for _, s := range []*redis.Script{lock, renew, rlock} {
			if err := s.Load(ctx, cl).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 40 {
			w, plain, a := fmt.Sprintf("ms-w%d", i), fmt.Sprintf("ms-p%d", i), fmt.Sprintf("6b6b-%04d:1", i)
			cmds, _ := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
				lock.EvalSha(ctx, p, []string{w}, 30000, a+":write")
				rlock.EvalSha(ctx, p, []string{plain}, 30000, a)
				renew.EvalSha(ctx, p, []string{w, plain}, 30000, a+":write", a)
				return nil
			})
			for _, c := range cmds[:2] {
				if err := c.Err(); !errors.Is(err, redis.Nil) {
					t.Fatalf("#%d %v: %v; want nil (acquired)", i, c.Args(), err)
				}
			}
			if got, err := cmds[2].(*redis.Cmd).Int64Slice(); err != nil || len(got) != 2 || got[0] != 1 || got[1] != 1 {
				t.Fatalf("#%d renewal at once = %v, %v; want [1 1]", i, got, err)
			}
		}
	})
}

// TestRenewalServedByEffectInTheTakesMillisecond: Redisson's one-key
// renewal (served by its effect, not by SHA) sent right after the take
// with the same lease lands on some masters in the take's millisecond and
// leaves the expiry as it was; one Redis renews (1), and so does the
// proxy with 2 of 5 masters down (it answered NOQUORUM when the masters
// split between an expiry moved and one left as it was).
func TestRenewalServedByEffectInTheTakesMillisecond(t *testing.T) {
	rlock, renew := redis.NewScript(redissonLock), redis.NewScript(redissonRenew)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, _ bool, _ *cluster) {
		ctx := t.Context()
		for _, s := range []*redis.Script{rlock, renew} {
			if err := s.Load(ctx, cl).Err(); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 40 {
			k, a := fmt.Sprintf("ms-e%d", i), fmt.Sprintf("6c6c-%04d:1", i)
			cmds, _ := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
				rlock.EvalSha(ctx, p, []string{k}, 30000, a)
				renew.EvalSha(ctx, p, []string{k}, 30000, a)
				return nil
			})
			if err := cmds[0].Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("#%d take: %v; want nil (acquired)", i, err)
			}
			if got, err := cmds[1].(*redis.Cmd).Int64(); err != nil || got != 1 {
				t.Fatalf("#%d renewal at once = %v, %v; want 1", i, got, err)
			}
		}
	})
}

// TestRedissonLockDowngradeSideBySide replays Redisson's lock
// downgrade: a thread holding the write lock (twice) takes the read
// lock, both renewed by the watchdogs, then unlocks the write lock and
// still reads; another thread's reader and writer are kept out until
// then, and the reader comes in after. Neither the write lock's renewal
// nor its unlock's count-down shortens the hash below the reader's lease
// (one Redis's can).
func TestRedissonLockDowngradeSideBySide(t *testing.T) {
	wlock, wunlock, renew := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteUnlock), redis.NewScript(redissonRenewAll)
	rrenew := redis.NewScript(redissonReadRenew)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, proxied bool, c *cluster) {
		ctx := t.Context()
		const name, channel = "dg", "redisson_rwlock:{dg}"
		me, other := readLockClient{name, "2f2f-0001:1"}, readLockClient{name, "2f2f-0002:7"}
		sub := cl.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 2 { // taken and taken again
			if err := wlock.Run(ctx, cl, []string{name}, 30000, me.thread+":write").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock #%d: %v; want nil (acquired)", i+1, err)
			}
		}
		me.mustTake(t, cl, 30000)
		if c != nil {
			for _, i := range c.live() {
				if h := c.direct[i].HGetAll(ctx, name).Val(); len(h) != 3 || h["mode"] != "write" || h[me.thread+":write"] != "2" || h[me.thread] != "1" {
					t.Errorf("node %d holds %v; want mode=write, the write lock and its reader", i, h)
				}
			}
		}
		if ms, err := other.take(t, cl, 30000); err != nil || ms <= 0 || ms > 60000 {
			t.Fatalf("another thread's read lock beside the downgrading writer = %d, %v; want the PTTL", ms, err)
		}
		if ms, err := wlock.Run(ctx, cl, []string{name}, 30000, other.thread+":write").Int64(); err != nil || ms <= 0 {
			t.Fatalf("another writer = %d, %v; want the PTTL", ms, err)
		}
		// The watchdogs: the write lock's (LockTask) and the reader's
		// (ReadLockTask), each renewing its own hold.
		if got, err := renew.Run(ctx, cl, []string{name}, 30000, me.thread+":write").Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
			t.Fatalf("write lock renewal beside its reader = %v, %v; want [1]", got, err)
		}
		if got, err := rrenew.Run(ctx, cl, []string{name, "{" + name + "}"}, 30000, 1, me.thread).Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
			t.Fatalf("read lock renewal under its write lock = %v, %v; want [1]", got, err)
		}
		// The hash outlives the reader's lease (the proxy never shortens
		// it while the reader is in it; one Redis here sets both alike).
		readerLeft := func(when string) {
			t.Helper()
			if h, r := cl.PTTL(ctx, name).Val(), cl.PTTL(ctx, me.timeoutPrefix()+":1").Val(); h < r || r <= 25*time.Second {
				t.Errorf("PTTL of the hash %v, of the reader's hold %v, %s; want the reader's above 25s and the hash's no shorter", h, r, when)
			}
		}
		readerLeft("after the renewals")
		if proxied {
			// Taken again beside its reader: refused by the effect path,
			// which changes no hash another token holds; nothing kept.
			if err := wlock.Run(ctx, cl, []string{name}, 30000, me.thread+":write").Err(); err == nil || !strings.Contains(err.Error(), "script refused") {
				t.Fatalf("write lock taken again beside its reader through the proxy: %v; want a refusal", err)
			}
			for _, i := range c.live() {
				if n := c.direct[i].HGet(ctx, name, me.thread+":write").Val(); n != "2" {
					t.Errorf("node %d counts the write lock %q after the refusal; want 2", i, n)
				}
			}
		}
		// The write unlocks: one hold counted down (0), then the last
		// (1), which leaves the reader: mode read, no message (the lock
		// is not free).
		wu := func(req string) (int64, error) {
			return wunlock.Run(ctx, cl, []string{name, channel, "redisson_unlock_latch:{dg}:" + req}, 1, 30000, me.thread+":write", "PUBLISH", 3000).Int64()
		}
		if v, err := wu("d0"); v != 0 || err != nil {
			t.Fatalf("write unlock of 1 of 2 under its reader = %d, %v; want 0", v, err)
		}
		readerLeft("after a write unlock's count-down")
		if v, err := wu("d1"); v != 1 || err != nil {
			t.Fatalf("write unlock under its reader = %d, %v; want 1", v, err)
		}
		if v, err := wu("d1"); v != 1 || err != nil {
			t.Fatalf("repeated write unlock = %d, %v; want 1 from the latch", v, err)
		}
		if msg, err := sub.ReceiveTimeout(ctx, 300*time.Millisecond); err == nil {
			t.Errorf("a message after a write unlock that leaves a reader: %v", msg)
		}
		if m, err := cl.HGet(ctx, name, "mode").Result(); m != "read" || err != nil {
			t.Errorf("mode after the downgrade = %q, %v; want read", m, err)
		}
		if ms, err := wlock.Run(ctx, cl, []string{name}, 30000, other.thread+":write").Int64(); err != nil || ms <= 0 {
			t.Fatalf("another writer after the downgrade = %d, %v; want the PTTL", ms, err)
		}
		other.mustTake(t, cl, 30000)
		if v, err := me.unlock(t, cl, "d2"); v != 0 || err != nil {
			t.Fatalf("the downgraded reader's unlock beside another = %d, %v; want 0", v, err)
		}
		if v, err := other.unlock(t, cl, "d3"); v != 1 || err != nil {
			t.Fatalf("the last reader's unlock = %d, %v; want 1", v, err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
			t.Fatalf("unlock message = %v, %v; want 0 on %s", msg, err, channel)
		}
		if err := wlock.Run(ctx, cl, []string{name}, 30000, other.thread+":write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("another writer once free: %v; want nil (acquired)", err)
		}
	})
}

// TestRedissonLockDowngradeThroughTwoProxies: a downgrade seen through
// two proxies over the same masters (all up, 2 of 5 down): the write
// lock and its reader taken through one, renewed and the write lock
// unlocked through the other; another thread's reader is kept out until
// then and comes in after, through either, and no writer gets in.
func TestRedissonLockDowngradeThroughTwoProxies(t *testing.T) {
	wlock, wunlock, renew := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteUnlock), redis.NewScript(redissonRenewAll)
	rrenew := redis.NewScript(redissonReadRenew)
	for _, down := range []int{0, 2} {
		t.Run(map[int]string{0: "all up", 2: "2 of 5 down"}[down], func(t *testing.T) {
			ctx := t.Context()
			c := startNodes(t, 5)
			for i := range down {
				c.kill(i)
			}
			p1 := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...).Client
			p2 := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...).Client
			const name = "dg2"
			me, other := readLockClient{name, "3a3a-0001:1"}, readLockClient{name, "3a3a-0002:5"}
			if err := wlock.Run(ctx, p1, []string{name}, 30000, me.thread+":write").Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock through proxy 1: %v; want nil (acquired)", err)
			}
			me.mustTake(t, p1, 30000)
			if ms, err := other.take(t, p2, 30000); err != nil || ms <= 0 {
				t.Fatalf("another thread's read lock through proxy 2 = %d, %v; want the PTTL", ms, err)
			}
			if got, err := renew.Run(ctx, p2, []string{name}, 30000, me.thread+":write").Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
				t.Fatalf("write lock renewal through proxy 2 = %v, %v; want [1]", got, err)
			}
			if got, err := rrenew.Run(ctx, p2, []string{name, "{" + name + "}"}, 30000, 1, me.thread).Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
				t.Fatalf("read lock renewal through proxy 2 = %v, %v; want [1]", got, err)
			}
			if v, err := wunlock.Run(ctx, p2, []string{name, "redisson_rwlock:{" + name + "}", "redisson_unlock_latch:{dg2}:q1"}, 1, 30000, me.thread+":write", "PUBLISH", 3000).Int64(); v != 1 || err != nil {
				t.Fatalf("write unlock through proxy 2 = %d, %v; want 1", v, err)
			}
			for _, p := range []*redis.Client{p1, p2} {
				if ms, err := wlock.Run(ctx, p, []string{name}, 30000, other.thread+":write").Int64(); err != nil || ms <= 0 {
					t.Fatalf("another writer after the downgrade = %d, %v; want the PTTL", ms, err)
				}
			}
			other.mustTake(t, p1, 30000)
			for _, i := range c.live() {
				if h := c.direct[i].HGetAll(ctx, name).Val(); len(h) != 3 || h["mode"] != "read" || h[me.thread] != "1" || h[other.thread] != "1" {
					t.Errorf("node %d holds %v; want mode=read and the two readers", i, h)
				}
			}
		})
	}
}

// TestRedissonWriteLockForceUnlockSideBySide: with allow_force_del, the
// write lock's forceUnlock is served as one Redis runs it: 1 and one
// message of 1 for a write-locked key, which is then gone on every
// master; 0, nothing deleted and no message, for a read-locked or free
// key (and the read lock's forceUnlock leaves a write lock alone).
func TestRedissonWriteLockForceUnlockSideBySide(t *testing.T) {
	lock, force, rforce := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteForceUnlock), redis.NewScript(redissonReadForceUnlock)
	check := func(t *testing.T, cl *redis.Client, c *cluster) {
		ctx := t.Context()
		const name, channel = "fw", "redisson_rwlock:{fw}"
		sub := cl.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if err := lock.Run(ctx, cl, []string{name}, 30000, "3c3c-0001:1:write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock: %v; want nil (acquired)", err)
		}
		if v, err := rforce.Run(ctx, cl, []string{name, channel}, 0, "PUBLISH").Int64(); v != 0 || err != nil {
			t.Fatalf("read lock forceUnlock of a write lock = %d, %v; want 0", v, err)
		}
		if v, err := force.Run(ctx, cl, []string{name, channel}, 1, "PUBLISH").Int64(); v != 1 || err != nil {
			t.Fatalf("forceUnlock of a write lock = %d, %v; want 1", v, err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "1" {
			t.Fatalf("forceUnlock message = %v, %v; want 1 on %s", msg, err, channel)
		}
		if msg, err := sub.ReceiveTimeout(ctx, 300*time.Millisecond); err == nil {
			t.Errorf("a second message after one forceUnlock: %v", msg)
		}
		if n := cl.Exists(ctx, name).Val(); n != 0 {
			t.Errorf("EXISTS %s after forceUnlock = %d; want 0", name, n)
		}
		if c != nil {
			for _, i := range c.live() {
				if n := c.direct[i].Exists(ctx, name).Val(); n != 0 {
					t.Errorf("node %d keeps the write lock after forceUnlock", i)
				}
			}
		}
		if v, err := force.Run(ctx, cl, []string{name, channel}, 1, "PUBLISH").Int64(); v != 0 || err != nil {
			t.Fatalf("forceUnlock of a free lock = %d, %v; want 0", v, err)
		}
		r := readLockClient{name, "3c3c-0002:1"}
		r.mustTake(t, cl, 30000)
		if v, err := force.Run(ctx, cl, []string{name, channel}, 1, "PUBLISH").Int64(); v != 0 || err != nil {
			t.Fatalf("write lock forceUnlock of a read lock = %d, %v; want 0", v, err)
		}
		if v, err := r.unlock(t, cl, "f1"); v != 1 || err != nil {
			t.Fatalf("the reader's unlock after a write lock forceUnlock = %d, %v; want 1 (still held)", v, err)
		}
	}
	t.Run("one redis", func(t *testing.T) { check(t, direct(t, startRedis(t).Addr), nil) })
	for _, down := range []int{0, 2} {
		t.Run(fmt.Sprintf("proxy, %d of 5 down", down), func(t *testing.T) {
			c, p := setup(t, 5, proxy.Config{AllowForceDel: true})
			for i := range down {
				c.kill(i)
			}
			check(t, newClient(t, p.Addr, nil), c)
		})
	}
}

// TestRedissonLockForceUnlockSideBySide: with allow_force_del, RLock's
// forceUnlock is served as one Redis runs it: 1 and one message while
// the lock is held (by another thread), 0 once it is free; without it,
// the forceUnlock refusal that says why, and the holder keeps the lock.
func TestRedissonLockForceUnlockSideBySide(t *testing.T) {
	lock, force := redis.NewScript(redissonLock), redis.NewScript(redissonForceUnlock)
	const name, channel = "fl", "redisson_lock__channel:{fl}"
	check := func(t *testing.T, cl *redis.Client, c *cluster) {
		ctx := t.Context()
		sub := cl.Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if err := lock.Run(ctx, cl, []string{name}, 30000, "4d4d-0001:1").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("lock: %v; want nil (acquired)", err)
		}
		if v, err := force.Run(ctx, cl, []string{name, channel}, 0, "PUBLISH").Int64(); v != 1 || err != nil {
			t.Fatalf("forceUnlock of a held lock = %d, %v; want 1", v, err)
		}
		if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "0" {
			t.Fatalf("forceUnlock message = %v, %v; want 0 on %s", msg, err, channel)
		}
		if msg, err := sub.ReceiveTimeout(ctx, 300*time.Millisecond); err == nil {
			t.Errorf("a second message after one forceUnlock: %v", msg)
		}
		if c != nil {
			for _, i := range c.live() {
				if n := c.direct[i].Exists(ctx, name).Val(); n != 0 {
					t.Errorf("node %d keeps the lock after forceUnlock", i)
				}
			}
		}
		if v, err := force.Run(ctx, cl, []string{name, channel}, 0, "PUBLISH").Int64(); v != 0 || err != nil {
			t.Fatalf("forceUnlock of a free lock = %d, %v; want 0", v, err)
		}
		if err := lock.Run(ctx, cl, []string{name}, 30000, "4d4d-0002:1").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("another thread's lock after forceUnlock: %v; want nil (acquired)", err)
		}
	}
	t.Run("one redis", func(t *testing.T) { check(t, direct(t, startRedis(t).Addr), nil) })
	for _, down := range []int{0, 2} {
		t.Run(fmt.Sprintf("proxy, %d of 5 down", down), func(t *testing.T) {
			c, p := setup(t, 5, proxy.Config{AllowForceDel: true})
			for i := range down {
				c.kill(i)
			}
			check(t, newClient(t, p.Addr, nil), c)
		})
	}
	t.Run("proxy, without allow_force_del", func(t *testing.T) {
		c, p := setup(t, 3, proxy.Config{})
		cl := newClient(t, p.Addr, nil)
		ctx := t.Context()
		if err := lock.Run(ctx, cl, []string{name}, 30000, "4d4d-0001:1").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("lock: %v; want nil (acquired)", err)
		}
		_, err := force.Run(ctx, cl, []string{name, channel}, 0, "PUBLISH").Int64()
		if err == nil || !strings.Contains(err.Error(), "Redisson's forceUnlock is refused: it deletes every holder's lock") {
			t.Fatalf("forceUnlock without allow_force_del = %v; want the refusal", err)
		}
		for i := range 3 {
			if n := c.direct[i].Exists(ctx, name).Val(); n != 1 {
				t.Errorf("node %d lost the lock after a refused forceUnlock", i)
			}
		}
	})
}

// TestRedissonWriteLockWatchdogOutlivesLease: the watchdog's one-call
// renewal of a write lock and an RLock keeps both held for several
// leases while another client asks (the renewal was refused, and the
// write lock lapsed after one lease); once it stops, the locks lapse.
func TestRedissonWriteLockWatchdogOutlivesLease(t *testing.T) {
	lock, renew, rlock := redis.NewScript(redissonWriteLock), redis.NewScript(redissonRenewAll), redis.NewScript(redissonLock)
	redissonSideBySide(t, func(t *testing.T, cl *redis.Client, _ bool, _ *cluster) {
		ctx := t.Context()
		const lease = 1500
		a, b := "7d2e-0001:1", "7d2e-0002:4"
		if err := lock.Run(ctx, cl, []string{"rw"}, lease, a+":write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock: %v; want nil (acquired)", err)
		}
		if err := rlock.Run(ctx, cl, []string{"plain"}, lease, a).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("RLock: %v; want nil (acquired)", err)
		}
		for end := time.Now().Add(3 * lease * time.Millisecond); time.Now().Before(end); time.Sleep(lease / 3 * time.Millisecond) {
			got, err := renew.Run(ctx, cl, []string{"rw", "plain"}, lease, a+":write", a).Int64Slice()
			if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 1 {
				t.Fatalf("renewal = %v, %v; want [1 1]", got, err)
			}
			if ms, err := lock.Run(ctx, cl, []string{"rw"}, lease, b+":write").Int64(); err != nil || ms <= 0 {
				t.Fatalf("another writer while renewed = %d, %v; want the PTTL", ms, err)
			}
			if ms, err := rlock.Run(ctx, cl, []string{"plain"}, lease, b).Int64(); err != nil || ms <= 0 {
				t.Fatalf("another RLock while renewed = %d, %v; want the PTTL", ms, err)
			}
		}
		time.Sleep((lease + 100) * time.Millisecond)
		if err := lock.Run(ctx, cl, []string{"rw"}, lease, b+":write").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("write lock after the renewals stopped: %v; want nil (acquired)", err)
		}
	})
}

// TestRedissonWriteLockThroughTwoProxies: one write lock seen through two
// proxies over the same masters: taken through one, contended and renewed
// through the other, released through the first with its message
// delivered to a subscriber of the second, then taken through the second.
func TestRedissonWriteLockThroughTwoProxies(t *testing.T) {
	lock, unlock, renew := redis.NewScript(redissonWriteLock), redis.NewScript(redissonWriteUnlock), redis.NewScript(redissonRenewAll)
	for _, down := range []int{0, 2} {
		t.Run(map[int]string{0: "all up", 2: "2 of 5 down"}[down], func(t *testing.T) {
			ctx := t.Context()
			c := startNodes(t, 5)
			for i := range down {
				c.kill(i)
			}
			p1 := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...).Client
			p2 := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...).Client
			name, channel := "rw2", "redisson_rwlock:{rw2}"
			a, b := "5e6f-0001:1:write", "5e6f-0002:3:write"
			sub := p2.Subscribe(ctx, channel)
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if err := lock.Run(ctx, p1, []string{name}, 30000, a).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock through proxy 1: %v; want nil (acquired)", err)
			}
			if ms, err := lock.Run(ctx, p2, []string{name}, 30000, b).Int64(); err != nil || ms <= 0 {
				t.Fatalf("contended write lock through proxy 2 = %d, %v; want the PTTL", ms, err)
			}
			if got, err := renew.Run(ctx, p2, []string{name}, 30000, a).Int64Slice(); err != nil || len(got) != 1 || got[0] != 1 {
				t.Fatalf("renewal through proxy 2 = %v, %v; want [1]", got, err)
			}
			if v, err := unlock.Run(ctx, p1, []string{name, channel, "redisson_unlock_latch:{rw2}:q1"}, 1, 30000, a, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
				t.Fatalf("unlock through proxy 1 = %d, %v; want 1", v, err)
			}
			if msg, err := sub.ReceiveMessage(ctx); err != nil || msg.Payload != "1" {
				t.Fatalf("unlock message through proxy 2 = %v, %v; want 1", msg, err)
			}
			if err := lock.Run(ctx, p2, []string{name}, 30000, b).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("write lock through proxy 2 after the unlock: %v; want nil (acquired)", err)
			}
			for _, i := range c.live() {
				if h := c.direct[i].HGetAll(ctx, name).Val(); len(h) != 2 || h["mode"] != "write" || h[b] != "1" {
					t.Errorf("node %d holds %v; want B's write lock alone", i, h)
				}
			}
		})
	}
}

// TestRedissonWatchdogPastItsTimeout: Redisson's defaults, a 30s lease
// renewed by the watchdog every 10s (a third of it), through the proxy
// for longer than the lease: the write lock and the RLock stay held and
// another writer stays out (the write lock lapsed at 30s before).
func TestRedissonWatchdogPastItsTimeout(t *testing.T) {
	skipLong(t)
	lock, renew, rlock := redis.NewScript(redissonWriteLock), redis.NewScript(redissonRenewAll), redis.NewScript(redissonLock)
	_, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	a, b := "9a9a-0001:1", "9a9a-0002:2"
	if err := lock.Run(ctx, p.Client, []string{"wd"}, 30000, a+":write").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("write lock: %v; want nil (acquired)", err)
	}
	if err := rlock.Run(ctx, p.Client, []string{"wd-plain"}, 30000, a).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("RLock: %v; want nil (acquired)", err)
	}
	for range 4 { // 40s
		time.Sleep(10 * time.Second)
		got, err := renew.Run(ctx, p.Client, []string{"wd", "wd-plain"}, 30000, a+":write", a).Int64Slice()
		if err != nil || len(got) != 2 || got[0] != 1 || got[1] != 1 {
			t.Fatalf("watchdog renewal = %v, %v; want [1 1]", got, err)
		}
		if ms, err := lock.Run(ctx, p.Client, []string{"wd"}, 30000, b+":write").Int64(); err != nil || ms <= 20000 {
			t.Fatalf("another writer = %d, %v; want the PTTL of a renewed lock", ms, err)
		}
	}
}
