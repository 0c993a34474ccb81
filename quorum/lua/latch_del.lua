-- A count-down latch's delete on a node (latch.go). KEYS[1] is the
-- counters' hash, ARGV[1] the latch's name. Returns {state, had}: state
-- as counter_read.lua, had 1 when the node had a count and deleted it.
-- Its claim slot goes too: a late claim that read it misses (latch_claim.lua).
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local had = redis.call("hdel", KEYS[1], "l:" .. ARGV[1])
redis.call("hdel", KEYS[1], "n:" .. ARGV[1], "m:" .. ARGV[1], "o:" .. ARGV[1])
return {2, had}
