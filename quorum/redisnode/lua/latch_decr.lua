-- A count-down latch's countDown on a node (latch.go): one decrement,
-- never sent twice, of the count that the set with nonce ARGV[2] made
-- ("0": the node had no count when the countDown read it), so that a
-- decrement landing after a later trySetCount does not count for it.
-- KEYS[1] is the counters' hash, ARGV[1] the latch's name. Returns
-- {state, old, new}: state as counter_read.lua (only a seeded node
-- counts down), the count before and after (0: none). At 0 the count is
-- deleted, as Redisson's script deletes the key.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0, 0}
end
local f = "l:" .. ARGV[1]
local old = tonumber(redis.call("hget", KEYS[1], f) or "0")
if (redis.call("hget", KEYS[1], "n:" .. ARGV[1]) or "0") ~= ARGV[2] then
  return {2, old, old} -- another latch's count, or none
end
if old > 1 then
  redis.call("hincrby", KEYS[1], f, -1)
  return {2, old, old - 1}
end
redis.call("hdel", KEYS[1], f, "n:" .. ARGV[1])
return {2, old, 0}
