-- A Redisson lock's forceUnlock (rwlock.go), as Redisson's
-- RedissonReadLock, RedissonWriteLock and RedissonLock.forceUnlockAsync
-- do it on one Redis, but without their publish. KEYS[1] is the hash,
-- ARGV[1] the mode it deletes ("read" or "write"; "" for an RLock's,
-- whatever the key holds). Returns 1 if it was locked so (now deleted),
-- else 0. The key's fencing record (fence.go) goes with it: a later hold,
-- even by the same thread, is another hold.
if ARGV[1] == "" then
  local n = redis.call("del", KEYS[1])
  redis.call("del", __RLP_HOLDPREFIX .. KEYS[1])
  return n
end
if redis.call("hget", KEYS[1], "mode") == ARGV[1] then
  redis.call("del", KEYS[1], __RLP_HOLDPREFIX .. KEYS[1])
  return 1
end
return 0
