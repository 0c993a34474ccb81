-- A count-down latch's trySetCount on a node (latch.go). KEYS[1] is the
-- counters' hash; ARGV[1] the latch's name, ARGV[2] the count, ARGV[3]
-- the set's nonce. Returns {state, set}: state as counter_read.lua (only
-- a seeded node sets), set 1 when it set the count, 0 when one was there.
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return {redis.call("hexists", KEYS[1], "pending"), 0}
end
if redis.call("hexists", KEYS[1], "l:" .. ARGV[1]) == 1 then
  return {2, 0}
end
redis.call("hset", KEYS[1], "l:" .. ARGV[1], ARGV[2], "n:" .. ARGV[1], ARGV[3])
-- An older latch's claim of its zero message is not this one's.
redis.call("hdel", KEYS[1], "m:" .. ARGV[1])
return {2, 1}
