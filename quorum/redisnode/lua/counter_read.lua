-- The read round of a counter (fence.go). KEYS[1] is the counters' hash;
-- for a FENCE, KEYS[2] is the lock key and KEYS[3] its hold record.
-- ARGV[1] is the counter's field, ARGV[2] the lock's token.
-- Returns {state, value, virgin, now, held, pttl, hold, id, gen}: state 0
-- missing, 1 pending (value: the mark, id: the mark's id), 2 seeded
-- (value: the counter, a string; virgin: no counter in the hash); gen: a
-- new deployment's ids, on a node it seeded or named (counter_seed.lua,
-- counter_name.lua).
local t = redis.call("time")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state, value, virgin, id, gen = 0, "0", 0, "", ""
if redis.call("hget", KEYS[1], "seeded") == "1" then
  state = 2
  value = redis.call("hget", KEYS[1], ARGV[1]) or "0"
  gen = redis.call("hget", KEYS[1], "gen") or ""
  local n = redis.call("hlen", KEYS[1])
  if n == 1 or (n == 2 and gen ~= "") then
    virgin = 1
  end
else
  local mark = redis.call("hget", KEYS[1], "pending")
  if mark then
    state, value = 1, mark
    id = redis.call("hget", KEYS[1], "id") or ""
    gen = redis.call("hget", KEYS[1], "gen") or ""
  end
end
local held, pttl, hold = 0, -2, "0"
if #KEYS == 3 then
  if holds(KEYS[2], ARGV[2]) then
    held = 1
  end
  if held == 1 then
    pttl = redis.call("pttl", KEYS[2])
    local rec = redis.call("get", KEYS[3])
    if rec then
      local sp = string.find(rec, " ", 1, true)
      if sp and string.sub(rec, sp + 1) == ARGV[2] then
        hold = string.sub(rec, 1, sp - 1)
        -- The record lives as long as the hold here (an extend the
        -- record missed moved the key's expiry).
        if pttl > 0 then redis.call("pexpire", KEYS[3], pttl) end
      end
    end
  end
end
return {state, value, virgin, now, held, pttl, hold, id, gen}
