-- Undoes a denied trySetCount where it landed (latch.go): deletes the
-- count if the set with nonce ARGV[2] made it. KEYS[1] is the counters'
-- hash, ARGV[1] the latch's name. Its "m:" stays (a claim taken there
-- before may be a vote: attack12 U1), but for one still "0" where the
-- set found no field of the slot, or a free one (ARGV[3] "1"): that
-- node has no vote of it, so a claim may create its slot (attack15 L6,
-- L6': "m:" "0" with no tag answered every claim nobody's).
if redis.call("hget", KEYS[1], "n:" .. ARGV[1]) == ARGV[2] then
  redis.call("hdel", KEYS[1], "l:" .. ARGV[1], "n:" .. ARGV[1], "o:" .. ARGV[1])
  if ARGV[3] == "1" and redis.call("hget", KEYS[1], "m:" .. ARGV[1]) == "0" then
    redis.call("hdel", KEYS[1], "m:" .. ARGV[1])
  end
end
return 1
