-- A count-down latch's trySetCount on a node (latch.go). KEYS[1] is the
-- counters' hash; ARGV[1] the latch's name, ARGV[2] the count, ARGV[3]
-- the set's nonce. Returns {state, set, nonce}: state as
-- counter_read.lua (only a seeded node sets), set 1 when it set the
-- count, 0 when one was there (nonce: that count's); a set that found no
-- field of the claim slot, or a free one (a tag and "m:" "0": attack15
-- L6'), adds 1 (its undo takes "m:" too).
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0, "0"}
end
local n = redis.call("hget", KEYS[1], "n:" .. ARGV[1])
if redis.call("hexists", KEYS[1], "l:" .. ARGV[1]) == 1 then
  return {2, 0, n or "0"}
end
-- The claim slot is this latch's ("o:" its nonce), to take ("0"): an
-- older latch's claim is not, nor nobody's (latch_claim.lua). A slot of
-- this set already (a claim made it, landing before this late set, or a
-- seed kept its tag, negated) keeps its claim: that vote was given. A vote given
-- in the slot it replaces is kept, by its ballot ("b:", else the slot's
-- tag), as "p:", "q:" (review28 F0), the ballot of one kept before
-- remembered ("d:", latch_voted.lua); a vote kept so of this set's
-- ballot is its claim again. Over a tombstone of the scripts before
-- "d:" (no memory), the memory is any.
local o = redis.call("hget", KEYS[1], "o:" .. ARGV[1])
if o == "-1" and redis.call("hexists", KEYS[1], "d:" .. ARGV[1]) == 0 then
  redis.call("hset", KEYS[1], "d:" .. ARGV[1], "-1")
end
if o == ARGV[3] or o == "-" .. ARGV[3] then
  redis.call("hset", KEYS[1], "l:" .. ARGV[1], ARGV[2], "n:" .. ARGV[1], ARGV[3], "o:" .. ARGV[1], ARGV[3])
  return {2, 1, "0"}
end
local c = redis.call("hget", KEYS[1], "m:" .. ARGV[1])
local m = "0"
if redis.call("hget", KEYS[1], "p:" .. ARGV[1]) == ARGV[3] then
  m = redis.call("hget", KEYS[1], "q:" .. ARGV[1])
  redis.call("hdel", KEYS[1], "p:" .. ARGV[1], "q:" .. ARGV[1])
end
if o and o ~= "-1" and c and c ~= "0" and c ~= "-1" then
  local b = redis.call("hget", KEYS[1], "b:" .. ARGV[1]) or o
  if b == ARGV[3] then
    m = c
  else
    local p = redis.call("hget", KEYS[1], "p:" .. ARGV[1])
    if p and p ~= b then
      redis.call("hset", KEYS[1], "d:" .. ARGV[1], remember(redis.call("hget", KEYS[1], "d:" .. ARGV[1]), p))
    end
    redis.call("hset", KEYS[1], "p:" .. ARGV[1], b, "q:" .. ARGV[1], c)
  end
end
redis.call("hdel", KEYS[1], "b:" .. ARGV[1])
redis.call("hset", KEYS[1], "l:" .. ARGV[1], ARGV[2], "n:" .. ARGV[1], ARGV[3], "m:" .. ARGV[1], m, "o:" .. ARGV[1], ARGV[3])
if not o and not c or o and o ~= "-1" and c == "0" then
  return {2, 1, "0", 1}
end
return {2, 1, "0"}
