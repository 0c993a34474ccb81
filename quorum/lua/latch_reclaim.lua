-- Reclaims an opened latch's claim slot on a node (latch.go
-- latchReclaims): deletes "o:" and "m:" of the latch ARGV[1] where the
-- node has no count and the slot is still the one the countDown read
-- (ARGV[2], "0": none). KEYS[1] is the counters' hash. A claim there is
-- nobody's after, as before in a slot no set made (latch_claim.lua).
if redis.call("hexists", KEYS[1], "l:" .. ARGV[1]) == 0
  and (redis.call("hget", KEYS[1], "o:" .. ARGV[1]) or "0") == ARGV[2] then
  redis.call("hdel", KEYS[1], "o:" .. ARGV[1], "m:" .. ARGV[1])
end
return 1
