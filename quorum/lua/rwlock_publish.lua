-- A decided read lock release's message (rwlock.go): ARGV[1] is PUBLISH
-- or SPUBLISH, KEYS[1] the channel, ARGV[2] the message.
return redis.call(ARGV[1], KEYS[1], ARGV[2])
