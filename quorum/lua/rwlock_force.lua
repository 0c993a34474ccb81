-- A Redisson lock's forceUnlock (rwlock.go), as Redisson's
-- RedissonReadLock, RedissonWriteLock and RedissonLock.forceUnlockAsync
-- do it on one Redis, but without their publish. KEYS[1] is the hash,
-- ARGV[1] the mode it deletes ("read" or "write"; "" for an RLock's,
-- whatever the key holds). Returns 1 if it was locked so (now deleted),
-- else 0.
if ARGV[1] == "" then
  return redis.call("del", KEYS[1])
end
if redis.call("hget", KEYS[1], "mode") == ARGV[1] then
  redis.call("del", KEYS[1])
  return 1
end
return 0
