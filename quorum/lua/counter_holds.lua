-- The counters' holder rule (fence.go), the head of counter_read.lua,
-- counter_fence.lua and counter_write.lua: whether key holds token. A
-- string holds its value. A hash holds each of its fields but Redisson's
-- "mode" (a marker, no one's hold), and none while it is a read lock (its
-- readers share the key: one T per key cannot be each reader's).
local function holds(key, token)
  local kind = redis.call("type", key)["ok"]
  if kind == "string" then
    return redis.call("get", key) == token
  elseif kind == "hash" then
    return token ~= "mode" and redis.call("hget", key, "mode") ~= "read"
      and redis.call("hexists", key, token) == 1
  end
  return false
end
