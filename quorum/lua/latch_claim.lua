-- Claims a count-down latch's zero message on a node (latch.go): the
-- first claim stays. KEYS[1] is the counters' hash, ARGV[1] the latch's
-- name, ARGV[2] the claim (a decimal), ARGV[3] the nonce the countDown
-- read here ("0": no tag), ARGV[4] its ballot (the tag it read on a
-- quorum, "0": none). Returns {state, claim}: state as counter_read.lua
-- (only a seeded node claims), claim the one it has; a vote given for
-- this ballot in a slot a later set replaced ("p:" its ballot, "q:" the
-- vote) is answered first (review28 F0: else the node voted twice, once
-- in each slot), as is one given for none ("0"), to a claim of any. 0 (nobody's) when the claim
-- slot is another latch's (its tag, "o:", the nonce of the set, reset or
-- seed that made it, is not the one read: a later set landed), a
-- delete's tombstone ("-1"), "m:" with no tag (a denied set's undo,
-- attack12 U1), or "-1": a node seeded after a restart that got no set
-- since (it may have answered another claim before). A node with no
-- field of the slot (it missed the set) that the countDown read with no
-- tag gets a slot of the ballot, with this claim (latch20c: its claims
-- were all nobody's, so claims split over the others decided none); a
-- claim that read no tag there later takes the slot of its ballot. A
-- vote given in a slot of another tag, or for none, records its ballot
-- ("b:").
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local o = redis.call("hget", KEYS[1], "o:" .. ARGV[1])
local f = "m:" .. ARGV[1]
if o == "-1" then
  return {2, 0}
end
local p = redis.call("hget", KEYS[1], "p:" .. ARGV[1])
if p and (p == ARGV[4] or p == "0" or ARGV[4] == "0") then
  return {2, redis.call("hget", KEYS[1], "q:" .. ARGV[1])}
end
if o ~= ARGV[3] then
  if ARGV[3] ~= "0" or ARGV[4] == "0" then
    return {2, 0}
  end
  if not o then
    if redis.call("hexists", KEYS[1], f) == 1 then
      return {2, 0}
    end
    redis.call("hset", KEYS[1], "o:" .. ARGV[1], ARGV[4], f, ARGV[2])
    return {2, ARGV[2]}
  end
  if o ~= ARGV[4] then
    return {2, 0}
  end
end
local c = redis.call("hget", KEYS[1], f)
if c == "-1" then
  return {2, 0}
end
if c and c ~= "0" then
  return {2, c}
end
redis.call("hset", KEYS[1], f, ARGV[2])
if o ~= ARGV[4] then
  redis.call("hset", KEYS[1], "b:" .. ARGV[1], ARGV[4])
end
return {2, ARGV[2]}
