package integration

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// redissonRefusedScripts are the scripts of the Redisson types the proxy
// refuses, byte for byte as Java's string concatenation builds them at
// redisson/redisson commit 66863978b4a92093b97c1f8c96f182a77e81d50e
// (2026-08-21), file (under redisson/src/main/java/org/redisson/) and
// lines, each with the KEYS and ARGV layout Redisson sends for a lock
// named "r" (RReadWriteLock's read lock is served: redissonrwread_test.go;
// RCountDownLatch for names matching latch_keys: redissonlatch_test.go).
var redissonRefusedScripts = []struct {
	typ, cite, body string
	keys            []string
	args            []any
}{
	{"RFairLock", "RedissonFairLock.java:78-93",
		"local queue = redis.call('lrange', KEYS[1], 0, -1);local i = 1;while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1;end;i = i + 1;while i <= #queue do redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]);i = i + 1;end;redis.call('zrem', KEYS[2], ARGV[1]);redis.call('lrem', KEYS[1], 0, ARGV[1]);",
		[]string{"redisson_lock_queue:{r}", "redisson_lock_timeout:{r}"}, []any{"8c1f-0001:1", 5000}},
	{"RFairLock", "RedissonFairLock.java:110-147",
		"while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end;local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[3]) then redis.call('zrem', KEYS[3], firstThreadId2);redis.call('lpop', KEYS[2]);else break;end;end;if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then redis.call('lpop', KEYS[2]);redis.call('zrem', KEYS[3], ARGV[2]);local keys = redis.call('zrange', KEYS[3], 0, -1);for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[4]), keys[i]);end;redis.call('hset', KEYS[1], ARGV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('hincrby', KEYS[1], ARGV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;return 1;",
		[]string{"r", "redisson_lock_queue:{r}", "redisson_lock_timeout:{r}"}, []any{30000, "8c1f-0001:1", 1764100000000, 5000}},
	{"RFairLock", "RedissonFairLock.java:155-226",
		"while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end;local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then redis.call('zrem', KEYS[3], firstThreadId2);redis.call('lpop', KEYS[2]);else break;end;end;if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then redis.call('lpop', KEYS[2]);redis.call('zrem', KEYS[3], ARGV[2]);local keys = redis.call('zrange', KEYS[3], 0, -1);for i = 1, #keys, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);end;redis.call('hset', KEYS[1], ARGV[2], 1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('hincrby', KEYS[1], ARGV[2],1);redis.call('pexpire', KEYS[1], ARGV[1]);return nil;end;local timeout = redis.call('zscore', KEYS[3], ARGV[2]);if timeout ~= false then local ttl = redis.call('pttl', KEYS[1]);return math.max(0, ttl); end;local lastThreadId = redis.call('lindex', KEYS[2], -1);local ttl;if lastThreadId ~= false and lastThreadId ~= ARGV[2] and redis.call('zscore', KEYS[3], lastThreadId) ~= false then ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);else ttl = redis.call('pttl', KEYS[1]);end;local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then redis.call('rpush', KEYS[2], ARGV[2]);end;return ttl;",
		[]string{"r", "redisson_lock_queue:{r}", "redisson_lock_timeout:{r}"}, []any{30000, "8c1f-0001:1", 5000, 1764100000000}},
	{"RFairLock", "RedissonFairLock.java:237-281",
		"local val = redis.call('get', KEYS[5]); if val ~= false then return tonumber(val);end; while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end; local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[4]) then redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpop', KEYS[2]); else break;end; end;if (redis.call('exists', KEYS[1]) == 0) then local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; redis.call('set', KEYS[5], 1, 'px', ARGV[6]); return 1; end;if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[5], 0, 'px', ARGV[6]); return 0; end; redis.call('del', KEYS[1]); redis.call('set', KEYS[5], 1, 'px', ARGV[6]); local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; return 1; ",
		[]string{"r", "redisson_lock_queue:{r}", "redisson_lock_timeout:{r}", "redisson_lock__channel:{r}", "redisson_unlock_latch:{r}:req1"}, []any{0, 30000, "8c1f-0001:1", 1764100000000, "PUBLISH", 3000}},
	{"RFairLock", "RedissonFairLock.java:324-346",
		"while true do local firstThreadId2 = redis.call('lindex', KEYS[2], 0);if firstThreadId2 == false then break;end; local timeout = redis.call('zscore', KEYS[3], firstThreadId2);if timeout ~= false and tonumber(timeout) <= tonumber(ARGV[2]) then redis.call('zrem', KEYS[3], firstThreadId2); redis.call('lpop', KEYS[2]); else break;end; end;if (redis.call('del', KEYS[1]) == 1) then local nextThreadId = redis.call('lindex', KEYS[2], 0); if nextThreadId ~= false then redis.call(ARGV[3], KEYS[4] .. ':' .. nextThreadId, ARGV[1]); end; return 1; end; return 0;",
		[]string{"r", "redisson_lock_queue:{r}", "redisson_lock_timeout:{r}", "redisson_lock__channel:{r}"}, []any{0, 1764100000000, "PUBLISH"}},
	{"RSemaphore", "RedissonSemaphore.java:267-272",
		"local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then local val = redis.call('decrby', KEYS[1], ARGV[1]); return 1; end; return 0;",
		[]string{"r"}, []any{1}},
	{"RSemaphore", "RedissonSemaphore.java:459-460",
		"local value = redis.call('incrby', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], value); ",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RSemaphore", "RedissonSemaphore.java:485-491",
		"if redis.call('exists', KEYS[1]) == 0 then return 0 end local value = redis.call('incrby', KEYS[1], ARGV[1]) redis.call(ARGV[2], KEYS[2], value) return 1 ",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RSemaphore", "RedissonSemaphore.java:509-514",
		"local value = redis.call('get', KEYS[1]); if (value == false) then return 0; end; redis.call('set', KEYS[1], 0); return value;",
		[]string{"r"}, []any{}},
	{"RSemaphore", "RedissonSemaphore.java:536-542",
		"local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RSemaphore", "RedissonSemaphore.java:566-572",
		"local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH", 30000}},
	{"RSemaphore", "RedissonSemaphore.java:596-601",
		"local value = redis.call('get', KEYS[1]); if (value == false) then value = 0;end;redis.call('set', KEYS[1], value + ARGV[1]); redis.call(ARGV[2], KEYS[2], value + ARGV[1]); ",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:383-409",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value); end;end; local value = redis.call('get', KEYS[1]); if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then redis.call('decrby', KEYS[1], ARGV[1]); for i = 6, #ARGV, 1 do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]); end; local ttl = redis.call('pttl', KEYS[1]); if ttl > 0 then redis.call('pexpire', KEYS[2], ttl); end; return 'OK'; end; local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES'); if v[1] ~= nil and v[2] ~= ARGV[4] then return ':' .. tostring(v[2]); end return nil;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{1, "a1b2c3d4", 1764100000000, 30000, 1764100030000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:619-629",
		"local expire = redis.call('zscore', KEYS[3], ARGV[1]);local removed = redis.call('zrem', KEYS[3], ARGV[1]);if tonumber(removed) ~= 1 then return 0;end;local value = redis.call('incrby', KEYS[1], ARGV[2]); redis.call(ARGV[4], KEYS[2], value); if tonumber(expire) <= tonumber(ARGV[3]) then return 0;end;return 1;",
		[]string{"r", "redisson_sc:{r}", "{r}:timeout"}, []any{"a1b2c3d4", 1, 1764100000000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:650-671",
		"for i = 4, #ARGV, 1 do local expire = redis.call('zscore', KEYS[3], ARGV[i]);if expire== false or tonumber(expire) <= tonumber(ARGV[2]) then return 0;end; end; local expiredIds = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[3], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[3], KEYS[2], value); end; end; local keys = {}; for i = 4, #ARGV, 1 do table.insert(keys, ARGV[i]); end; local removed = redis.call('zrem', KEYS[3], unpack(keys)); redis.call('incrby', KEYS[1], removed); redis.call(ARGV[3], KEYS[2], removed); return removed;",
		[]string{"r", "redisson_sc:{r}", "{r}:timeout"}, []any{1, 1764100000000, "PUBLISH", "a1b2c3d4"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:756-766",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;return value; end; local ret = redis.call('get', KEYS[1]); return ret == false and 0 or ret;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{1764100000000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:774-790",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;end; local available = redis.call('get', KEYS[1]); if available == false then return 0 end;local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); if acquired == false then return tonumber(available) end;return tonumber(available) + acquired;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{1764100000000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:798-807",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value); end;end; local acquired = redis.call('zcount', KEYS[2], 0, '+inf'); return acquired == false and 0 or acquired;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{1764100000000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:825-837",
		"local available = redis.call('get', KEYS[1]); if (available == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return;end;local acquired = redis.call('zcount', KEYS[3], 0, '+inf'); local maximum = (acquired == false and 0 or acquired) + tonumber(available); if (maximum == tonumber(ARGV[1])) then return;end;redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - maximum); redis.call(ARGV[2], KEYS[2], ARGV[1]);",
		[]string{"r", "redisson_sc:{r}", "{r}:timeout"}, []any{1, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:845-851",
		"local value = redis.call('get', KEYS[1]); if (value == false) then redis.call('set', KEYS[1], ARGV[1]); redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1;end;return 0;",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:864-871",
		"local value = redis.call('get', KEYS[1]); if (value == false) then value = 0;end;redis.call('set', KEYS[1], tonumber(value) + tonumber(ARGV[1])); if tonumber(ARGV[1]) > 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]); end;",
		[]string{"r", "redisson_sc:{r}"}, []any{1, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:880-894",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[4], KEYS[3], value); end;end; local value = redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]); return 1;end;return 0;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{"a1b2c3d4", 1764100030000, 1764100000000, "PUBLISH"}},
	{"RPermitExpirableSemaphore", "RedissonPermitExpirableSemaphore.java:908-921",
		"local expiredIds = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, -1); if #expiredIds > 0 then redis.call('zrem', KEYS[2], unpack(expiredIds)); local value = redis.call('incrby', KEYS[1], #expiredIds); if tonumber(value) > 0 then redis.call(ARGV[4], KEYS[3], value); end;end; local value = redis.call('zscore', KEYS[2], ARGV[1]); if (value ~= false) then return tonumber(value) == tonumber(ARGV[2]) and -1 or tonumber(value) - tonumber(ARGV[3]);end;return 0;",
		[]string{"r", "{r}:timeout", "redisson_sc:{r}"}, []any{"a1b2c3d4", 1764100030000, 1764100000000, "PUBLISH"}},
}

// TestRedissonRefusedTypes: every script of the Redisson types the proxy
// cannot serve safely is refused naming the type and the README, over 5
// masters all up and 2 of 5 down, by EVAL and SCRIPT LOAD, and nothing
// of it reaches a master: no key, no script or function run there.
func TestRedissonRefusedTypes(t *testing.T) {
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, _ int) {
		ctx := t.Context()
		for _, s := range redissonRefusedScripts {
			// A body two types share names both ("RSemaphore or ...").
			err := p.Client.Eval(ctx, s.body, s.keys, s.args...).Err()
			if e := errText(err); !strings.Contains(e, "Redisson's R") || !strings.Contains(e, s.typ) || !strings.Contains(e, "README") {
				t.Errorf("%s (%s): %v; want a refusal naming Redisson's %s and the README", s.typ, s.cite, err, s.typ)
			}
			if err := p.Client.ScriptLoad(ctx, s.body).Err(); !strings.Contains(errText(err), s.typ) {
				t.Errorf("SCRIPT LOAD of %s (%s): %v; want the refusal", s.typ, s.cite, err)
			}
			if err := p.Client.EvalSha(ctx, redisSHA1(s.body), s.keys, s.args...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOSCRIPT") {
				t.Errorf("EVALSHA of %s (%s): %v; want NOSCRIPT", s.typ, s.cite, err)
			}
		}
		for _, i := range c.live() {
			if keys := c.direct[i].Keys(ctx, "*").Val(); len(keys) != 0 {
				t.Errorf("node %d has keys %v after the refusals; want none", i, keys)
			}
			stats := c.direct[i].Info(ctx, "commandstats").Val()
			for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:", "cmdstat_fcall:", "cmdstat_function|load:"} {
				if strings.Contains(stats, cmd) {
					t.Errorf("node %d ran %s; want nothing of a refused script to reach it", i, strings.TrimSuffix(cmd, ":"))
				}
			}
		}
	})
}

// redisSHA1 is the digest Redis names a script by.
func redisSHA1(body string) string { return redis.NewScript(body).Hash() }
