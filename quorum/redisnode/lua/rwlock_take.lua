-- A read lock's take (rwlock.go), as Redisson's
-- RedissonReadLock.tryLockInnerAsync does it on one Redis, except that
-- the reader's timeout key holds the run's nonce (ARGV[4]) rather than 1,
-- so that an undo finds exactly the hold this run added. KEYS[1] is the
-- lock's hash, KEYS[2] the reader's timeout prefix; ARGV[1] the lease in
-- ms, ARGV[2] the reader's name, ARGV[3] its write lock's name.
-- Returns {1, n}: granted, the reader's n-th hold; {0, pttl}: denied.
-- Under the same thread's write lock the reader is granted, as on one
-- Redis (a downgrade): its field joins the write lock's hash.
local lease = tonumber(ARGV[1])
local mode = redis.call("hget", KEYS[1], "mode")
if mode == false then
  if redis.call("exists", KEYS[1]) == 1 then
    -- A hash without a mode is another lock's (an RLock's): taken.
    return {0, redis.call("pttl", KEYS[1])}
  end
  redis.call("hset", KEYS[1], "mode", "read")
  redis.call("hset", KEYS[1], ARGV[2], 1)
  redis.call("set", KEYS[2] .. ":1", ARGV[4], "px", lease)
  redis.call("pexpire", KEYS[1], lease)
  return {1, 1}
end
if mode == "read" or mode == "write" and redis.call("hexists", KEYS[1], ARGV[3]) == 1 then
  local n = redis.call("hincrby", KEYS[1], ARGV[2], 1)
  redis.call("set", KEYS[2] .. ":" .. n, ARGV[4], "px", lease)
  local remain = redis.call("pttl", KEYS[1])
  redis.call("pexpire", KEYS[1], math.max(remain, lease))
  return {1, n}
end
return {0, redis.call("pttl", KEYS[1])}
