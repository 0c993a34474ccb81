-- A count-down latch's delete on a node (latch.go). KEYS[1] is the
-- counters' hash, ARGV[1] the latch's name. Returns {state, had}: state
-- as counter_read.lua, had 1 when the node had a count and deleted it.
-- Its claim slot goes too, but for a tombstone ("o:" "-1") where it had
-- one: every claim there is nobody's (latch_claim.lua), so a late claim
-- that read it misses, and no claim creates the slot again (a second
-- vote of this node: attack12 U1b). A vote's ballot and one kept from a
-- replaced slot ("b:", "p:", "q:") go too.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local had = redis.call("hdel", KEYS[1], "l:" .. ARGV[1])
local slot = redis.call("hdel", KEYS[1], "n:" .. ARGV[1], "m:" .. ARGV[1], "o:" .. ARGV[1], "b:" .. ARGV[1], "p:" .. ARGV[1], "q:" .. ARGV[1])
if had + slot > 0 then
  redis.call("hset", KEYS[1], "o:" .. ARGV[1], "-1")
end
return {2, had}
