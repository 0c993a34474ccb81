-- The watchdog's renewal of one client's locks (rwlock.go): Redisson's
-- renewal/LockTask.java script, RLocks and write locks mixed, except that
-- a hash holding another holder beside the name (a reader under the same
-- thread's write lock) never has its expiry lowered, and a fenced hold's
-- record (fence.go) keeps the key's expiry, as the engine's extend keeps
-- it. KEYS: the locks; ARGV[1] the lease in ms, then each key's lock
-- name. Returns 1 or 0 per key: whether the name held it (and it is
-- renewed).
local result = {}
for i = 1, #KEYS do
  local k, name = KEYS[i], ARGV[i + 1]
  if redis.call("hexists", k, name) == 1 then
    local ttl = tonumber(ARGV[1])
    for _, f in ipairs(redis.call("hkeys", k)) do
      if f ~= "mode" and f ~= name then
        -- Another's hold: no shorter (a hash without expiry keeps none).
        local left = redis.call("pttl", k)
        ttl = left >= 0 and math.max(ttl, left) or nil
        break
      end
    end
    if ttl then
      redis.call("pexpire", k, ttl)
      local rec = redis.call("get", __RLP_HOLDPREFIX .. k)
      local sp = rec and string.find(rec, " ", 1, true)
      if sp and string.sub(rec, sp + 1) == name then
        redis.call("pexpire", __RLP_HOLDPREFIX .. k, ttl)
      end
    end
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
