package quorum

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The wrapper runs a client's script on one node with its effect watched.
// A guarded redis table refuses any command outside the allow-list, any
// key argument that is not one of KEYS, and SELECT of a database other
// than 0. Each write to a key is judged, atomically with the body, in one
// of two ways:
//
//   - the fast path proves it is a lock owner's from what the run already
//     knows (the body's own GET of the key, or the fast path's earlier
//     writes) and the write's own reply: SET k v NX PX t with v own and
//     t <= max_ttl took a free key when it answers OK; SET k v PX t on a
//     key seen free or holding an own value, PEXPIRE/EXPIRE and DEL/UNLINK
//     on a key seen holding an own value, are an owner's take, extend or
//     release. No snapshot is taken; one PEXPIRETIME keeps, before an own
//     value's first change, what a rollback would need.
//   - any other write (hashes, sorted sets, a write to a key the run has
//     not read, SET without PX, ...) first puts its key on the slow path:
//     the key is snapshot before the write (type, expiry, value, hash
//     fields or sorted-set members), again after the run, and the change
//     between the two is judged.
//
// A run that did what a lock owner may not do is rolled back, every key to
// what it held before the run, in the same run. The wrapper returns
// {"refused", reason}, or the body's reply (a tag: "s" status, "b" bulk,
// "i" int, "n" nil, "e" error, "a" array; and a value) beside what the
// run did to each distinct key, in KEYS order: one string
//
//	tag numbers ":" value
//
// when every key was proved (each key one number, joined by ","), or
// else a flat array
//
//	{tag, value, key info, ...}
//
// where an array's value is its items, each {tag, value}, a proved key
// is its number and any other key is
//
//	-1 - changed, own hold's pttl after, others, n, n own holders before, m, m own holders after
//
// (wrapperTailSrc says how a number packs the same). A holder is a
// string's value, a hash's field or a sorted set's member (whose score is
// its expiry in ms, as Symfony writes it): the hold table (wrapperFnsSrc).
// It is own when it is one of the call's ARGV or KEYS, never for being a
// constant of the script, and is sent as its place among them. PUBLISH
// and SPUBLISH are held back until the run is judged, and sent only if it
// is not refused. The body's locals cannot reach the wrapper's: script
// admission refuses every name that is not the body's own local or an
// allowed global.
// wrapperStateSrc declares what a run knows. Its values are set by
// wrapperInitSrc at the start of each run.
const wrapperStateSrc = `local __rlp_call, __rlp_pcall, __rlp_tostring, __rlp_select, __rlp_type
-- st[k] is what the run knows of key k, one of KEYS (st[k] == nil: not
-- one of them). Its fields:
--   m  what the key holds now, as far as the run proved it: nil unknown,
--      false no key, or a string's value (mi: its place among the own
--      tokens, once known);
--   w  true once the fast path changed the key; then o is what it held
--      before (nil or false: no key; a string: that own value, oi its
--      place, oe its PEXPIRETIME) and, while m is a value, ttl is its PTTL
--      (ttls: as the write gave it, for the reply);
--   s  the snapshot taken before the key's first write the fast path
--      could not prove (the slow path): it is judged after the run.
-- ARGV and KEYS as the call gave them (argv): the body can change ARGV
-- (through a local alias, or table.insert), and the own tokens are the
-- call's. A token shown among KEYS proves ownership as one in ARGV does
-- (node-redis-warlock's touch passes it as KEYS[3]).
-- A library keeps these tables from run to run (a run starts by clearing
-- what the last one left), and pool's states, one per distinct key.
-- pubs are the run's PUBLISH and SPUBLISH calls, each its command,
-- channel and message: sent once the run is judged, if it is not
-- refused. The body's PUBLISH answers 0, since how many received it is
-- known only once it is sent (and would count the proxies' connections
-- to the node, not clients).
-- lits are the body's constants, which it may write as markers.
local __rlp_keys, __rlp_st, __rlp_argv, __rlp_pool, __rlp_nargv, __rlp_refused, __rlp_slowfns, __rlp_pubs, __rlp_lits = {}, {}, {}, {}, 0
-- digits are the small numbers as text.
local __rlp_digits = {[0] = "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15"}
`

// wrapperInitSrc starts a run (__RLP_REDIS: the real redis table;
// __RLP_FIRSTRUN: what the form does on its first run only).
const wrapperInitSrc = `if not __rlp_call then
  __rlp_call, __rlp_pcall, __rlp_tostring, __rlp_select, __rlp_type = __RLP_REDIS.call, __RLP_REDIS.pcall, tostring, select, type
  __RLP_FIRSTRUN
end
__rlp_refused, __rlp_slowfns, __rlp_pubs = false, nil, nil
if __rlp_nargv > 64 then
  -- A large run's tables are not kept.
  __rlp_keys, __rlp_st, __rlp_argv = {}, {}, {}
else
  for i = #__rlp_keys, 1, -1 do __rlp_st[__rlp_keys[i]], __rlp_keys[i] = nil, nil end
end
local __rlp_n, __rlp_last = #ARGV, __rlp_nargv
for i = 1, __rlp_n do __rlp_argv[i] = ARGV[i] end
for i = 1, #KEYS do
  local k = KEYS[i]
  __rlp_argv[__rlp_n + i] = k
  if not __rlp_st[k] then
    local j = #__rlp_keys + 1
    local st = __rlp_pool[j]
    if st then
      st.m, st.mi, st.w, st.o, st.oi, st.oe, st.ttl, st.ttls, st.s = nil, nil, nil, nil, nil, nil, nil, nil, nil
    else
      -- The fields named here get their room now, not by a rehash each.
      st = {m = nil, mi = nil, w = nil, o = nil, oi = nil, oe = nil, ttl = nil, ttls = nil, s = nil}
      if j <= 8 then __rlp_pool[j] = st end
    end
    __rlp_keys[j], __rlp_st[k] = k, st
  end
end
__rlp_nargv = __rlp_n + #KEYS
for i = __rlp_nargv + 1, __rlp_last do __rlp_argv[i] = nil end
`

// wrapperFnsSrc are the wrapper's functions.
const wrapperFnsSrc = `-- own returns v's place among the own tokens (the call's ARGV, then its
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
-- lock, and a write to one is refused before it runs.
local __rlp_holds = {
  string = {shared = true, size = "strlen", limit = __RLP_MAXBYTES},
  hash = {shared = true, size = "hlen", limit = __RLP_MAXENTRIES},
  zset = {scored = true, size = "zcard", limit = __RLP_MAXENTRIES},
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
    if a.t ~= "none" and a.pttl > __RLP_MAXTTL then return "it leaves a key with an expiry over max_ttl" end
    if a.big then return "it leaves " .. L.big(a) end
    local own, lits = L.ownset(), L.lits()
    local hb, ha = L.holders(b), L.holders(a)
    -- Who held the key before: own holders, other tokens' and markers.
    -- Markers are the holders' beside them: another token's when one
    -- holds the key, no one's (kept as any hold) when no token does. A
    -- key held so is foreign: the run may not change what holds it.
    local owned, others, marked, latest = false, false, false, 0
    for m, v in pairs(hb) do
      if L.valid(b, m, v) then
        if own[m] then owned = true
        else
          if lits[m] then marked = true else others = true end
          if tb.scored and tonumber(v) > latest then latest = tonumber(v) end
        end
      end
    end
    local foreign = others or (marked and not owned)
    for m, v in pairs(hb) do
      if not own[m] and ha[m] ~= v and (foreign or not lits[m]) and L.valid(b, m, v) then
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
      if own[m] and L.valid(a, m, v) then
        ownAfter = true
        if ta.scored and tonumber(v) > lastOwn then lastOwn = tonumber(v) end
      end
    end
    local latch = false
    for m, v in pairs(ha) do
      if hb[m] ~= v then
        if own[m] then
          if ta.scored and not (tonumber(v) > L.now() and tonumber(v) <= L.now() + __RLP_MAXTTL) then
            return "it scores a sorted-set member by what is not its expiry (a time in ms in the future, within max_ttl)"
          end
        elseif not lits[m] then
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
    local own, lits, ha, n = L.ownset(), L.lits(), L.holders(a), 0
    for m, v in pairs(L.holders(b)) do
      if not own[m] and not lits[m] and ha[m] == v and L.valid(b, m, v) and L.valid(a, m, v) then n = n + 1 end
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
      if own[m] then
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
    if not st.w then
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
`

// wrapperRedisSrc is the guarded redis table's own members: call and
// pcall; any other member is the real table's.
const wrapperRedisSrc = `  call = function(cmd, ...)
__RLP_GUARD_CALL
  end,
  pcall = function(cmd, ...)
__RLP_GUARD_PCALL
  end,
`

// wrapperGuard is the body of the guarded redis.call and redis.pcall
// (__RLP_PC the real one, __RLP_REFUSE what a refusal does): the same
// code twice, since one more call level with the arguments costs a run.
const wrapperGuard = `    -- The command's kind: 0 no key, 1 reads its first argument's key,
    -- 2 reads every argument's, 3 writes its first argument's key, 4
    -- writes every argument's, 5 SELECT. A chain of comparisons: a table
    -- would be built anew on every run.
    local c, kind = cmd
    if not __rlp_refused then
      for _ = 1, 2 do
        __RLP_KINDCHAIN
        if kind then break end
        c = string.lower(__rlp_tostring(cmd))
      end
      if not kind then __rlp_refused = string.upper(c) .. " is not a lock command" end
    end
    local k, st
    if kind == 1 or kind == 3 then
      k = ...
      st = __rlp_st[k]
      if st == nil then
        -- Keys are strings: Redis would turn a number into a key of
        -- other digits than tostring gives. No argument at all is
        -- Redis's error to give.
        if __rlp_select("#", ...) == 0 then return __RLP_PC(cmd, ...) end
        __rlp_refused = "a key argument of " .. string.upper(c) .. " is not one of KEYS"
      elseif kind == 1 then
        local r = __RLP_PC(cmd, ...)
        if c == "get" and not st.s then
          if r == false or r == nil then st.m = false
          elseif __rlp_type(r) == "string" then st.m = r
          else st.m = nil end
          st.mi = nil
        end
        return r
      end
    elseif kind == 0 then
      if (c == "publish" or c == "spublish") and __rlp_select("#", ...) == 2 then
        -- Queued, and sent after the run only if it is not refused: one
        -- Redis publishes only what ran. The body gets 0 (see pubs).
        local ch, msg = ...
        local tc, tm = __rlp_type(ch), __rlp_type(msg)
        if (tc == "string" or tc == "number") and (tm == "string" or tm == "number") then
          local q = __rlp_pubs or {}
          __rlp_pubs = q
          q[#q + 1], q[#q + 2], q[#q + 3] = c, ch, msg
          return 0
        end
      end
      return __RLP_PC(cmd, ...)
    elseif kind and __rlp_slow().keysok(c, kind, ...) then
      if kind ~= 4 then return __RLP_PC(cmd, ...) end
      if __rlp_select("#", ...) == 1 then
        k = ...
        st = __rlp_st[k]
      else
        for i = 1, __rlp_select("#", ...) do
          if not __rlp_slow().toslow((__rlp_select(i, ...))) then break end
        end
        if not __rlp_refused then return __RLP_PC(cmd, ...) end
      end
    end
    if st then
      -- A write to one key k, not yet on the slow path: the fast path
      -- runs one it proves a lock owner's as it is, and its reply tells
      -- what it did; any other first puts k on the slow path. It proves,
      -- for a string:
      --   SET k v NX PX t, v own, 0 < t <= max_ttl: OK took a free key;
      --   SET k v PX t on a key the run saw free or holding an own value;
      --   PEXPIRE k t / EXPIRE k s, DEL k / UNLINK k on a key the run saw
      --   holding an own value (or free: then they do nothing).
      -- What the run saw (m) is its last GET's reply or the fast path's
      -- last write; mi is m's place among the own tokens, once known. A
      -- t that is not an integer needs no test: Redis refuses it.
      if st.s then return __RLP_PC(cmd, ...) end
      local m = st.m
      local n = __rlp_select("#", ...)
      local t, ts, mi
      if c == "set" then
        local _, v, o1, o2, o3 = ...
        local nx, vi
        if n == 5 and (o1 == "NX" or o1 == "nx") and (o2 == "PX" or o2 == "px") then nx, t = true, o3
        elseif n == 5 and (o1 == "PX" or o1 == "px") and (o3 == "NX" or o3 == "nx") then nx, t = true, o2
        elseif n == 4 and (o1 == "PX" or o1 == "px") then nx, t = false, o2 end
        ts = t
        if t ~= nil then t = tonumber(t) end
        if t and t > 0 and t <= __RLP_MAXTTL then vi = __rlp_own(v) end
        if vi and not nx and m then mi = st.mi or __rlp_own(m) end
        if vi and (nx or m == false or mi) then
          if not nx and not st.w then
            st.o, st.oi = m, mi
            if m then st.oe = __rlp_call("pexpiretime", k) end
          end
          local r = __RLP_PC(cmd, ...)
          if __rlp_type(r) == "table" and r.ok then
            -- OK to NX: the key was free (st.o is nil: none).
            st.w, st.m, st.mi, st.ttl, st.ttls = true, v, vi, t, ts
          end
          return r
        end
      elseif m ~= nil and (c == "pexpire" or c == "expire" or c == "del" or c == "unlink") then
        if m == false then return __RLP_PC(cmd, ...) end -- no key: nothing to do
        if c == "del" or c == "unlink" then t = 0
        elseif n == 2 then
          ts = __rlp_select(2, ...)
          t = tonumber(ts)
          if t and c == "expire" then t, ts = t * 1000, nil end
          if not (t and t > 0 and t <= __RLP_MAXTTL) then t = nil end
        end
        if t then mi = st.mi or __rlp_own(m) end
        if mi then
          if not st.w then
            st.o, st.oi, st.oe = m, mi, __rlp_call("pexpiretime", k)
          end
          local r = __RLP_PC(cmd, ...)
          if r == 1 then
            st.w, st.mi = true, mi
            if t == 0 then st.m, st.mi = false, nil else st.ttl, st.ttls = t, ts end
          end
          return r
        end
      end
      if __rlp_slow().toslow(k) then return __RLP_PC(cmd, ...) end
    end
    __RLP_REFUSE`

var wrapperTail = strings.ReplaceAll(wrapperTailSrc, "__RLP_FASTKEY", wrapperFastKey)

var wrapperRedis = strings.NewReplacer(
	"__RLP_GUARD_CALL", strings.NewReplacer(
		"__RLP_PC", "__rlp_call",
		"__RLP_REFUSE", `error({err = "ERR script refused: " .. __rlp_refused})`,
	).Replace(wrapperGuard),
	"__RLP_GUARD_PCALL", strings.NewReplacer(
		"__RLP_PC", "__rlp_pcall",
		"__RLP_REFUSE", `do return {err = "ERR script refused: " .. __rlp_refused} end`,
	).Replace(wrapperGuard),
).Replace(wrapperRedisSrc)

// The two forms of a wrapped script, around the same parts. As a script
// (EVAL) every run builds the wrapper's functions anew. As a library
// (FUNCTION LOAD once, then FCALL) they are built once, when a node loads
// it, and a run only sets the state they share.
var (
	evalHead = wrapperStateSrc + "__rlp_lits = __RLP_LITERALS\n" +
		strings.NewReplacer("__RLP_REDIS", "redis", "__RLP_FIRSTRUN", "").Replace(wrapperInitSrc) +
		wrapperFnsSrc + "local __rlp_real = redis\nlocal redis = setmetatable({\n" + wrapperRedis +
		"}, {__index = __rlp_real})\nlocal function __rlp_body(__RLP_BODYPARAMS)\n"
	evalTail = "\nend\n" + wrapperTail

	// The library is one for every body: it reads the real redis table
	// when it runs (__rlp_G), as the one it is loaded with has no call.
	// Functions have no redis.replicate_commands, a no-op for scripts
	// since Redis 7.0.
	libSrc = "#!lua name=__RLP_NAME\nlocal __rlp_reg = redis.register_function\n" +
		"local function __rlp_G() return redis end\nlocal KEYS, ARGV\n" +
		wrapperStateSrc + wrapperFnsSrc + "local redis = {\n" + wrapperRedis +
		"  replicate_commands = function() return true end,\n}\n" + wrapperBodiesSrc +
		"__rlp_reg(\"__RLP_NAME\", function(__rlp_k, __rlp_a)\n" +
		"local __rlp_body = __rlp_find(__rlp_a)\n" +
		"if type(__rlp_body) == \"table\" then return __rlp_body end\n" +
		"KEYS, ARGV = __rlp_k, __rlp_a\n" +
		"__rlp_cur.set(__rlp_k, __rlp_a)\n__rlp_lits = __rlp_cur.lits\n" +
		strings.NewReplacer("__RLP_REDIS", "__rlp_G()", "__RLP_FIRSTRUN", "setmetatable(redis, {__index = __rlp_G()})").Replace(wrapperInitSrc) +
		wrapperTail + "end)\n"
)

// wrapperBodiesSrc keeps the bodies the library has compiled, by the
// SHA-1 of their chunk (bodyChunk), as a node's Lua state keeps them
// between calls. A call's last argument is the chunk's SHA-1; or, when
// the node lacks it (first use, a flush, a restart, an eviction), "+"
// and the SHA-1 after the chunk itself, which it compiles and keeps. At
// most __RLP_MAXBODIES chunks, __RLP_MAXBODYBYTES bytes of text in all,
// are kept: a new one drops others to make room. __rlp_find takes the
// call's own arguments off ARGV and returns the body to run (and sets
// __rlp_cur), or the error reply to answer.
const wrapperBodiesSrc = `local __rlp_bodies, __rlp_nbodies, __rlp_bodybytes, __rlp_cur = {}, 0, 0, nil
-- loadstring is read when a chunk is compiled: a library is loaded
-- without it, and a server may have none (then the body runs as a script).
local function __rlp_loadstring() return loadstring end
local function __rlp_find(a)
  local n = #a
  local e = __rlp_bodies[a[n]]
  if e then
    a[n] = nil
  else
    local tag, src = a[n], a[n - 1]
    if n < 2 or type(tag) ~= "string" or type(src) ~= "string" or string.sub(tag, 1, 1) ~= "+" then
      return {err = "RLPNOBODY the node has not compiled this body"}
    end
    local sha = string.sub(tag, 2)
    if __rlp_G().sha1hex(src) ~= sha then return {err = "RLPNOBODY the body does not match its digest"} end
    e = __rlp_bodies[sha]
    if not e then
      local ok, load = pcall(__rlp_loadstring)
      if not ok or not load then return {err = "RLPNOCOMPILE the node's functions have no loadstring"} end
      local f, why = load(src, "@user_function")
      if not f then return {err = "RLPNOCOMPILE " .. tostring(why)} end
      local body, set, lits = f(redis)
      while __rlp_nbodies > 0 and (__rlp_nbodies >= __RLP_MAXBODIES or __rlp_bodybytes + #src > __RLP_MAXBODYBYTES) do
        local k, old = next(__rlp_bodies)
        __rlp_bodies[k], __rlp_nbodies, __rlp_bodybytes = nil, __rlp_nbodies - 1, __rlp_bodybytes - old.n
      end
      e = {body = body, set = set, lits = lits, n = #src}
      __rlp_bodies[sha], __rlp_nbodies, __rlp_bodybytes = e, __rlp_nbodies + 1, __rlp_bodybytes + #src
    end
    a[n], a[n - 1] = nil, nil
  end
  __rlp_cur = e
  return e.body
end
`

// wrapperFastKey is what the fast path proved of one key (st): changed
// (ch), how long its own holder has left (hold) and that holder's place
// among the own tokens before (bi) and after (ai), 0 for none: what it
// held before its first change and holds now, or an own value it only
// read, before and after.
const wrapperFastKey = `local bi, ai, hold, holds, ch = 0, 0, 0, nil, 0
  if st.w then
    ch, bi = 1, st.oi or 0
    if st.m then ai, hold, holds = st.mi or __rlp_own(st.m) or 0, st.ttl, st.ttls end
  elseif st.m then
    ai = st.mi or __rlp_own(st.m) or 0
    bi = ai
  end`

// wrapperTailSrc runs the body and answers.
const wrapperTailSrc = `local __rlp_ok, __rlp_r = pcall(__rlp_body)
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
    elseif st.w and st.oi then
      ownChange = true
    end
  end
  if latch and not ownChange and not __rlp_why then
    __rlp_why = "it writes a constant as a key's value (a constant is not a token)"
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
    elseif st.w then
      if st.o then __rlp_restore(k, {t = "string", v = st.o, exp = st.oe})
      else __rlp_call("del", k) end
    end
  end
  return {"refused", __rlp_why}
end
if __rlp_pubs then
  for i = 1, #__rlp_pubs, 3 do __rlp_pcall(__rlp_pubs[i], __rlp_pubs[i + 1], __rlp_pubs[i + 2]) end
end
-- The reply says what the body answered (a tag: "s" status, "b" bulk,
-- "i" integer, "n" nil, "e" error, "a" array; and a value) and, per key
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
--   -1 - changed, hold, others, n, n own holders before, m, m own holders after
-- (others: how many other tokens' holders the key kept through the run).
local __rlp_tag, __rlp_val
if not __rlp_ok then
  __rlp_tag = "e"
  if __rlp_type(__rlp_r) == "table" and __rlp_r.err then __rlp_val = __rlp_tostring(__rlp_r.err)
  else
    -- A failed redis.call reaches pcall as its reply's text, which has
    -- its code ("ERR ...", "WRONGTYPE ..."); a Lua error gets Redis's ERR.
    __rlp_val = __rlp_tostring(__rlp_r)
    if not string.find(__rlp_val, "^%u%u+ ") then __rlp_val = "ERR " .. __rlp_val end
  end
else
  local t = __rlp_type(__rlp_r)
  if t == "table" and __rlp_r.ok then __rlp_tag, __rlp_val = "s", __rlp_tostring(__rlp_r.ok)
  elseif t == "table" and __rlp_r.err then __rlp_tag, __rlp_val = "e", __rlp_tostring(__rlp_r.err)
  elseif t == "string" then __rlp_tag, __rlp_val = "b", __rlp_r
  elseif t == "number" then __rlp_tag, __rlp_val = "i", __rlp_r
  elseif not __rlp_r then __rlp_tag, __rlp_val = "n", ""
  elseif t == "boolean" then __rlp_tag, __rlp_val = "i", 1
  else __rlp_tag = "a" end
end
-- The one-string form, if every key is proved.
local __rlp_cs, __rlp_short = "", __rlp_tag ~= "a"
  and (__rlp_tag ~= "i" or (__rlp_val % 1 == 0 and __rlp_val > -1e14 and __rlp_val < 1e14))
for i = 1, #__rlp_keys do
  local st = __rlp_st[__rlp_keys[i]]
  if st.s then
    __rlp_short = false
    break
  end
  __RLP_FASTKEY
  if hold >= 1e14 then
    __rlp_short = false -- past what tostring writes exactly
    break
  end
  local D = __rlp_digits
  local key = D[ch] .. "." .. (D[bi] or bi) .. "." .. (D[ai] or ai) .. "." .. (holds or D[hold] or hold)
  if i == 1 then __rlp_cs = key else __rlp_cs = __rlp_cs .. "," .. key end
end
if __rlp_short then
  return __rlp_tag .. __rlp_cs .. ":" .. (__rlp_digits[__rlp_val] or __rlp_val)
end
local __rlp_out = {__rlp_tag, __rlp_val}
if __rlp_tag == "a" then
  local function enc(v)
    local t = __rlp_type(v)
    if t == "table" then
      if v.err then return {"e", __rlp_tostring(v.err)} end
      if v.ok then return {"s", __rlp_tostring(v.ok)} end
      local out = {}
      local i = 1
      while v[i] ~= nil do
        out[i] = enc(v[i])
        i = i + 1
      end
      return {"a", out}
    elseif t == "number" then return {"i", v}
    elseif t == "string" then return {"b", v}
    elseif t == "boolean" and v then return {"i", 1} end
    return {"n", 0}
  end
  __rlp_out[2] = enc(__rlp_r)[2]
elseif __rlp_tag == "n" then
  __rlp_out[2] = 0
end
local o, n = __rlp_out, 2
for i = 1, #__rlp_keys do
  local st = __rlp_st[__rlp_keys[i]]
  if not st.s then
    __RLP_FASTKEY
    local code = ((hold * 1024 + ai) * 1024 + bi) * 2 + ch
    if bi < 1024 and ai < 1024 and code < 2 ^ 53 then
      n = n + 1
      o[n] = code
    else
      o[n + 1], o[n + 2], o[n + 3] = -1 - ch, hold, 0
      n = n + 4
      if bi > 0 then o[n], o[n + 1], n = 1, bi, n + 2 else o[n], n = 0, n + 1 end
      if ai > 0 then o[n], o[n + 1], n = 1, ai, n + 1 else o[n] = 0 end
    end
  else
    local L, at = __rlp_slowfns, n + 1
    if __rlp_same[i] then o[at] = -1 else o[at] = -2 end
    local ahold
    n = L.mine(st.s, o, at + 2)
    n, ahold = L.mine(__rlp_after[i], o, n)
    o[at + 1], o[at + 2] = ahold, L.others(st.s, __rlp_after[i])
  end
end
return __rlp_out
`

// undoEffectScript removes from every key each holder that is one of ARGV
// (the tokens an effect-served acquire wrote): a string holding one is
// deleted, a hash field or sorted-set member is removed (and the key with
// its last one). It returns how many it removed.
var undoEffectScript = newScript(`
local own = {}
for _, t in ipairs(ARGV) do own[t] = true end
local n = 0
for _, key in ipairs(KEYS) do
  local t = redis.call("type", key)["ok"]
  if t == "string" then
    if own[redis.call("get", key)] then
      redis.call("del", key)
      n = n + 1
    end
  elseif t == "hash" then
    for _, m in ipairs(redis.call("hkeys", key)) do
      if own[m] then redis.call("hdel", key, m); n = n + 1 end
    end
  elseif t == "zset" then
    for _, m in ipairs(redis.call("zrange", key, 0, -1)) do
      if own[m] then redis.call("zrem", key, m); n = n + 1 end
    end
  end
end
return n
`)

// wrapped is a body in the wrapper, in both forms: a script, and a call
// of the library's one function fn that runs the body's chunk. evalHead
// counts the lines before the body's first in the script; the chunk
// starts on the body's first line (libHead 0).
type wrapped struct {
	eval, fn          string
	lib               libraryForm
	evalHead, libHead int
}

// libraryForm is what a node needs to run a body by a function: the
// library (one for every body the engine wraps) and the body's chunk,
// which the library compiles once and keeps (wrapperBodiesSrc).
type libraryForm struct {
	text, chunk string
}

// The library's bound on the bodies it keeps compiled, per node: the
// number of chunks and their text's bytes in all. A body's compiled
// functions cost the node's Lua a few times its text.
const (
	maxLibraryBodies    = 256
	maxLibraryBodyBytes = 1 << 20
)

// wrapBody builds the wrapper around body for the given allow-list,
// literals (the constants the body may write as markers, never as
// tokens) and max_ttl.
func wrapBody(body string, commands map[string]int, literals []string, maxTTL time.Duration) wrapped {
	var lits strings.Builder
	lits.WriteString("{")
	for _, l := range literals {
		lits.WriteString(luaQuote(l))
		lits.WriteString(", ")
	}
	lits.WriteString("}")
	// A body that never reads "..." runs in a function without it: Lua
	// 5.1 gives a vararg function that does not read it a local "arg"
	// table, built on every call and counted against the 200 locals of
	// the body, which Redis's main chunk does not have.
	params := "..."
	if !strings.Contains(body, "...") {
		params = ""
	}
	head := wrapperParts(commands, maxTTL, params, lits.String())
	eh := head.Replace(evalHead)
	fn, lib := wrapperLibrary(commands, maxTTL)
	// The chunk: on the body's first line, locals for what the library
	// gives the body (its KEYS and ARGV, set before each run, and the
	// guarded redis), then the body as a function; after it, the setter
	// and the literals.
	chunk := "local KEYS, ARGV, redis = nil, nil, ... return function(" + params + ") " + body +
		"\nend, function(k, a) KEYS, ARGV = k, a end, " + lits.String() + "\n"
	return wrapped{
		eval: eh + body + head.Replace(evalTail), fn: fn, lib: libraryForm{text: lib, chunk: chunk},
		evalHead: strings.Count(eh, "\n"),
	}
}

// wrapperLibrary is the library every body runs in, for this allow-list
// and max_ttl, and its function's name. It is named by what it holds:
// proxies that wrap alike share it, and any other library keeps its own
// name.
func wrapperLibrary(commands map[string]int, maxTTL time.Duration) (fn, lib string) {
	lib = wrapperParts(commands, maxTTL, "", "{}").Replace(libSrc)
	sum := sha1.Sum([]byte(lib))
	fn = "rlp_" + hex.EncodeToString(sum[:])
	return fn, strings.ReplaceAll(lib, "__RLP_NAME", fn)
}

// wrapperParts fills the wrapper's placeholders: the allow-list, max_ttl
// and the bounds, and a body's parameters and literals (the script form
// only).
func wrapperParts(commands map[string]int, maxTTL time.Duration, params, lits string) *strings.Replacer {
	// The allow-list as a chain of comparisons, the common names first,
	// each in lower and upper case (any other case is lowered, then
	// compared again).
	var kinds strings.Builder
	for i, name := range commandOrder(commands) {
		if i > 0 {
			kinds.WriteString("else")
		}
		fmt.Fprintf(&kinds, "if c == %s or c == %s then c, kind = %s, %d\n        ",
			luaQuote(name), luaQuote(strings.ToUpper(name)), luaQuote(name), commandKind(name, commands[name]))
	}
	if len(commands) > 0 {
		kinds.WriteString("end")
	}
	return strings.NewReplacer(
		"__RLP_BODYPARAMS", params,
		"__RLP_LITERALS", lits,
		"__RLP_MAXBYTES", strconv.Itoa(maxSnapshotBytes),
		"__RLP_MAXENTRIES", strconv.Itoa(maxSnapshotEntries),
		"__RLP_MAXBODIES", strconv.Itoa(maxLibraryBodies),
		"__RLP_MAXBODYBYTES", strconv.Itoa(maxLibraryBodyBytes),
		"__RLP_KINDCHAIN", kinds.String(),
		"__RLP_MAXTTL", strconv.FormatInt(maxTTL.Milliseconds(), 10),
	)
}

// A write the wrapper cannot prove is a lock owner's snapshots its key
// first (the slow path): a key larger than these (a string's bytes, a
// hash's fields or a sorted set's members) is refused before the write
// runs, rather than read whole into the node's Lua on every run.
const (
	maxSnapshotBytes   = 64 << 10
	maxSnapshotEntries = 10000
)

// readOnly are the allowed commands that change no key. Any other command
// with a key, one added to the allow-list included, is taken as a write.
var readOnly = map[string]bool{
	"get": true, "pttl": true, "ttl": true, "exists": true, "type": true,
	"hget": true, "hexists": true, "hlen": true,
	"zscore": true, "zcount": true, "zcard": true, "zrange": true, "zrevrange": true,
}

// commandKind is a command's kind as the wrapper's kind function returns
// it, from its key position (0 none, 1 first, 2 every argument).
func commandKind(name string, pos int) int {
	switch {
	case name == "select":
		return 5
	case pos == 0:
		return 0
	case readOnly[name]:
		return pos // 1 or 2
	}
	return pos + 2 // 3 or 4
}

// commandOrder is the allow-list with the names lock scripts use most
// first, then the others in order.
func commandOrder(commands map[string]int) []string {
	first := []string{"get", "set", "pexpire", "del", "exists", "hexists", "hincrby", "pttl", "unlink", "expire"}
	var out []string
	for _, name := range first {
		if _, ok := commands[name]; ok {
			out = append(out, name)
		}
	}
	for _, name := range sortedKeys(commands) {
		if !slices.Contains(first, name) {
			out = append(out, name)
		}
	}
	return out
}

// luaQuote writes s as a Lua string literal that any bytes survive.
func luaQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		default:
			// Three digits always, so a digit after it is not read into it.
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
