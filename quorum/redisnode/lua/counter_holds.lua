-- The counters' holder rule (fence.go), the head of counter_read.lua,
-- counter_fence.lua and counter_write.lua: whether key holds token. A
-- string holds its value. A hash holds each of its fields but Redisson's
-- "mode" (a marker, no one's hold), and none while it is a read lock (its
-- readers share the key: one T per key cannot be each reader's). A string
-- is asked first, in one call (a GET of another type fails: WRONGTYPE,
-- which the node counts in its errorstats).
local function holds(key, token)
  local v = redis.pcall("get", key)
  if type(v) ~= "table" then
    return v == token
  end
  if redis.call("type", key)["ok"] == "hash" then
    return token ~= "mode" and redis.call("hget", key, "mode") ~= "read"
      and redis.call("hexists", key, token) == 1
  end
  return false
end
