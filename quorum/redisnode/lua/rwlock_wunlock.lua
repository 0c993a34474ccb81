-- A write lock's unlock (rwlock.go), as Redisson's
-- RedissonWriteLock.unlockInnerAsync does it on one Redis, but without
-- its publish (the engine publishes once, when the quorum has decided),
-- and a count-down never shortens the hash while a reader the same
-- thread took under it (a downgrade) holds it. A fenced hold's record
-- (fence.go) ends with the hold, and otherwise keeps the key's expiry.
-- KEYS are Redisson's: the hash, the channel, the unlock latch; ARGV the
-- message, the lease, the write lock's name, the publish command, the
-- latch's PX. Returns {0, v}: latched (an earlier run of the request
-- answered v); {1, gone}: the name held nothing (gone: 1 when there was
-- no lock, and one Redis latched 1 and published); {2, 0}: one hold
-- counted down; {3, free}: released (free: 1 when the hash is gone).
local val = redis.call("get", KEYS[3])
if val ~= false then
  return {0, val}
end
local rk = __RLP_HOLDPREFIX .. KEYS[1]
local mode = redis.call("hget", KEYS[1], "mode")
if mode == false then
  redis.call("set", KEYS[3], 1, "px", ARGV[5])
  return {1, 1}
end
if mode ~= "write" or redis.call("hexists", KEYS[1], ARGV[3]) == 0 then
  return {1, 0}
end
local rec = redis.call("get", rk)
local sp = rec and string.find(rec, " ", 1, true)
local fenced = sp and string.sub(rec, sp + 1) == ARGV[3]
if redis.call("hincrby", KEYS[1], ARGV[3], -1) > 0 then
  local ttl = tonumber(ARGV[2])
  if redis.call("hlen", KEYS[1]) > 2 then
    -- Another's hold beside it: no shorter (none if without expiry).
    local left = redis.call("pttl", KEYS[1])
    ttl = left >= 0 and math.max(ttl, left) or nil
  end
  if ttl then
    redis.call("pexpire", KEYS[1], ttl)
    if fenced then redis.call("pexpire", rk, ttl) end
  end
  redis.call("set", KEYS[3], 0, "px", ARGV[5])
  return {2, 0}
end
redis.call("hdel", KEYS[1], ARGV[3])
if fenced then redis.call("del", rk) end
local free = 0
if redis.call("hlen", KEYS[1]) == 1 then
  redis.call("del", KEYS[1])
  free = 1
else
  redis.call("hset", KEYS[1], "mode", "read")
end
redis.call("set", KEYS[3], 1, "px", ARGV[5])
return {3, free}
