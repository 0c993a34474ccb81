-- A read-write lock's forceUnlock (rwlock.go), as Redisson's
-- RedissonReadLock and RedissonWriteLock.forceUnlockAsync do it on one
-- Redis, but without their publish. KEYS[1] is the hash, ARGV[1] the
-- mode it deletes ("read" or "write"). Returns 1 if it was locked in
-- that mode (now deleted), else 0.
if redis.call("hget", KEYS[1], "mode") == ARGV[1] then
  redis.call("del", KEYS[1])
  return 1
end
return 0
