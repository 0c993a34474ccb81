-- Claims a count-down latch's zero message on a node (latch.go): the
-- first claim stays. KEYS[1] is the counters' hash, ARGV[1] the latch's
-- name, ARGV[2] the claim (a decimal), ARGV[3] the nonce the countDown
-- read here. Returns {state, claim}: state as counter_read.lua (only a
-- seeded node claims), claim the one it has; 0 (nobody's) when the claim
-- slot is another latch's (the nonce of the set, reset or seed that made
-- it, "o:", is not the one read: a later set landed, or a delete), when
-- it has no "o:" (no set made it: a delete or a denied set's undo took
-- it, attack12 U1, U1b), or "-1": a node seeded after a restart that got
-- no set since (it may have answered another claim before).
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
if redis.call("hget", KEYS[1], "o:" .. ARGV[1]) ~= ARGV[3] then
  return {2, 0}
end
local f = "m:" .. ARGV[1]
local c = redis.call("hget", KEYS[1], f)
if c == "-1" then
  return {2, 0}
end
if c and c ~= "0" then
  return {2, c}
end
redis.call("hset", KEYS[1], f, ARGV[2])
return {2, ARGV[2]}
