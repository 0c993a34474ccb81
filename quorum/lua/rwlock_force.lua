-- A read lock's forceUnlock (rwlock.go), as Redisson's
-- RedissonReadLock.forceUnlockAsync does it on one Redis, but without its
-- publish. KEYS[1] is the hash. Returns 1 if it was read-locked (now
-- deleted), else 0.
if redis.call("hget", KEYS[1], "mode") == "read" then
  redis.call("del", KEYS[1])
  return 1
end
return 0
