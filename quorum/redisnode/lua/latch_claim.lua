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
-- delete's tombstone ("-1") of a node that voted for this ballot before
-- (its memory, "d:", latch_voted.lua; a claim of another ballot gets a
-- slot of it there, with this claim: attack15 L4, else a tombstone on a
-- node the set missed split the claims), "m:" with no tag (a denied set's undo,
-- attack12 U1), or "-1": a node seeded after a restart that got no set
-- since (it may have answered another claim before). A node with no
-- field of the slot (it missed the set) that the countDown read with no
-- tag, and no memory of a vote for the ballot, gets a slot of it, with
-- this claim (latch20c: its claims
-- were all nobody's, so claims split over the others decided none); a
-- claim that read no tag there later takes the slot of its ballot. A
-- vote given in a slot of another tag, or for none, records its ballot
-- ("b:"). A ballot is a set's tag (a seed's carried tag is negated:
-- latch.go latchCarried), so a vote of another ballot is another
-- latch's: the node keeps it by its ballot, and votes for this one, its
-- slot's tag left as the evidence (attack15 L3: an older opening's vote,
-- on a node the set missed, split two last countDowns' claims, and as
-- the least the tie-break sent nothing); a vote it kept before is
-- forgotten, its ballot remembered apart ("x:", latch_voted.lua: the
-- rest of L3). A claim of a ballot so forgotten, of none beside such a
-- memory, is nobody's (else a second vote); a delete's memory ("d:")
-- and a seed's "any" take no part in it: a reseeded node answers a
-- claim of none as before. A claim of none may be of
-- either latch: a vote it is answered with answers any from now on, and
-- beside a second one it is nobody's.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local o = redis.call("hget", KEYS[1], "o:" .. ARGV[1])
local f = "m:" .. ARGV[1]
local c = redis.call("hget", KEYS[1], f)
local d = redis.call("hget", KEYS[1], "d:" .. ARGV[1])
if o == "-1" then
  if c or not d or voted(d, ARGV[4]) then
    return {2, 0}
  end
  redis.call("hset", KEYS[1], "o:" .. ARGV[1], ARGV[4], f, ARGV[2])
  return {2, ARGV[2]}
end
local p = redis.call("hget", KEYS[1], "p:" .. ARGV[1])
local x = redis.call("hget", KEYS[1], "x:" .. ARGV[1])
if x then
  local b = redis.call("hget", KEYS[1], "b:" .. ARGV[1]) or o
  if ARGV[4] == "0" or ARGV[4] ~= b and ARGV[4] ~= p and voted(x, ARGV[4]) then
    return {2, 0}
  end
end
if p and (p == ARGV[4] or p == "0" or ARGV[4] == "0") then
  if ARGV[4] == "0" and p ~= "0" then
    if c and c ~= "0" and c ~= "-1" then
      return {2, 0}
    end
    redis.call("hset", KEYS[1], "p:" .. ARGV[1], "0")
  end
  return {2, redis.call("hget", KEYS[1], "q:" .. ARGV[1])}
end
if o ~= ARGV[3] then
  if ARGV[3] ~= "0" or ARGV[4] == "0" then
    return {2, 0}
  end
  if not o then
    if c or d and voted(d, ARGV[4]) then
      return {2, 0}
    end
    redis.call("hset", KEYS[1], "o:" .. ARGV[1], ARGV[4], f, ARGV[2])
    return {2, ARGV[2]}
  end
  if o ~= ARGV[4] then
    return {2, 0}
  end
end
if c == "-1" then
  return {2, 0}
end
if c and c ~= "0" then
  local b = redis.call("hget", KEYS[1], "b:" .. ARGV[1]) or o
  if ARGV[4] ~= "0" and b ~= "0" and b ~= ARGV[4] then
    if p then
      redis.call("hset", KEYS[1], "x:" .. ARGV[1], remember(x, p))
    end
    redis.call("hset", KEYS[1], "p:" .. ARGV[1], b, "q:" .. ARGV[1], c, f, ARGV[2], "b:" .. ARGV[1], ARGV[4])
    return {2, ARGV[2]}
  end
  if ARGV[4] == "0" and b ~= "0" then
    redis.call("hset", KEYS[1], "b:" .. ARGV[1], "0")
  end
  return {2, c}
end
redis.call("hset", KEYS[1], f, ARGV[2])
if o ~= ARGV[4] then
  redis.call("hset", KEYS[1], "b:" .. ARGV[1], ARGV[4])
end
return {2, ARGV[2]}
