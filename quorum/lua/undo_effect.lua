local own = {}
for _, t in ipairs(ARGV) do own[t] = true end
local n = 0
for _, key in ipairs(KEYS) do
  local t = redis.call("type", key)["ok"]
  if t == "string" then
    if own[redis.call("get", key)] then
      redis.call("del", key)
      n = n + 1
    end
  elseif t == "hash" then
    for _, m in ipairs(redis.call("hkeys", key)) do
      if own[m] then redis.call("hdel", key, m); n = n + 1 end
    end
  elseif t == "zset" then
    for _, m in ipairs(redis.call("zrange", key, 0, -1)) do
      if own[m] then redis.call("zrem", key, m); n = n + 1 end
    end
  end
end
return n
