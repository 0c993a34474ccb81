-- Marks a node without counters pending, with its clock's time in Unix
-- ms and ARGV[1], an id no other mark has (fence.go: a new deployment's
-- seeding names the pending nodes it saw by their ids). KEYS[1] is the
-- counters' hash. Returns {state, mark}.
if redis.call("hget", KEYS[1], "seeded") == "1" then
  return {2, "0"}
end
local mark = redis.call("hget", KEYS[1], "pending")
if not mark then
  local t = redis.call("time")
  mark = tostring(tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  redis.call("hset", KEYS[1], "pending", mark, "id", ARGV[1])
end
return {1, mark}
