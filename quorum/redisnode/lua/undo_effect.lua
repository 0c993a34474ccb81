-- KEYS[1] is a key a run took new on this node. ARGV[1] is how many of
-- the arguments after it are the own holders the run took it with; then
-- pairs: a marker the run added beside them, and its value; the last is
-- the deadline (lateCheck, which the script is run after).
local key, nt = KEYS[1], tonumber(ARGV[1])
local t = redis.call("type", key)["ok"]
if t == "string" then
  local v = redis.call("get", key)
  for i = 2, nt + 1 do
    if ARGV[i] == v then
      redis.call("del", key)
      return 1
    end
  end
  return 0
end
local get, rem
if t == "hash" then get, rem = "hget", "hdel"
elseif t == "zset" then get, rem = "zscore", "zrem"
else return 0 end
local n = 0
for i = 2, nt + 1 do
  if redis.call(get, key, ARGV[i]) then
    redis.call(rem, key, ARGV[i])
    n = n + 1
  end
end
-- A marker goes only with an own holder still there, and only with the
-- value the run gave it: no other token can have written the key since
-- (it was the run's hold), whereas once the holders are gone another
-- client may write the same constant.
if n > 0 then
  for i = nt + 2, #ARGV - 2, 2 do
    if redis.call(get, key, ARGV[i]) == ARGV[i + 1] then redis.call(rem, key, ARGV[i]) end
  end
end
return n
