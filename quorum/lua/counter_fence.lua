-- FENCE's one round (fence.go). KEYS[1] is the counters' hash, KEYS[2]
-- the lock key, KEYS[3] its hold record; ARGV[1] the counter's field,
-- ARGV[2] the lock's token. Where the key holds the token (with a TTL)
-- on a seeded node, the answer is the hold record's T if it is this
-- token's, else the counter plus one, taken and recorded here.
-- Returns "T pttl" when it took T (the usual case: a short reply costs
-- the node less than a table), else {state, value, virgin, now, held,
-- pttl, hold, answer}: as counter_read.lua (value: the counter; hold: the
-- record found; now only when pending), and answer the T this node gives
-- (0: none).
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
