-- Claims a count-down latch's zero message on a node (latch.go): the
-- first claim stays. KEYS[1] is the counters' hash, ARGV[1] the latch's
-- name, ARGV[2] the claim (a decimal). Returns {state, claim}: state as
-- counter_read.lua (only a seeded node claims), claim the one it has.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
local f = "m:" .. ARGV[1]
if redis.call("hsetnx", KEYS[1], f, ARGV[2]) == 1 then
  return {2, ARGV[2]}
end
return {2, redis.call("hget", KEYS[1], f)}
