-- Undoes a denied trySetCount where it landed (latch.go): deletes the
-- count if the set with nonce ARGV[2] made it. KEYS[1] is the counters'
-- hash, ARGV[1] the latch's name.
if redis.call("hget", KEYS[1], "n:" .. ARGV[1]) == ARGV[2] then
  redis.call("hdel", KEYS[1], "l:" .. ARGV[1], "n:" .. ARGV[1], "o:" .. ARGV[1])
end
return 1
