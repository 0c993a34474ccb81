-- A count-down latch's delete on a node (latch.go). KEYS[1] is the
-- counters' hash, ARGV[1] the latch's name. Returns {state, had}: state
-- as counter_read.lua, had 1 when the node had a count and deleted it.
-- Its claim slot goes too, but for a tombstone ("o:" "-1") where it had
-- one, and the ballots of the votes it held, remembered ("d:"): a claim
-- of one of them, or of none, is nobody's there (latch_claim.lua), so a
-- late claim that read it misses, and no claim creates the slot again (a
-- second vote of this node: attack12 U1b); a claim of another ballot
-- votes there (attack15 L4). A vote's ballot and one kept from a
-- replaced slot ("b:", "p:", "q:") go too, and the ballots of votes
-- forgotten while the slot lived ("x:", latch_claim.lua) join "d:".
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local o = redis.call("hget", KEYS[1], "o:" .. ARGV[1])
local d = redis.call("hget", KEYS[1], "d:" .. ARGV[1])
if o == "-1" and not d then
  d = "-1" -- the scripts before "d:" remembered no ballot
end
local c = redis.call("hget", KEYS[1], "m:" .. ARGV[1])
if c == "-1" then
  d = "-1"
elseif c and c ~= "0" then
  d = remember(d, redis.call("hget", KEYS[1], "b:" .. ARGV[1]) or o)
end
local p = redis.call("hget", KEYS[1], "p:" .. ARGV[1])
if p then
  d = remember(d, p)
end
d = merge(d, redis.call("hget", KEYS[1], "x:" .. ARGV[1]))
local had = redis.call("hdel", KEYS[1], "l:" .. ARGV[1])
local slot = redis.call("hdel", KEYS[1], "n:" .. ARGV[1], "m:" .. ARGV[1], "o:" .. ARGV[1], "b:" .. ARGV[1], "p:" .. ARGV[1], "q:" .. ARGV[1], "x:" .. ARGV[1])
if had + slot > 0 then
  redis.call("hset", KEYS[1], "o:" .. ARGV[1], "-1", "d:" .. ARGV[1], d or "0")
end
return {2, had}
