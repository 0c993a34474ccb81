-- The write-back round of a counter (fence.go). KEYS as counter_read.lua.
-- ARGV[1] is the field, ARGV[2] the value (a decimal without sign or
-- leading zeros), ARGV[3] "1" for an exclusive write, ARGV[4] the token,
-- ARGV[5] the deadline (lateCheck, which the node puts before this).
-- A record the token already has with a higher value stays.
-- Returns 1 written, 0 not seeded (nothing written), -1 exclusive and
-- the counter was at the value or above, -2 a FENCE whose key does not
-- hold the token there (no record written).
if redis.call("hget", KEYS[1], "seeded") ~= "1" then
  return 0
end
-- Compared as decimal strings: Lua's numbers lose integers past 2^53.
local function below(a, b)
  return #a < #b or (#a == #b and a < b)
end
local c = redis.call("hget", KEYS[1], ARGV[1]) or "0"
if below(c, ARGV[2]) then
  redis.call("hset", KEYS[1], ARGV[1], ARGV[2])
elseif ARGV[3] == "1" then
  return -1
end
if #KEYS == 3 then
  local pttl = redis.call("pttl", KEYS[2])
  if not (holds(KEYS[2], ARGV[4]) and pttl > 0) then
    -- The hold is not here: the counter is raised, but the node does
    -- not count, so that every fenced hold leaves its record on a quorum.
    return -2
  end
  -- A record of this token with a higher T stays (its expiry follows
  -- the key's): a write-back that lands late, after the same token's
  -- next hold got a higher T, must not set it back (attack18 A7).
  local v = ARGV[2]
  local rec = redis.call("get", KEYS[3])
  if rec then
    local sp = string.find(rec, " ", 1, true)
    if sp and string.sub(rec, sp + 1) == ARGV[4] and below(v, string.sub(rec, 1, sp - 1)) then
      v = string.sub(rec, 1, sp - 1)
    end
  end
  redis.call("set", KEYS[3], v .. " " .. ARGV[4], "PX", pttl)
end
return 1
