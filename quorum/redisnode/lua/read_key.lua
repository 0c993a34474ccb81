-- A lock key's whole value, for the quorum reads an operator runs:
-- {type, items, pttl, encoding}. items: a string's value, a hash's
-- fields and values, a sorted set's members and scores (by score).
local t = redis.call("type", KEYS[1])["ok"]
if t == "none" then
  return {t, {}, -2, ""}
end
local items
if t == "string" then
  items = {redis.call("get", KEYS[1])}
elseif t == "hash" then
  items = redis.call("hgetall", KEYS[1])
elseif t == "zset" then
  items = redis.call("zrange", KEYS[1], 0, -1, "withscores")
else
  items = {}
end
return {t, items, redis.call("pttl", KEYS[1]), redis.call("object", "encoding", KEYS[1])}
