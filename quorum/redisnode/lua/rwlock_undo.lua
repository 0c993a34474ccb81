-- Gives back one read lock take (rwlock.go): the reader's hold whose
-- timeout key holds the run's nonce, and nothing else. KEYS as
-- rwlock_take.lua; ARGV[1] the reader's name, ARGV[2] the nonce.
-- Returns 1 if the hold was there and is gone, else 0. The hash keeps
-- the expiry the take may have raised: shortening it could cut another
-- reader's hold, and the lease is at most max_ttl.
local n = tonumber(redis.call("hget", KEYS[1], ARGV[1]))
if n == nil then
  return 0
end
for i = n, 1, -1 do
  local k = KEYS[2] .. ":" .. i
  if redis.call("get", k) == ARGV[2] then
    -- The reader's holds stay numbered 1..n-1: its last moves here.
    local last = KEYS[2] .. ":" .. n
    if i < n and redis.call("exists", last) == 1 then
      redis.call("rename", last, k)
    else
      redis.call("del", k)
    end
    if n == 1 then
      redis.call("hdel", KEYS[1], ARGV[1])
    else
      redis.call("hincrby", KEYS[1], ARGV[1], -1)
    end
    if redis.call("hlen", KEYS[1]) <= 1 and redis.call("hget", KEYS[1], "mode") == "read" then
      redis.call("del", KEYS[1])
    end
    return 1
  end
end
return 0
