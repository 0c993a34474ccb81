-- A count-down latch's countDown on a node (latch.go): one decrement,
-- never sent twice. KEYS[1] is the counters' hash, ARGV[1] the latch's
-- name. Returns {state, old}: state as counter_read.lua (only a seeded
-- node counts down), old the count before (0: none). At 0 the count is
-- deleted, as Redisson's script deletes the key.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local f = "l:" .. ARGV[1]
local old = tonumber(redis.call("hget", KEYS[1], f) or "0")
if old > 1 then
  redis.call("hincrby", KEYS[1], f, -1)
elseif old ~= 0 or redis.call("hexists", KEYS[1], f) == 1 then
  redis.call("hdel", KEYS[1], f, "n:" .. ARGV[1])
end
return {2, old}
