local __rlp_ok, __rlp_r = __rlp_xpcall(__rlp_body, __rlp_asis)
-- The commonest run is answered first, as the one-string form below
-- answers it: one key, proved by the fast path (no key on the slow path,
-- no own value changed: no fencing record to move), nothing refused or
-- published, and the body's reply its SET's OK as Redis gave it.
if __rlp_ok and __rlp_okr and __rlp_r == __rlp_okr and not __rlp_refused and not __rlp_slowfns and not __rlp_held
  and not __rlp_pubs and __rlp_keys[2] == nil and __rlp_r.ok == "OK" and __rlp_r.err == nil then
  -- Here the key was changed (okr) from no own holder before (held is
  -- false): a take. One that holds ARGV[1] now (mi is set only beside a
  -- value m), with the ttl argument of the last such take, gets that
  -- take's reply again (fastr): no string is built.
  local st = __rlp_p1 -- KEYS[1]'s state (wrapperInitSrc)
  local ts = st.ttls
  if ts ~= nil and ts == __rlp_fastts and st.mi == 1 then return __rlp_fastr end
  ${template "wrapper_fastkey.lua" .}
  if hold < 1e14 then
    local D = __rlp_digits
    local r = "s" .. D[ch] .. "." .. (D[bi] or bi) .. "." .. (D[ai] or ai) .. "." .. (holds or D[hold] or hold) .. ":OK"
    if ch == 1 and bi == 0 and ai == 1 and holds ~= nil then __rlp_fastts, __rlp_fastr = holds, r end
    return r
  end
end
local __rlp_why = __rlp_refused
-- The slow path's keys: each is snapshot after the run and judged
-- against its snapshot from before. A constant left as a string key's
-- value (a latch) needs a change to an own hold on another key.
local __rlp_after, __rlp_same
if __rlp_slowfns then
  local L = __rlp_slowfns
  local latch, ownChange = false, false
  __rlp_after, __rlp_same = {}, {}
  for i = 1, #__rlp_keys do
    local k = __rlp_keys[i]
    local st = __rlp_st[k]
    local b = st.s
    if b then
      __rlp_after[i] = L.snap(k, b)
      __rlp_same[i] = L.same(b, __rlp_after[i])
      if not __rlp_why and not __rlp_same[i] then
        local why, l = L.judge(b, __rlp_after[i])
        __rlp_why, latch = why, latch or l
        if not ownChange then
          local held = {}
          L.mine(b, held, 0)
          ownChange = held[1] > 0
        end
      end
    elseif st.ttl and st.oi then
      ownChange = true
    end
  end
  if latch and not ownChange and not __rlp_why then
    __rlp_why = "it writes a constant as a key's value (a constant is not a token)"
  end
end
-- __rlp_enc encodes a reply {tag, value} (below) as one Redis converts
-- it (script_lua.c): a table is an error or a status by its err, then
-- its ok, when a string; a double, a big number (CR and LF as spaces),
-- a verbatim string (its format three bytes, then ":" and its text), a
-- map or a set by its field; else an array. Nil when it nests more than
-- ${.MaxDepth} tables (a cycle is endless): more than the proxy
-- carries, so the run is refused and undone.
-- It also gives up past 100,000 elements below the reply: a table may
-- appear in itself many times over ({t, t} nested), which encodes
-- exponentially.
local __rlp_left = 100001
local function __rlp_enc(v, d)
  __rlp_left = __rlp_left - 1
  if __rlp_left < 0 then return nil end
  local t = __rlp_type(v)
  if t == "table" then
    if d > ${.MaxDepth} then return nil end
    local f = v.err
    if __rlp_type(f) == "string" then return {"e", f} end
    f = v.ok
    if __rlp_type(f) == "string" then return {"s", f} end
    f = v.double
    if __rlp_type(f) == "number" then return {"d", string.format("%.17g", f)} end
    f = v.big_number
    if __rlp_type(f) == "string" then return {"B", (string.gsub(f, "[\r\n]", " "))} end
    f = v.verbatim_string
    if __rlp_type(f) == "table" and __rlp_type(f.format) == "string" and __rlp_type(f.string) == "string" then
      -- the format as Redis writes it: up to a NUL, three bytes padded
      local fm = string.sub(string.match(f.format, "^[^%z]*") .. "   ", 1, 3)
      return {"v", fm .. ":" .. f.string}
    end
    local out, tag = {}, "a"
    if __rlp_type(v.map) == "table" then tag, f = "m", v.map
    elseif __rlp_type(v.set) == "table" then tag, f = "t", v.set end
    if tag ~= "a" then
      for k, x in pairs(f) do
        local e = __rlp_enc(k, d + 1)
        if not e then return nil end
        out[#out + 1] = e
        if tag == "m" then
          e = __rlp_enc(x, d + 1)
          if not e then return nil end
          out[#out + 1] = e
        end
      end
      return {tag, out}
    end
    local i = 1
    while v[i] ~= nil do
      local e = __rlp_enc(v[i], d + 1)
      if not e then return nil end
      out[i] = e
      i = i + 1
    end
    return {"a", out}
  elseif t == "number" then return {"i", v}
  elseif t == "string" then return {"b", v}
  elseif t == "boolean" and v then return {"i", 1} end
  return {"n", 0}
end
local __rlp_encr
-- Every table reply but the fast path's SET reply as Redis gave it (its
-- ok still "OK", no err: answered "OK" below) is encoded here, also the
-- SET's table once the body changed it, so that one too big is refused
-- and undone.
if not __rlp_why and __rlp_ok and __rlp_type(__rlp_r) == "table"
  and not (__rlp_r == __rlp_okr and __rlp_r.ok == "OK" and __rlp_r.err == nil) then
  __rlp_encr = __rlp_enc(__rlp_r, 1)
  if not __rlp_encr and __rlp_left < 0 then
    __rlp_why = "its reply has more than 100000 elements, more than the proxy carries"
  elseif not __rlp_encr then
    __rlp_why = "its reply nests more than ${.MaxDepth} arrays, more than the proxy carries"
  end
end
if __rlp_why then
  -- Defined here: only a refused run restores. Each key is written back
  -- in place when it is still of its snapshot's type, then what the run
  -- added is removed; otherwise it is deleted first. Entries go in
  -- chunks, so no call fails for its size (unpack's limit, the server's
  -- arguments): a restore never stops halfway. The fast path's keys go
  -- back to what they held before its first change.
  local function __rlp_chunked(cmd, k, list, pairs2)
    local i = 1
    while i <= #list do
      local args, n = {}, 0
      while i <= #list and n < 512 do
        if pairs2 then args[n + 1], args[n + 2], n, i = list[i + 1], list[i], n + 2, i + 2
        else args[n + 1], n, i = list[i], n + 1, i + 1 end
      end
      __rlp_call(cmd, k, unpack(args))
    end
  end
  local function __rlp_restore(k, s, a)
    if s.t == "none" then
      __rlp_call("del", k)
      return
    elseif s.t == "string" then __rlp_call("set", k, s.v)
    else
      local inplace = a and a.t == s.t and not a.big
      if not inplace then __rlp_call("del", k) end
      __rlp_chunked(s.t == "hash" and "hset" or "zadd", k, s.v, s.t == "zset")
      if inplace then
        local hb, extra = __rlp_slowfns.holders(s), {}
        for m in pairs(__rlp_slowfns.holders(a)) do
          if hb[m] == nil then extra[#extra + 1] = m end
        end
        __rlp_chunked(s.t == "hash" and "hdel" or "zrem", k, extra, false)
      end
    end
    if s.exp > 0 then __rlp_call("pexpireat", k, s.exp) else __rlp_call("persist", k) end
  end
  for i, k in ipairs(__rlp_keys) do
    local st = __rlp_st[k]
    if st.s then
      if not __rlp_same[i] then __rlp_restore(k, st.s, __rlp_after[i]) end
    elseif st.ttl then
      if st.o then __rlp_restore(k, {t = "string", v = st.o, exp = st.oe})
      else __rlp_call("del", k) end
    end
  end
  return {"refused", __rlp_why}
end
-- A hold's fencing record (fence.go) ends with the hold and lives as long
-- as it, as the engine's release and extend keep it: the record of a
-- holder the key had before the run is deleted once that holder is gone,
-- and its expiry follows the key's when the run moved it. Only strings
-- and hashes have one (FENCE reads no sorted set). A run with no key on
-- the slow path and none the fast path changed from an own value has
-- none to move.
for i = 1, (__rlp_slowfns or __rlp_held) and #__rlp_keys or 0 do
  local k = __rlp_keys[i]
  local st = __rlp_st[k]
  local b = st.s
  if b and not __rlp_same[i] and (b.t == "string" or b.t == "hash") or not b and st.ttl and st.oi then
    local rk = ${.HoldPrefix} .. k
    local rec = __rlp_call("get", rk)
    local sp = rec and string.find(rec, " ", 1, true)
    if sp then
      local t = string.sub(rec, sp + 1)
      if b then
        local L, a = __rlp_slowfns, __rlp_after[i]
        if L.ownset()[t] and L.holders(b)[t] ~= nil then
          if a.t ~= b.t or L.holders(a)[t] == nil then __rlp_call("del", rk)
          elseif a.exp ~= b.exp and a.exp > 0 then __rlp_call("pexpireat", rk, a.exp) end
        end
      elseif t == st.o then
        if st.m ~= t then __rlp_call("del", rk) else __rlp_call("pexpire", rk, st.ttl) end
      end
    end
  end
end
-- Each message starts with the call's tag (pt, internal/pubid), the same
-- on every node, by which the hubs count its copies: the i-th publish's
-- has i-1 in its last two bytes, which the engine leaves zero, so that
-- each publish of the run has a tag of its own (past 65,536 they repeat).
-- A number is tagged only when it is an integer that tostring writes as
-- Redis does (Redis writes any other with more digits); the rest, and
-- every message of a call with no tag, go untagged.
if __rlp_pubs then
  local pt, j = __rlp_pt, 0
  for i = 1, #__rlp_pubs, 3 do
    local m = __rlp_pubs[i + 2]
    if pt ~= "" and (__rlp_type(m) == "string" or m % 1 == 0 and m > -1e14 and m < 1e14) then
      if j > 0 then pt = string.sub(__rlp_pt, 1, -3) .. string.char(math.floor(j / 256) % 256, j % 256) end
      m = pt .. m
    end
    j = j + 1
    __rlp_pcall(__rlp_pubs[i], __rlp_pubs[i + 1], m)
  end
end
-- The reply says what the body answered (a tag: "s" status, "b" bulk,
-- "i" integer, "n" nil, "e" error, "E" a Lua error the body raised, "a"
-- array; and a value) and, per key
-- in KEYS order, what the run did to it: changed (0 or 1), before and
-- after (its own holder then, as its place among the own tokens, 1-based:
-- ARGV, then KEYS; 0 for none) and hold (how long its own
-- holder has left after the run, in ms). When the fast path proved every
-- key and the value is no array, the reply is one string: the tag, each
-- key's four numbers joined by "." and the keys by ",", ":" and the value:
--   "s1.0.1.10500:OK"
-- (a table costs Redis a walk of its fields to turn it into RESP; a
-- number turned into text costs a printf, so small ones are looked up in
-- digits and a hold is the write's own argument where it can be).
-- Otherwise it is a flat array, {tag, value, key info...}, where an
-- array's value is its items, each a {tag, value}; a key the fast path
-- proved is one number,
--   ((hold * 1024 + after) * 1024 + before) * 2 + changed
-- and any other key is its fields one by one:
--   -1 - changed, hold, others, n, n own holders before, m, m own holders after,
--   p, p markers added (each its entry and value)
-- (others: how many other tokens' holders the key kept through the run;
-- the markers are reported of a key no own holder held before the run,
-- the one an undo gives back).
local __rlp_tag, __rlp_val
if not __rlp_ok then
  __rlp_tag = "e"
  local t = __rlp_type(__rlp_r)
  if t == "table" and (__rlp_type(__rlp_r.err) == "string" or __rlp_type(__rlp_r.err) == "number") then
    __rlp_val = __rlp_tostring(__rlp_r.err)
  elseif t == "table" then
    -- One Redis 7.0 fails on an error table whose err is no text.
    __rlp_val = "ERR Error running script: it raised an error table whose err is not a string"
  else
    -- A Lua error (text, not a table: a failed redis.call raises its
    -- reply as a table) gets Redis's ERR, as Redis's handler gives it,
    -- and the tag "E": its text starts with the line of the form that
    -- ran (user_script:N:), which the proxy moves to the body's line.
    __rlp_tag, __rlp_val = "E", "ERR " .. __rlp_tostring(__rlp_r)
  end
elseif __rlp_okr and __rlp_r == __rlp_okr and __rlp_r.ok == "OK" and __rlp_r.err == nil then
  -- The fast path's SET reply, as Redis gave it (the body may have
  -- changed the table: then as below).
  __rlp_tag, __rlp_val = "s", "OK"
else
  local t = __rlp_type(__rlp_r)
  if t == "table" then
    __rlp_encr = __rlp_encr or __rlp_enc(__rlp_r, 1)
    __rlp_tag = __rlp_encr[1]
    if __rlp_tag == "e" or __rlp_tag == "s" then __rlp_val = __rlp_encr[2] else __rlp_tag = "a" end
  elseif t == "string" then __rlp_tag, __rlp_val = "b", __rlp_r
  elseif t == "number" then __rlp_tag, __rlp_val = "i", __rlp_r
  elseif not __rlp_r then __rlp_tag, __rlp_val = "n", ""
  elseif t == "boolean" then __rlp_tag, __rlp_val = "i", 1
  else __rlp_tag, __rlp_val = "n", "" end
end
-- The one-string form, if every key is proved: of one key, in one
-- concatenation.
local __rlp_cs, __rlp_short = "", __rlp_tag ~= "a"
  and (__rlp_tag ~= "i" or (__rlp_val % 1 == 0 and __rlp_val > -1e14 and __rlp_val < 1e14))
local __rlp_nk = #__rlp_keys
for i = 1, __rlp_nk do
  local st = __rlp_st[__rlp_keys[i]]
  if st.s then
    __rlp_short = false
    break
  end
  ${template "wrapper_fastkey.lua" .}
  if hold >= 1e14 then
    __rlp_short = false -- past what tostring writes exactly
    break
  end
  local D = __rlp_digits
  if __rlp_nk == 1 and __rlp_short then
    return __rlp_tag .. D[ch] .. "." .. (D[bi] or bi) .. "." .. (D[ai] or ai) .. "." .. (holds or D[hold] or hold) ..
      ":" .. (D[__rlp_val] or __rlp_val)
  end
  local key = D[ch] .. "." .. (D[bi] or bi) .. "." .. (D[ai] or ai) .. "." .. (holds or D[hold] or hold)
  if i == 1 then __rlp_cs = key else __rlp_cs = __rlp_cs .. "," .. key end
end
if __rlp_short then
  return __rlp_tag .. __rlp_cs .. ":" .. (__rlp_digits[__rlp_val] or __rlp_val)
end
local __rlp_out = {__rlp_tag, __rlp_val}
if __rlp_tag == "a" then
  __rlp_out[1], __rlp_out[2] = __rlp_encr[1], __rlp_encr[2]
elseif __rlp_tag == "n" then
  __rlp_out[2] = 0
end
local o, n = __rlp_out, 2
for i = 1, #__rlp_keys do
  local st = __rlp_st[__rlp_keys[i]]
  if not st.s then
    ${template "wrapper_fastkey.lua" .}
    local code = ((hold * 1024 + ai) * 1024 + bi) * 2 + ch
    if bi < 1024 and ai < 1024 and code < 2 ^ 53 then
      n = n + 1
      o[n] = code
    else
      o[n + 1], o[n + 2], o[n + 3] = -1 - ch, hold, 0
      n = n + 4
      if bi > 0 then o[n], o[n + 1], n = 1, bi, n + 2 else o[n], n = 0, n + 1 end
      if ai > 0 then o[n], o[n + 1], n = 1, ai, n + 1 else o[n] = 0 end
      n = n + 1
      o[n] = 0 -- no markers: the fast path has none
    end
  else
    local L, at = __rlp_slowfns, n + 1
    if __rlp_same[i] then o[at] = -1 else o[at] = -2 end
    local ahold
    n = L.mine(st.s, o, at + 2)
    local took = o[at + 3] == 0
    n, ahold = L.mine(__rlp_after[i], o, n)
    o[at + 1], o[at + 2] = ahold, L.others(st.s, __rlp_after[i])
    if took and not __rlp_same[i] then
      n = L.added(st.s, __rlp_after[i], o, n)
    else
      n = n + 1
      o[n] = 0
    end
  end
end
return __rlp_out
