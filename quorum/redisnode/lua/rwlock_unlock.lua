-- A read lock's unlock (rwlock.go), as Redisson's
-- RedissonReadLock.unlockInnerAsync does it on one Redis, but without
-- its publish: the engine publishes once, when the quorum has decided.
-- KEYS and ARGV are Redisson's: the hash, the channel, the reader's
-- timeout prefix, the key prefix, the unlock latch; the message, the
-- reader's name, the publish command, the latch's PX.
-- Returns {0, v}: latched (an earlier run of the request answered v);
-- {1, free}: the reader held nothing; {2, free}: its hold was released
-- (free is 1 when the hash is gone after).
local val = redis.call("get", KEYS[5])
if val ~= false then
  return {0, val}
end
local mode = redis.call("hget", KEYS[1], "mode")
if mode == false then
  redis.call("set", KEYS[5], 1, "px", ARGV[4])
  return {1, 1}
end
if redis.call("hexists", KEYS[1], ARGV[2]) == 0 then
  return {1, 0}
end
local counter = redis.call("hincrby", KEYS[1], ARGV[2], -1)
if counter == 0 then
  redis.call("hdel", KEYS[1], ARGV[2])
end
redis.call("del", KEYS[3] .. ":" .. (counter + 1))
if redis.call("hlen", KEYS[1]) > 1 then
  local most = -3
  for _, key in ipairs(redis.call("hkeys", KEYS[1])) do
    local c = tonumber(redis.call("hget", KEYS[1], key))
    if type(c) == "number" then
      for i = c, 1, -1 do
        most = math.max(redis.call("pttl", KEYS[4] .. ":" .. key .. ":rwlock_timeout:" .. i), most)
      end
    end
  end
  if most > 0 then
    -- Redisson sets the hash's expiry to its readers' longest lease,
    -- which under the same thread's write lock cuts the writer's: the
    -- proxy never lowers a write lock's expiry so.
    if mode ~= "write" or most > redis.call("pttl", KEYS[1]) then
      redis.call("pexpire", KEYS[1], most)
    end
    redis.call("set", KEYS[5], 0, "px", ARGV[4])
    return {2, 0}
  end
  if mode == "write" then
    redis.call("set", KEYS[5], 0, "px", ARGV[4])
    return {2, 0}
  end
end
redis.call("del", KEYS[1])
redis.call("set", KEYS[5], 1, "px", ARGV[4])
return {2, 1}
