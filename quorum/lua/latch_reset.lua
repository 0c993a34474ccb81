-- Sets a granted trySetCount's count over an older latch's count that
-- the set found on a node (latch.go resetLatch): only while the count is
-- still of the nonce ARGV[4] the set found ("0": none). KEYS[1] is the
-- counters' hash; ARGV[1] the latch's name, ARGV[2] the count, ARGV[3]
-- the set's nonce. The claim slot becomes this latch's ("o:"); a claim
-- the node holds stays (a countDown of this latch that read the older
-- count may have taken it); with none (or nobody's, latch_claim.lua), the
-- claim is this latch's to take (as latch_set.lua's).
if redis.call("hget", KEYS[1], "seeded") == "1" and redis.call("hexists", KEYS[1], "l:" .. ARGV[1]) == 1
  and (redis.call("hget", KEYS[1], "n:" .. ARGV[1]) or "0") == ARGV[4] then
  redis.call("hset", KEYS[1], "l:" .. ARGV[1], ARGV[2], "n:" .. ARGV[1], ARGV[3], "o:" .. ARGV[1], ARGV[3])
  local m = redis.call("hget", KEYS[1], "m:" .. ARGV[1])
  if not m or m == "-1" then
    redis.call("hset", KEYS[1], "m:" .. ARGV[1], "0")
  end
end
return 1
