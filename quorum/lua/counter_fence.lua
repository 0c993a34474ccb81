-- FENCE's one round (fence.go). KEYS[1] is the counters' hash, KEYS[2]
-- the lock key, KEYS[3] its hold record; ARGV[1] the counter's field,
-- ARGV[2] the lock's token. Where the key holds the token (with a TTL)
-- on a seeded node, the answer is the hold record's T if it is this
-- token's, else the counter plus one, taken and recorded here.
-- Replies, short in the usual cases (a table costs the node more):
-- "T pttl" when it took T; "T pttl C" when it found this token's record
-- T (C: the counter); else {state, value, virgin, now, held, pttl, hold,
-- answer}: as counter_read.lua (value: the counter; hold: the record
-- found; now only when pending), and answer the T this node gives (0:
-- none).
--
-- The usual case first, with as few calls as can decide it: a string key
-- that holds the token, with a TTL. The field exists only in a seeded
-- hash (seeding writes the hash anew; nothing else writes the field on a
-- node that is not seeded, and a node that lost its data lost both), so
-- finding it, or HINCRBY finding it (a reply above 1), shows the node
-- seeded; a reply of 1 is asked again, and undone where not seeded.
-- Numbers are formatted once, as integers (a Lua number passed to a
-- call or joined to a string is formatted as a float, at a cost).
if redis.pcall("get", KEYS[2]) == ARGV[2] then
  local rec = redis.call("get", KEYS[3])
  local pttl = redis.call("pttl", KEYS[2])
  if pttl > 0 then
    local p = string.format("%d", pttl)
    local sp = rec and string.find(rec, " ", 1, true)
    if sp and string.sub(rec, sp + 1) == ARGV[2] then
      local c = redis.call("hget", KEYS[1], ARGV[1])
      if c then
        redis.call("pexpire", KEYS[3], p)
        return string.sub(rec, 1, sp - 1) .. " " .. p .. " " .. c
      end
    else
      -- HINCRBY fails past 2^63-1, and the node then fails the call.
      -- Its reply reaches Lua as a double, exact below 2^53; past that
      -- the field is read back as a string.
      local n = redis.call("hincrby", KEYS[1], ARGV[1], 1)
      if n > 1 or redis.call("hget", KEYS[1], "seeded") == "1" then
        local t
        if n < 9007199254740992 then
          t = string.format("%d", n)
        else
          t = redis.call("hget", KEYS[1], ARGV[1])
        end
        redis.call("set", KEYS[3], t .. " " .. ARGV[2], "PX", p)
        return t .. " " .. p
      end
      redis.call("hdel", KEYS[1], ARGV[1])
    end
  end
end
-- Every other case: a hash hold (Redisson's), no hold, no TTL, a node
-- not seeded.
local state, value, virgin, now = 0, "0", 0, 0
if redis.call("hget", KEYS[1], "seeded") == "1" then
  state = 2
else
  local mark = redis.call("hget", KEYS[1], "pending")
  if mark then
    state, value = 1, mark
    local t = redis.call("time")
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
end
local held, pttl, hold, answer = 0, -2, "0", "0"
if holds(KEYS[2], ARGV[2]) then
  held = 1
  pttl = redis.call("pttl", KEYS[2])
  local rec = redis.call("get", KEYS[3])
  if rec then
    local sp = string.find(rec, " ", 1, true)
    if sp and string.sub(rec, sp + 1) == ARGV[2] then
      hold = string.sub(rec, 1, sp - 1)
    end
  end
  if state == 2 and pttl > 0 then
    if hold ~= "0" then
      answer = hold
      redis.call("pexpire", KEYS[3], pttl)
    else
      -- HINCRBY fails past 2^63-1, and the node then fails the call.
      -- Its reply reaches Lua as a double, exact below 2^53; past that
      -- the field is read back as a string.
      local n = redis.call("hincrby", KEYS[1], ARGV[1], 1)
      if n < 9007199254740992 then
        answer = string.format("%d", n)
      else
        answer = redis.call("hget", KEYS[1], ARGV[1])
      end
      redis.call("set", KEYS[3], answer .. " " .. ARGV[2], "PX", pttl)
      return answer .. " " .. pttl
    end
  end
end
if state == 2 then
  value = redis.call("hget", KEYS[1], ARGV[1]) or "0"
  if redis.call("hlen", KEYS[1]) == 1 then
    virgin = 1 -- no counter was ever written here
  end
end
return {state, value, virgin, now, held, pttl, hold, answer}
