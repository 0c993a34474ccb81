-- FENCE's one round (fence.go). KEYS[1] is the lock key, ARGV[1] the
-- lock's token, ARGV[2] the counter's field if not FENCE's own. The
-- counters' hash and the key's hold record are named here: each key or
-- argument a call passes costs the node more than the name built here.
-- Where the key holds the token (with a TTL) on a seeded node, the
-- answer is the hold record's T if it is this token's, else the counter
-- plus one, taken and recorded here.
-- Replies, short in the usual cases (a table costs the node more):
-- "T pttl" when it took T; "T pttl C" when it found this token's record
-- T (C: the counter); else {state, value, virgin, now, held, pttl, hold,
-- answer, id, gen}: as counter_read.lua (value: the counter; hold: the
-- record found; now only when pending), and answer the T this node gives
-- (0: none).
local H, K, R, F, tok = __RLP_COUNTERS, KEYS[1], __RLP_HOLDPREFIX .. KEYS[1], ARGV[2] or __RLP_FENCEFIELD, ARGV[1]
local fmt = string.format
--
-- The usual case first, with as few calls as can decide it: a string key
-- that holds the token, with a TTL. The field exists only in a seeded
-- hash (seeding writes the hash anew; nothing else writes the field on a
-- node that is not seeded, and a node that lost its data lost both), so
-- finding it, or HINCRBY finding it (a reply above 1), shows the node
-- seeded; a reply of 1 is asked again, and undone where not seeded.
-- Numbers are formatted once, as integers (a Lua number passed to a
-- call or joined to a string is formatted as a float, at a cost).
if redis.pcall("get", K) == tok then
  local rec = redis.call("get", R)
  local pttl = redis.call("pttl", K)
  if pttl > 0 then
    local p = fmt("%d", pttl)
    local sp = rec and string.find(rec, " ", 1, true)
    if sp and string.sub(rec, sp + 1) == tok then
      local c = redis.call("hget", H, F)
      if c then
        redis.call("pexpire", R, p)
        return string.sub(rec, 1, sp - 1) .. " " .. p .. " " .. c
      end
    else
      -- HINCRBY fails past 2^63-1, and the node then fails the call.
      -- Its reply reaches Lua as a double, exact below 2^53; past that
      -- the field is read back as a string.
      local n = redis.call("hincrby", H, F, 1)
      if n > 1 or redis.call("hget", H, "seeded") == "1" then
        local t
        if n < 9007199254740992 then
          t = fmt("%d", n)
        else
          t = redis.call("hget", H, F)
        end
        redis.call("set", R, t .. " " .. tok, "PX", p)
        return t .. " " .. p
      end
      redis.call("hdel", H, F)
    end
  end
end
-- Every other case: a hash hold (Redisson's), no hold, no TTL, a node
-- not seeded.
local state, value, virgin, now, id, gen = 0, "0", 0, 0, "", ""
if redis.call("hget", H, "seeded") == "1" then
  state = 2
else
  local mark = redis.call("hget", H, "pending")
  if mark then
    state, value = 1, mark
    id = redis.call("hget", H, "id") or ""
    gen = redis.call("hget", H, "gen") or ""
    local t = redis.call("time")
    now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
end
local held, pttl, hold, answer = 0, -2, "0", "0"
if holds(K, tok) then
  held = 1
  pttl = redis.call("pttl", K)
  local rec = redis.call("get", R)
  if rec then
    local sp = string.find(rec, " ", 1, true)
    if sp and string.sub(rec, sp + 1) == tok then
      hold = string.sub(rec, 1, sp - 1)
    end
  end
  if state == 2 and pttl > 0 then
    if hold ~= "0" then
      answer = hold
      redis.call("pexpire", R, pttl)
    else
      local n = redis.call("hincrby", H, F, 1)
      if n < 9007199254740992 then
        answer = fmt("%d", n)
      else
        answer = redis.call("hget", H, F)
      end
      redis.call("set", R, answer .. " " .. tok, "PX", pttl)
      return answer .. " " .. pttl
    end
  end
end
if state == 2 then
  value = redis.call("hget", H, F) or "0"
  gen = redis.call("hget", H, "gen") or ""
  local n = redis.call("hlen", H)
  if n == 1 or (n == 2 and gen ~= "") then
    virgin = 1 -- no counter was ever written here
  end
end
return {state, value, virgin, now, held, pttl, hold, answer, id, gen}
