package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Scripts served by what they do (issue 10): real clients whose scripts
// are not in the catalogue, through the proxy over 5 real masters.

// go-zero's RedisLock (github.com/zeromicro/go-zero v1.10.3,
// core/stores/redis: lockscript.lua and delscript.lua, byte for byte).
// The module itself is not a dependency: its tree moves the Prometheus
// client to a version the metrics package's parser does not accept.
const (
	goZeroLock    = "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n    redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2])\n    return \"OK\"\nelse\n    return redis.call(\"SET\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[2])\nend"
	goZeroRelease = "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n    return redis.call(\"DEL\", KEYS[1])\nelse\n    return 0\nend"
)

// goZeroLock replays go-zero's RedisLock: EVALSHA (EVAL on NOSCRIPT) of
// its scripts, a 16-character id, seconds*1000+500 ms, and its reply
// checks (nil or a non-"OK" reply is false; release wants the integer 1).
type goZeroRedisLock struct {
	c       *redis.Client
	key, id string
	seconds int
}

var goZeroLockScript, goZeroReleaseScript = redis.NewScript(goZeroLock), redis.NewScript(goZeroRelease)

func (l *goZeroRedisLock) acquire(ctx context.Context) (bool, error) {
	resp, err := goZeroLockScript.Run(ctx, l.c, []string{l.key}, l.id, strconv.Itoa(l.seconds*1000+500)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	reply, ok := resp.(string)
	return ok && reply == "OK", nil
}

func (l *goZeroRedisLock) release(ctx context.Context) (bool, error) {
	resp, err := goZeroReleaseScript.Run(ctx, l.c, []string{l.key}, l.id).Result()
	if err != nil {
		return false, err
	}
	n, ok := resp.(int64)
	return ok && n == 1, nil
}

// TestGoZeroRedisLockThroughProxy runs go-zero's RedisLock protocol: its
// re-entrant acquire script (whose refresh branch returns a bulk "OK") is
// served by effect, its release by the catalogue.
func TestGoZeroRedisLockThroughProxy(t *testing.T) {
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		cl := newClient(t, p.Addr, nil)
		key := "gozero:lock"
		a := &goZeroRedisLock{c: cl, key: key, id: "aB3dE5gH7jK9mN1p", seconds: 2}
		b := &goZeroRedisLock{c: cl, key: key, id: "zY8xW6vU4tS2rQ0o", seconds: 2}
		if ok, err := a.acquire(ctx); !ok || err != nil {
			t.Fatalf("acquire = %v, %v; want true", ok, err)
		}
		c.wantHeldEverywhere(t, key, a.id, 2500*time.Millisecond)
		if ok, err := b.acquire(ctx); ok || err != nil {
			t.Fatalf("contended acquire = %v, %v; want false, nil", ok, err)
		}
		// Re-entry refreshes: the bulk "OK" branch.
		time.Sleep(300 * time.Millisecond)
		if v, err := goZeroLockScript.Run(ctx, cl, []string{key}, a.id, "2500").Result(); v != "OK" || err != nil {
			t.Fatalf("re-entrant acquire = %#v, %v; want the bulk OK", v, err)
		}
		if ms, err := cl.PTTL(ctx, key).Result(); err != nil || ms <= 2*time.Second || ms > 2500*time.Millisecond {
			t.Fatalf("PTTL after refresh = %v, %v; want over 2s", ms, err)
		}
		if v, err := cl.Get(ctx, key).Result(); v != a.id || err != nil {
			t.Fatalf("GET = %q, %v; want the owner's id", v, err)
		}
		c.wantHeldEverywhere(t, key, a.id, 2500*time.Millisecond)
		if ok, err := b.release(ctx); ok || err != nil {
			t.Fatalf("stale release by another = %v, %v; want false, nil", ok, err)
		}
		c.wantHeldEverywhere(t, key, a.id, 2500*time.Millisecond)
		if ok, err := a.release(ctx); !ok || err != nil {
			t.Fatalf("release = %v, %v; want true", ok, err)
		}
		c.wantFreeEverywhere(t, key)
		if ok, err := a.release(ctx); ok || err != nil {
			t.Fatalf("second release = %v, %v; want false, nil", ok, err)
		}
		if ok, err := b.acquire(ctx); !ok || err != nil {
			t.Fatalf("acquire after release = %v, %v; want true", ok, err)
		}
		if down > 0 {
			c.kill(down)
			if ok, err := a.acquire(ctx); ok || err == nil || !strings.Contains(err.Error(), "NOQUORUM") {
				t.Fatalf("acquire with 3 of 5 down = %v, %v; want a NOQUORUM error", ok, err)
			}
		}
	})
}

// Redisson's RLock scripts, byte for byte as RedissonLock.java and
// RedissonBaseLock.java build them (Java string concatenation).
const (
	redissonLock = "if ((redis.call('exists', KEYS[1]) == 0) " +
		"or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then " +
		"redis.call('hincrby', KEYS[1], ARGV[2], 1); " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return nil; " +
		"end; " +
		"return redis.call('pttl', KEYS[1]);"
	redissonUnlock = "local val = redis.call('get', KEYS[3]); " +
		"if val ~= false then " +
		"return tonumber(val);" +
		"end; " +
		"if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then " +
		"return nil;" +
		"end; " +
		"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); " +
		"if (counter > 0) then " +
		"redis.call('pexpire', KEYS[1], ARGV[2]); " +
		"redis.call('set', KEYS[3], 0, 'px', ARGV[5]); " +
		"return 0; " +
		"else " +
		"redis.call('del', KEYS[1]); " +
		"redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
		"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); " +
		"return 1; " +
		"end; "
	redissonRenew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); " +
		"return 1; " +
		"end; " +
		"return 0;"
)

// TestRedissonLockScriptsThroughProxy replays Redisson's RLock protocol:
// re-entrant hash locks, the contended PTTL reply, watchdog renewal, and
// an unlock that publishes (the publish command passed as ARGV[4]) and
// leaves an unlock latch.
func TestRedissonLockScriptsThroughProxy(t *testing.T) {
	lock, unlock, renew := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock), redis.NewScript(redissonRenew)
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		cl := newClient(t, p.Addr, nil)
		name, channel := "redisson:lock", "redisson_lock__channel:{redisson:lock}"
		owner, other := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1", "9f1c2d3e-aaaa-bbbb-cccc-000000000002:7"
		sub := direct(t, c.addrs[c.live()[0]]).Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}

		// tryLockInnerAsync: nil means acquired, twice (re-entry).
		for i := range 2 {
			if err := lock.Run(ctx, cl, []string{name}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("lock #%d: %v; want nil (acquired)", i+1, err)
			}
		}
		for _, i := range c.live() {
			n, err := c.direct[i].HGet(ctx, name, owner).Result()
			pttl := c.direct[i].PTTL(ctx, name).Val()
			if err != nil || n != "2" || pttl <= 0 || pttl > 30*time.Second {
				t.Errorf("node %d: HGET = %q, %v, PTTL %v; want 2 holds for up to 30s", i, n, err, pttl)
			}
		}
		// The hash lock through the proxy's own reads: PTTL and
		// EXISTS as Redis answers them, GET a WRONGTYPE error.
		if ms, err := cl.PTTL(ctx, name).Result(); err != nil || ms <= 0 || ms > 30*time.Second {
			t.Errorf("PTTL of the hash lock = %v, %v; want up to 30s", ms, err)
		}
		if n, err := cl.Exists(ctx, name).Result(); n != 1 || err != nil {
			t.Errorf("EXISTS of the hash lock = %d, %v; want 1", n, err)
		}
		if err := cl.Get(ctx, name).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Errorf("GET of the hash lock: %v; want WRONGTYPE", err)
		}
		// Contended: the holder's PTTL as an integer.
		if ms, err := lock.Run(ctx, cl, []string{name}, 30000, other).Int64(); err != nil || ms <= 0 || ms > 30000 {
			t.Fatalf("contended lock = %d, %v; want the PTTL", ms, err)
		}
		// Renewal: 1 for the holder, 0 for another.
		if v, err := renew.Run(ctx, cl, []string{name}, 30000, owner).Int64(); v != 1 || err != nil {
			t.Fatalf("renew = %d, %v; want 1", v, err)
		}
		if v, err := renew.Run(ctx, cl, []string{name}, 30000, other).Int64(); v != 0 || err != nil {
			t.Fatalf("renew by another = %d, %v; want 0", v, err)
		}
		// Unlock by another: nil (IllegalMonitorStateException).
		keys := func(req string) []string {
			return []string{name, channel, "redisson_unlock_latch:{redisson:lock}:" + req}
		}
		if err := unlock.Run(ctx, cl, keys("r0"), 0, 30000, other, "PUBLISH", 3000).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("unlock by another: %v; want nil", err)
		}
		// First unlock: count 2 -> 1, still held: 0.
		if v, err := unlock.Run(ctx, cl, keys("r1"), 0, 30000, owner, "PUBLISH", 3000).Int64(); v != 0 || err != nil {
			t.Fatalf("unlock 1 of 2 = %d, %v; want 0", v, err)
		}
		// Second: released and published: 1.
		if v, err := unlock.Run(ctx, cl, keys("r2"), 0, 30000, owner, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
			t.Fatalf("unlock 2 of 2 = %d, %v; want 1", v, err)
		}
		for _, i := range c.live() {
			if n := c.direct[i].Exists(ctx, name).Val(); n != 0 {
				t.Errorf("node %d still has %s after unlock", i, name)
			}
		}
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil || untagged(msg) != "0" {
			t.Fatalf("unlock message = %v, %v; want 0 on %s", msg, err, channel)
		}
		// The same request again is answered from its latch: 1.
		if v, err := unlock.Run(ctx, cl, keys("r2"), 0, 30000, owner, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
			t.Fatalf("repeated unlock = %d, %v; want 1 from the latch", v, err)
		}
		// A stale unlock (new request, lock gone): nil.
		if err := unlock.Run(ctx, cl, keys("r3"), 0, 30000, owner, "PUBLISH", 3000).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("stale unlock: %v; want nil", err)
		}
		// Now free for another.
		if err := lock.Run(ctx, cl, []string{name}, 30000, other).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("lock by another after unlock: %v; want nil (acquired)", err)
		}
	})
}

// TestEffectRefusalLeavesNothingOnAnyNode sends scripts that admission
// lets through but that do, when they run, what no lock owner may: each
// is refused with its reason, and no node keeps anything of it.
func TestEffectRefusalLeavesNothingOnAnyNode(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	tests := []struct {
		name, body string
		args       []any
		reason     string
	}{
		{"a write without expiry", `return redis.call("set", KEYS[1], ARGV[1])`, []any{"tok"}, "without an expiry"},
		{"an expiry over max_ttl", `return redis.call("set", KEYS[1], ARGV[1], "PX", 3600000)`, []any{"tok"}, "over max_ttl"},
		{"INCR named by ARGV", `redis.call("set", KEYS[1], ARGV[1], "PX", 5000) return redis.call(ARGV[2], KEYS[1])`, []any{"5", "INCR"}, "INCR is not a lock command"},
		{"LPUSH named by ARGV", `return redis.call(ARGV[2], KEYS[1], ARGV[1])`, []any{"tok", "lpush"}, "LPUSH is not a lock command"},
		{"a key that is not in KEYS", `redis.call("set", KEYS[1], ARGV[1], "PX", 5000) return redis.call(ARGV[2], ARGV[3], ARGV[1], "PX", 5000)`,
			[]any{"tok", "set", "elsewhere"}, "not one of KEYS"},
		{"SELECT 1", `redis.pcall("SELECT", ARGV[1]) return redis.call("set", KEYS[1], ARGV[2], "PX", 5000)`, []any{"1", "tok"}, "SELECT"},
		// Beside the writes the wrapper proves without a snapshot.
		{"a GET of a free key, then a write without expiry", `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1])`, []any{"tok"}, "without an expiry"},
		{"a GET of a free key, then SET KEEPTTL", `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "KEEPTTL")`, []any{"tok"}, "without an expiry"},
		{"SET NX PX over max_ttl", `return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 3600000)`, []any{"tok"}, "over max_ttl"},
		{"a take, then PEXPIRE over max_ttl", `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("pexpire", KEYS[1], 3600000)`, []any{"tok"}, "over max_ttl"},
		{"a take, then a value none of its arguments", `redis.call("get", KEYS[1]) redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("set", KEYS[1], ARGV[1] .. "x", "PX", 5000)`,
			[]any{"tok"}, "none of its arguments"},
		{"a take, then INCR named by ARGV", `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call(ARGV[2], KEYS[1])`, []any{"tok", "INCR"}, "INCR is not a lock command"},
	}
	for _, tt := range tests {
		err := p.Client.Eval(ctx, tt.body, []string{"k"}, tt.args...).Err()
		if err == nil || !strings.Contains(err.Error(), "script refused") || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: EVAL = %v; want ERR script refused: %s", tt.name, err, tt.reason)
		}
		for i, d := range c.direct {
			for _, k := range []string{"k", "elsewhere"} {
				if n := d.Exists(ctx, k).Val(); n != 0 {
					t.Errorf("%s: node %d keeps %s", tt.name, i, k)
				}
			}
		}
	}

	// Another token's hold, on 2 of 5 nodes: an unconditional SET takes
	// the other 3, is refused where it would overwrite, and is undone
	// everywhere; the other token's hold stays.
	for _, i := range []int{0, 1} {
		c.direct[i].Set(ctx, "k", "other", 10*time.Second)
	}
	err := p.Client.Eval(ctx, `return redis.call("set", KEYS[1], ARGV[1], "PX", 5000)`, []string{"k"}, "tok").Err()
	if err == nil || !strings.Contains(err.Error(), "another token's hold") {
		t.Errorf("overwriting SET: %v; want refused for another token's hold", err)
	}
	for i := range c.direct {
		v, ok := c.value(t, i, "k")
		if i < 2 && v != "other" || i >= 2 && ok {
			t.Errorf("node %d after the refused overwrite: %q (exists %v)", i, v, ok)
		}
	}

	// A key argument that is a number: Lua's tostring gives "1e+15", one
	// of KEYS, but Redis writes the key "1000000000000000". Refused, and
	// no node has either key.
	err = p.Client.Eval(ctx, `return redis.call(ARGV[1], 1e15, ARGV[2])`, []string{"1e+15"}, "set", "tok").Err()
	if err == nil || !strings.Contains(err.Error(), "not one of KEYS") {
		t.Errorf("SET of a number key: EVAL = %v; want ERR script refused: ... not one of KEYS", err)
	}
	for i, d := range c.direct {
		for _, k := range []string{"1e+15", "1000000000000000"} {
			if n := d.Exists(ctx, k).Val(); n != 0 {
				t.Errorf("number key: node %d keeps %s", i, k)
			}
		}
	}

	// A GET that saw another token's hold proves nothing for a write
	// after it, and one that saw the caller's own hold proves it for an
	// owner's write only: each is refused, and every node keeps the hold
	// it had, with its expiry.
	for _, tt := range []struct {
		name, holder, body, reason string
	}{
		{"another's hold: GET, then DEL", "other", `redis.call("get", KEYS[1]) return redis.call("del", KEYS[1])`, "another token's hold"},
		{"another's hold: GET, then SET without NX", "other", `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "PX", 5000)`, "another token's hold"},
		{"another's hold: GET, then PEXPIRE", "other", `redis.call("get", KEYS[1]) return redis.call("pexpire", KEYS[1], 50000)`, "expiry of another token's hold"},
		{"own hold: a release, then a value none of its arguments", "tok",
			`if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("del", KEYS[1]) return redis.call("set", KEYS[1], "y" .. ARGV[1], "PX", 5000) end return 0`,
			"none of its arguments"},
		{"own hold: an extend, then INCR named by ARGV", "tok",
			`if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("pexpire", KEYS[1], 50000) return redis.call(ARGV[2], KEYS[1]) end return 0`,
			"INCR is not a lock command"},
	} {
		for _, d := range c.direct {
			d.Set(ctx, "k", tt.holder, 10*time.Second)
		}
		err := p.Client.Eval(ctx, tt.body, []string{"k"}, "tok", "INCR").Err()
		if err == nil || !strings.Contains(err.Error(), "script refused") || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: EVAL = %v; want ERR script refused: %s", tt.name, err, tt.reason)
		}
		c.wantHeldEverywhere(t, "k", tt.holder, 10*time.Second)
	}
}

// Spring Integration's RedisLockRegistry scripts (spring-integration-redis,
// RedisLockRegistry.java; Java text blocks, so tab-indented with a
// trailing line break), byte for byte.
const (
	springObtain = "local lockClientId = redis.call('GET', KEYS[1])\n" +
		"if lockClientId == ARGV[1] then\n" +
		"\tredis.call('PEXPIRE', KEYS[1], ARGV[2])\n" +
		"\treturn true\n" +
		"elseif not lockClientId then\n" +
		"\tredis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n" +
		"\treturn true\n" +
		"end\n" +
		"return false\n"
	springRenew = "if (redis.call('GET', KEYS[1]) == ARGV[1]) then\n" +
		"\tredis.call('PEXPIRE', KEYS[1], ARGV[2])\n" +
		"\treturn true\n" +
		"end\n" +
		"return false\n"
	springSpinUnlock = "local lockClientId = redis.call('GET', KEYS[1])\n" +
		"if lockClientId == ARGV[1] then\n" +
		"\tredis.call('UNLINK', KEYS[1])\n" +
		"\treturn true\n" +
		"end\n" +
		"return false\n"
	springPubSubUnlock = "local lockClientId = redis.call('GET', KEYS[1])\n" +
		"if (lockClientId == ARGV[1] and redis.call('UNLINK', KEYS[1]) == 1) then\n" +
		"\tredis.call('PUBLISH', ARGV[2], KEYS[1])\n" +
		"\treturn true\n" +
		"end\n" +
		"return false\n"
)

// ShedLock's scripts with safeUpdate (shedlock-support-redis,
// InternalRedisLockProvider.java, text blocks), byte for byte; its lock
// itself is SET key value NX PX ms.
const (
	shedlockDelete = "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n" +
		"    return redis.call(\"del\",KEYS[1])\n" +
		"else\n" +
		"    return 0\n" +
		"end\n"
	shedlockUpdate = "if redis.call('get', KEYS[1]) == ARGV[1] then\n" +
		"   return redis.call('pexpire', KEYS[1], ARGV[2])\n" +
		"else\n" +
		"   return 0\n" +
		"end\n"
)

// TestSpringRedisLockRegistryScriptsThroughProxy replays Spring's lock
// protocol: re-entrant obtain (true is 1, false is nil, as Spring's
// Boolean reads them), renew, UNLINK unlock with and without the
// PUBLISH of the pub/sub lock, and a stale unlock.
func TestSpringRedisLockRegistryScriptsThroughProxy(t *testing.T) {
	obtain, renew := redis.NewScript(springObtain), redis.NewScript(springRenew)
	spin, pubsub := redis.NewScript(springSpinUnlock), redis.NewScript(springPubSubUnlock)
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		cl := newClient(t, p.Addr, nil)
		key, a, b := "registry:job", "6f1d3c1e-0000-4000-8000-00000000000a", "6f1d3c1e-0000-4000-8000-00000000000b"
		isTrue := func(what string, v any, err error) {
			t.Helper()
			if n, ok := v.(int64); !ok || n != 1 || err != nil {
				t.Fatalf("%s = %#v, %v; want 1 (true)", what, v, err)
			}
		}
		isFalse := func(what string, v any, err error) {
			t.Helper()
			if !errors.Is(err, redis.Nil) {
				t.Fatalf("%s = %#v, %v; want nil (false)", what, v, err)
			}
		}
		v, err := obtain.Run(ctx, cl, []string{key}, a, "5000").Result()
		isTrue("obtain", v, err)
		c.wantHeldEverywhere(t, key, a, 5*time.Second)
		v, err = obtain.Run(ctx, cl, []string{key}, b, "5000").Result()
		isFalse("contended obtain", v, err)
		v, err = obtain.Run(ctx, cl, []string{key}, a, "8000").Result()
		isTrue("re-entrant obtain", v, err)
		if ms := cl.PTTL(ctx, key).Val(); ms <= 5*time.Second || ms > 8*time.Second {
			t.Fatalf("PTTL after re-entrant obtain = %v; want over 5s", ms)
		}
		v, err = renew.Run(ctx, cl, []string{key}, a, "9000").Result()
		isTrue("renew", v, err)
		v, err = renew.Run(ctx, cl, []string{key}, b, "9000").Result()
		isFalse("renew by another", v, err)
		v, err = spin.Run(ctx, cl, []string{key}, b).Result()
		isFalse("unlock by another", v, err)
		c.wantHeldEverywhere(t, key, a, 9*time.Second)
		v, err = spin.Run(ctx, cl, []string{key}, a).Result()
		isTrue("unlock", v, err)
		c.wantFreeEverywhere(t, key)
		v, err = spin.Run(ctx, cl, []string{key}, a).Result()
		isFalse("stale unlock", v, err)

		// The pub/sub lock publishes the key on its channel.
		channel := "registry-channel:" + key
		sub := direct(t, c.addrs[c.live()[0]]).Subscribe(ctx, channel)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		v, err = obtain.Run(ctx, cl, []string{key}, b, "5000").Result()
		isTrue("obtain by the other", v, err)
		v, err = pubsub.Run(ctx, cl, []string{key}, b, channel).Result()
		isTrue("pub/sub unlock", v, err)
		if msg, err := sub.ReceiveMessage(ctx); err != nil || untagged(msg) != key {
			t.Fatalf("unlock message = %v, %v; want %s", msg, err, key)
		}
		c.wantFreeEverywhere(t, key)
	})
}

// TestShedLockSafeUpdateThroughProxy replays ShedLock's Redis provider
// with safeUpdate: SET NX PX to lock, its compare-and-pexpire to extend
// or keep the lock until lockAtLeastUntil, its compare-and-delete.
func TestShedLockSafeUpdateThroughProxy(t *testing.T) {
	update, del := redis.NewScript(shedlockUpdate), redis.NewScript(shedlockDelete)
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		cl := newClient(t, p.Addr, nil)
		key := "job-lock:default:report"
		mine, theirs := "ADDED:2026-11-23T19:00:00Z@host-a:1b4e28ba", "ADDED:2026-11-23T19:00:01Z@host-b:6fa459ea"
		if ok, err := cl.SetNX(ctx, key, mine, 5*time.Second).Result(); !ok || err != nil {
			t.Fatalf("lock = %v, %v; want OK", ok, err)
		}
		if ok, err := cl.SetNX(ctx, key, theirs, 5*time.Second).Result(); ok || err != nil {
			t.Fatalf("contended lock = %v, %v; want nil", ok, err)
		}
		if n, err := update.Run(ctx, cl, []string{key}, mine, "8000").Int(); n != 1 || err != nil {
			t.Fatalf("extend = %d, %v; want 1", n, err)
		}
		if ms := cl.PTTL(ctx, key).Val(); ms <= 5*time.Second || ms > 8*time.Second {
			t.Fatalf("PTTL after extend = %v; want over 5s", ms)
		}
		if n, err := update.Run(ctx, cl, []string{key}, theirs, "8000").Int(); n != 0 || err != nil {
			t.Fatalf("extend by another = %d, %v; want 0", n, err)
		}
		if n, err := del.Run(ctx, cl, []string{key}, theirs).Int(); n != 0 || err != nil {
			t.Fatalf("unlock by another = %d, %v; want 0", n, err)
		}
		c.wantHeldEverywhere(t, key, mine, 8*time.Second)
		if n, err := del.Run(ctx, cl, []string{key}, mine).Int(); n != 1 || err != nil {
			t.Fatalf("unlock = %d, %v; want 1", n, err)
		}
		c.wantFreeEverywhere(t, key)
		if n, err := del.Run(ctx, cl, []string{key}, mine).Int(); n != 0 || err != nil {
			t.Fatalf("stale unlock = %d, %v; want 0", n, err)
		}
	})
}

// TestEffectPartialAcquireIsUndone: another token holds the key on 3 of
// 5 masters; go-zero's acquire takes it on the other 2, which is no
// quorum: the reply is the script's own "taken" (nil, as a denying master
// gave it), and the 2 takes are undone.
func TestEffectPartialAcquireIsUndone(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	for _, i := range []int{0, 2, 4} {
		c.direct[i].Set(ctx, "partial", "other", 10*time.Second)
	}
	cl := newClient(t, p.Addr, nil)
	if v, err := goZeroLockScript.Run(ctx, cl, []string{"partial"}, "tok", "5000").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("acquire on 2 of 5 = %#v, %v; want nil (taken)", v, err)
	}
	for i := range c.direct {
		v, _ := c.value(t, i, "partial")
		if want := map[bool]string{true: "other", false: ""}[i%2 == 0]; v != want {
			t.Errorf("node %d holds %q; want %q", i, v, want)
		}
	}
}
