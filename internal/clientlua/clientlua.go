// Package clientlua holds Lua scripts that real lock clients send
// (CLIENTS.md), for tests: admission's, the engine's on real nodes, the
// go-redis node's wrapper and the integration tests run these copies.
package clientlua

// GoZeroLock is go-zero's RedisLock acquire (a take, or a re-entrant
// refresh that answers bulk "OK"), as admission prints it back.
const GoZeroLock = `if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
else
    return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
end`

// SemaphoreAcquire is redis-semaphore 5.8's Semaphore acquire, as its
// lib/semaphore/acquire/lua.js sends it: it scores its member by the
// client's clock at acquisition (ARGV[4]), not by an expiry.
const SemaphoreAcquire = `
  local key = KEYS[1]
  local limit = tonumber(ARGV[1])
  local identifier = ARGV[2]
  local lockTimeout = tonumber(ARGV[3])
  local now = tonumber(ARGV[4])
  local expiredTimestamp = now - lockTimeout

  redis.call('zremrangebyscore', key, '-inf', expiredTimestamp)

  if redis.call('zcard', key) < limit then
    redis.call('zadd', key, now, identifier)
    redis.call('pexpire', key, lockTimeout)
    return 1
  else
    return 0
  end`

// RedissonUnlock is Redisson's unlock (RedissonLock.java).
const RedissonUnlock = "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; " +
	"if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; " +
	"local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); " +
	"redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); " +
	"redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; "

// SymfonySave is Symfony Lock 5.4's RedisStore save, with its TIME code.
const SymfonySave = `
            local key = KEYS[1]
            local uniqueToken = ARGV[2]
            local ttl = tonumber(ARGV[3])
            if redis.call("TYPE", key).ok == "string" then
                return false
            end
            local now = redis.call("TIME")
            now = now[1] * 1000 + math.floor(now[2] / 1000)
            redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
            if redis.call("ZSCORE", key, uniqueToken) then
                if not redis.call("ZSCORE", key, "__write__") and redis.call("ZCOUNT", key, "-inf", "+inf") > 1  then
                    return false
                end
            elseif redis.call("ZCOUNT", key, "-inf", "+inf") > 0  then
                return false
            end
            redis.call("ZADD", key, now + ttl, uniqueToken)
            redis.call("ZADD", key, now + ttl, "__write__")
            local maxExpiration = redis.call("ZREVRANGE", key, 0, 0, "WITHSCORES")[2]
            redis.call("PEXPIREAT", key, maxExpiration)
            return true
        `
