-- Sets a granted trySetCount's count over an older latch's count that
-- the set found on a node (latch.go resetLatch): only while the count is
-- still of the nonce ARGV[4] the set found ("0": none). KEYS[1] is the
-- counters' hash; ARGV[1] the latch's name, ARGV[2] the count, ARGV[3]
-- the set's nonce. The claim slot becomes this latch's ("o:"); a claim
-- the node holds stays if it was given for this latch's ballot (a
-- countDown of this latch that read the older count may have taken it:
-- "b:"), else it is kept by its ballot as "p:", "q:" (the ballot of one
-- kept before remembered, "d:": latch_voted.lua) and the slot is this
-- latch's to take (attack15 L5: an older opening's claim kept as "m:"
-- split this latch's claims); with none (or nobody's, latch_claim.lua),
-- the claim is this latch's to take (as latch_set.lua's).
if redis.call("hget", KEYS[1], "seeded") == "1" and redis.call("hexists", KEYS[1], "l:" .. ARGV[1]) == 1
  and (redis.call("hget", KEYS[1], "n:" .. ARGV[1]) or "0") == ARGV[4] then
  local o = redis.call("hget", KEYS[1], "o:" .. ARGV[1])
  local c = redis.call("hget", KEYS[1], "m:" .. ARGV[1])
  local b = redis.call("hget", KEYS[1], "b:" .. ARGV[1]) or o
  if c and c ~= "0" and c ~= "-1" and b ~= ARGV[3] then
    if b then
      local p = redis.call("hget", KEYS[1], "p:" .. ARGV[1])
      if p and p ~= b then
        redis.call("hset", KEYS[1], "d:" .. ARGV[1], remember(redis.call("hget", KEYS[1], "d:" .. ARGV[1]), p))
      end
      redis.call("hset", KEYS[1], "p:" .. ARGV[1], b, "q:" .. ARGV[1], c)
    end
    c = nil
  end
  if not c or c == "-1" then
    c = "0"
  end
  redis.call("hset", KEYS[1], "l:" .. ARGV[1], ARGV[2], "n:" .. ARGV[1], ARGV[3], "o:" .. ARGV[1], ARGV[3], "m:" .. ARGV[1], c)
  redis.call("hdel", KEYS[1], "b:" .. ARGV[1])
end
return 1
