-- own returns v's place among the own tokens (the call's ARGV, then its
-- KEYS), or nil: a string key asks a few times, so no set is built. A
-- constant of the script is never own: any script may contain it.
local function __rlp_own(v)
  for i = 1, __rlp_nargv do
    if __rlp_argv[i] == v then return i end
  end
  return nil
end
-- The hold table: the types of key that hold a lock, and what holds it.
-- A holder is an entry of the key: a string's value, a hash's field, a
-- sorted set's member. A string's and a hash's holders share the key's
-- expiry (shared); a sorted-set member's score is its own expiry in ms
-- since the epoch (scored), and it holds while that is in the future. A
-- holder is own when it is one of the call's ARGV or KEYS, a marker when
-- it is a constant of the script (Symfony's "__write__", the "1" of its
-- TIME probe, Redisson's unlock latch: no one's hold, see judge), and
-- another token's otherwise. limit bounds what a snapshot reads (a
-- string's bytes, a hash's fields, a sorted set's members): a write to a
-- larger key is refused before it runs. A key of any other type holds no
-- lock, and a write to one is refused before it runs. marks are entries
-- that are markers whatever the script: Redisson's read-write lock keeps
-- its mode in its hash (field "mode", "write" or "read") beside the
-- holders, so its watchdog, which names no "mode", may renew it.
local __rlp_holds = {
  string = {shared = true, size = "strlen", limit = ${.MaxBytes}},
  hash = {shared = true, size = "hlen", limit = ${.MaxEntries}, marks = {mode = {write = true, read = true}}},
  zset = {scored = true, size = "zcard", limit = ${.MaxEntries}},
}
-- A marker string that expires within this many ms (Symfony's SET ... PX 1
-- probe) holds nothing.
local __rlp_atonce = 2
-- The slow path's functions, made on its first use: a closure built on
-- every run costs, and a run the fast path proves needs none of them.
local function __rlp_slow()
  if __rlp_slowfns then return __rlp_slowfns end
  local L, nowv, ownv, litv = {}, nil, nil, nil
  -- ownset is own as a table, for the loops over hash fields and members.
  function L.ownset()
    if not ownv then
      ownv = {}
      for i = __rlp_nargv, 1, -1 do ownv[__rlp_argv[i]] = i end
    end
    return ownv
  end
  -- lits are the script's constants, which it may write as markers.
  function L.lits()
    if not litv then
      litv = {}
      for _, l in ipairs(__rlp_lits) do litv[l] = true end
    end
    return litv
  end
  -- mark says whether holder m (entry v) of snapshot s is a marker: an
  -- entry of the hold table's marks, even if own, or a constant of the
  -- script that is not own. own is L.ownset().
  function L.mark(s, m, v, own)
    local mk = __rlp_holds[s.t] and __rlp_holds[s.t].marks
    if mk and mk[m] and mk[m][v] then return true end
    return not own[m] and L.lits()[m] == true
  end
  function L.now()
    if not nowv then
      local t = __rlp_call("time")
      nowv = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    return nowv
  end
  function L.snap(k, b)
    -- The absolute expiry (PTTL moves while the script runs); -2 is no key,
    -- which spares the other calls. A STRLEN that fails is a key of another
    -- type. After a run on a key that was missing (b), nothing compares the
    -- two expiries (the types differ, and no other token held it): PTTL
    -- alone spares the TIME call, and exp is left false.
    local s
    if b and b.t == "none" then
      local pttl = __rlp_call("pttl", k)
      s = {t = "none", exp = false, pttl = pttl}
      if pttl == -2 then s.exp = -2; return s end
    else
      local exp = __rlp_call("pexpiretime", k)
      s = {t = "none", exp = exp, pttl = exp}
      if exp == -2 then return s end
      if exp > 0 then s.pttl = exp - L.now() end
    end
    local n = __rlp_pcall("strlen", k)
    if __rlp_type(n) == "number" then s.t = "string" else s.t = __rlp_call("type", k)["ok"] end
    local h = __rlp_holds[s.t]
    if not h then return s end
    if s.t ~= "string" then n = __rlp_call(h.size, k) end
    if n > h.limit then
      s.big = n -- not read: judged and restored without its entries
      return s
    end
    if s.t == "string" then s.v = __rlp_call("get", k)
    elseif s.t == "hash" then s.v = __rlp_call("hgetall", k)
    else s.v = __rlp_call("zrange", k, 0, -1, "WITHSCORES") end
    return s
  end
  -- big says why a snapshot is too large to keep, or nil.
  function L.big(s)
    if not s.big then return nil end
    local h = __rlp_holds[s.t]
    return "a " .. s.t .. " key of " .. s.big .. " " .. (s.t == "string" and "bytes" or "entries") ..
      " (the wrapper snapshots at most " .. h.limit .. ")"
  end
  function L.holders(s)
    if s.h then return s.h end
    local h = {}
    if s.t == "string" then h[s.v] = ""
    elseif s.t == "hash" or s.t == "zset" then
      for i = 1, #s.v, 2 do h[s.v[i]] = s.v[i + 1] end
    end
    s.h = h
    return h
  end
  function L.same(b, a)
    if b.t ~= a.t or b.exp ~= a.exp or b.big or a.big then return false end
    if b.t ~= "hash" and b.t ~= "zset" then return b.v == a.v end
    if #b.v ~= #a.v then return false end
    local ha = L.holders(a)
    for m, v in pairs(L.holders(b)) do
      if ha[m] ~= v then return false end
    end
    return true
  end
  -- valid says whether holder m (entry v) of snapshot s still holds: a
  -- sorted-set member while its score is in the future, a marker string
  -- unless it expires at once, any other while the key lives.
  function L.valid(s, m, v)
    if __rlp_holds[s.t].scored then return tonumber(v) > L.now() end
    return s.t ~= "string" or s.pttl < 0 or s.pttl > __rlp_atonce or L.ownset()[m] or not L.lits()[m]
  end
  -- judge says why the change from b to a is not a lock owner's, or nil.
  -- Its second result is true when the run wrote a constant as a string
  -- key's value that outlives the run (Redisson's unlock latch): allowed
  -- only beside a change to an own hold on another key of the run.
  function L.judge(b, a)
    local tb, ta = __rlp_holds[b.t], __rlp_holds[a.t]
    if b.t ~= "none" and not tb then return "it changes a " .. b.t .. " key" end
    if a.t ~= "none" and not ta then return "it turns a key into a " .. a.t end
    if b.t ~= "none" and a.t ~= "none" and b.t ~= a.t then
      return "it turns a " .. b.t .. " key into a " .. a.t
    end
    if a.t ~= "none" and a.pttl < 0 then return "it leaves a key without an expiry" end
    if a.t ~= "none" and a.pttl > ${.MaxTTL} then return "it leaves a key with an expiry over max_ttl" end
    if a.big then return "it leaves " .. L.big(a) end
    local own = L.ownset()
    local hb, ha = L.holders(b), L.holders(a)
    -- Who held the key before: own holders, other tokens' and markers.
    -- Markers are the holders' beside them: another token's when one
    -- holds the key, no one's (kept as any hold) when no token does. A
    -- key held so is foreign: the run may not change what holds it.
    local owned, others, marked, latest = false, false, false, 0
    for m, v in pairs(hb) do
      if L.valid(b, m, v) then
        local mk = L.mark(b, m, v, own)
        if own[m] and not mk then owned = true
        else
          if mk then marked = true else others = true end
          if tb.scored and tonumber(v) > latest then latest = tonumber(v) end
        end
      end
    end
    local foreign = others or (marked and not owned)
    for m, v in pairs(hb) do
      local mk = L.mark(b, m, v, own)
      if (mk or not own[m]) and ha[m] ~= v and (foreign or not mk) and L.valid(b, m, v) then
        return "it removes or overwrites another token's hold"
      end
    end
    if foreign and tb.shared and not L.same(b, a) then
      -- Holders that share the key's expiry: any change to the key is a
      -- change to another token's hold.
      if a.exp ~= b.exp then return "it changes the expiry of another token's hold" end
      return "it adds to a key another token holds"
    end
    if foreign and tb.scored and (a.t == "none" or a.pttl < latest - L.now()) then
      return "it cuts short another token's hold"
    end
    -- What the run wrote: own holders (a member's score an expiry within
    -- max_ttl), and markers beside an own hold that no other token shares
    -- (a member's no later than the last own one's), or a string's.
    local ownAfter, lastOwn = false, 0
    for m, v in pairs(ha) do
      if own[m] and not L.mark(a, m, v, own) and L.valid(a, m, v) then
        ownAfter = true
        if ta.scored and tonumber(v) > lastOwn then lastOwn = tonumber(v) end
      end
    end
    local latch = false
    for m, v in pairs(ha) do
      if hb[m] ~= v then
        local mk = L.mark(a, m, v, own)
        if own[m] and not mk then
          if ta.scored and not (tonumber(v) > L.now() and tonumber(v) <= L.now() + ${.MaxTTL}) then
            return "it scores a sorted-set member by what is not its expiry (a time in ms in the future, within max_ttl)"
          end
        elseif not mk then
          return "it writes a value that is none of its arguments"
        elseif a.t == "string" then
          if owned then return "it writes a constant over an own hold (a constant is not a token)" end
          latch = a.pttl > __rlp_atonce
        elseif foreign or not ownAfter or (ta.scored and tonumber(v) > lastOwn) then
          return "it writes a constant where no own holder holds the key (a constant is not a token)"
        end
      end
    end
    return nil, latch
  end
  -- others counts the other tokens' holders that hold in both b and a,
  -- unchanged (markers are not counted).
  function L.others(b, a)
    if b.big or a.big or not __rlp_holds[b.t] or b.t ~= a.t then return 0 end
    local own, ha, n = L.ownset(), L.holders(a), 0
    for m, v in pairs(L.holders(b)) do
      if not own[m] and not L.mark(b, m, v, own) and ha[m] == v and L.valid(b, m, v) and L.valid(a, m, v) then n = n + 1 end
    end
    return n
  end
  -- mine appends to out at n the count of s's own holders, then each
  -- one's place among the own tokens; it returns the new n and how long
  -- the own holders have left.
  function L.mine(s, out, n)
    local at, least = n + 1, 0
    n = at
    out[at] = 0
    if not __rlp_holds[s.t] or s.big then return n, least end
    local own = L.ownset()
    for m, v in pairs(L.holders(s)) do
      if own[m] and not L.mark(s, m, v, own) then
        local left = s.pttl
        if s.t == "zset" then
          local sc = tonumber(v) - L.now()
          if left < 0 or sc < left then left = sc end
        end
        if left ~= 0 and (left > 0 or s.t ~= "zset") then
          n = n + 1
          out[at], out[n] = out[at] + 1, own[m]
          if least == 0 or (left > 0 and left < least) then least = left end
        end
      end
    end
    return n, least
  end
  -- added appends to out at n the count of the markers a has with a
  -- value b did not give them (what the run added beside its holders),
  -- then each one's entry and value; it returns the new n. An undo of
  -- the run removes exactly these (undo_effect.lua): a marker is in no
  -- one's hold, so nothing else says it was the run's.
  function L.added(b, a, out, n)
    local at = n + 1
    n = at
    out[at] = 0
    if a.t ~= "hash" and a.t ~= "zset" or a.big then return n end
    local own, hb = L.ownset(), L.holders(b)
    for m, v in pairs(L.holders(a)) do
      if hb[m] ~= v and L.mark(a, m, v, own) then
        out[at], out[n + 1], out[n + 2], n = out[at] + 1, m, v, n + 2
      end
    end
    return n
  end
  -- keysok checks a command's arguments: each a key (kinds 2 and 4)
  -- that is one of KEYS, or SELECT's database 0.
  function L.keysok(c, kind, ...)
    local n = __rlp_select("#", ...)
    if kind == 5 then
      if n == 1 and __rlp_tostring((...)) == "0" then return true end
      __rlp_refused = "SELECT of a database other than 0"
      return false
    end
    for i = 1, n do
      if not __rlp_st[(__rlp_select(i, ...))] then
        __rlp_refused = "a key argument of " .. string.upper(c) .. " is not one of KEYS"
        return false
      end
    end
    return true
  end
  -- toslow puts key k on the slow path before a write the fast path
  -- cannot prove: its state before the run is snapshot now or, after
  -- fast writes, made from what they proved. It returns false, the run
  -- refused, for a key that holds no lock or is too large to snapshot:
  -- the write does not run.
  function L.toslow(k)
    local st = __rlp_st[k]
    if st.s then return true end
    if not st.ttl then
      local s = L.snap(k)
      if s.t ~= "none" and not __rlp_holds[s.t] then
        __rlp_refused = "it changes a " .. s.t .. " key"
        return false
      elseif s.big then
        __rlp_refused = "it writes to " .. L.big(s)
        return false
      end
      st.s = s
    elseif st.o then
      local pttl = st.oe
      if pttl > 0 then pttl = pttl - L.now() end
      st.s = {t = "string", v = st.o, exp = st.oe, pttl = pttl}
    else
      st.s = {t = "none", exp = -2, pttl = -2}
    end
    st.m = nil
    return true
  end
  __rlp_slowfns = L
  return L
end
