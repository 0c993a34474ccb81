package quorum

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The wrapper runs a client's script on one node with its effect watched.
// Atomically with the body it snapshots every key before and after; a
// guarded redis table refuses any command outside the allow-list, any key
// argument that is not one of KEYS, and SELECT of a database other than 0.
// A change that is not what a lock owner may do is rolled back from the
// snapshot in the same run. The wrapper returns
//
//	{"refused", reason}
//	{"ok", reply, key info, ...}
//
// where reply is the body's reply tagged by type ({"s", status},
// {"b", bulk}, {"i", int}, {"n"}, {"e", error}, {"a", item, ...}), and each
// key info (one per distinct key, in KEYS order, flat in the array) is
//
//	type before, pttl before, n, n own holders before,
//	type after, pttl after, m, m own holders after, changed, own hold's pttl after
//
// A holder is a string's value, a hash's field or a sorted set's member
// (whose score is its expiry in ms, as Symfony writes it); it is own when
// it is one of ARGV or KEYS or of the script's own constants. The body's locals
// cannot reach the wrapper's: script admission refuses every name that is
// not the body's own local or an allowed global.
const wrapperHead = `local __rlp_call, __rlp_tostring, __rlp_lower, __rlp_select = redis.call, tostring, string.lower, select
local __rlp_keys, __rlp_iskey = {}, {}
for _, k in ipairs(KEYS) do
  if not __rlp_iskey[k] then __rlp_keys[#__rlp_keys + 1] = k end
  __rlp_iskey[k] = true
end
-- ARGV and KEYS as the call gave them: the body can change ARGV (through
-- a local alias, or table.insert), and the own tokens are the call's. A
-- token shown among KEYS proves ownership as one in ARGV does
-- (node-redis-warlock's touch passes it as KEYS[3]).
local __rlp_argv = {}
for i = 1, #ARGV do __rlp_argv[i] = ARGV[i] end
for i = 1, #KEYS do __rlp_argv[#ARGV + i] = KEYS[i] end
-- isown tells whether v is one of them or of the literals, without a
-- set: a string key asks at most three times. ownset is the same as a
-- set, built on first use, for the loops over hash fields and members.
local function __rlp_isown(v)
  for i = 1, #__rlp_argv do
    if __rlp_argv[i] == v then return true end
  end
  return __RLP_LITCHAIN
end
local __rlp_ownv
local function __rlp_ownset()
  if not __rlp_ownv then
    __rlp_ownv = {}
    for _, v in ipairs(__rlp_argv) do __rlp_ownv[v] = true end
    for _, v in ipairs(__RLP_LITERALS) do __rlp_ownv[v] = true end
  end
  return __rlp_ownv
end
local __rlp_cmds = __RLP_COMMANDS
local __rlp_find, __rlp_pfind, __rlp_byte = string.match, string.find, string.byte
local __rlp_refused = false
local function __rlp_check(cmd, ...)
  if __rlp_refused then return __rlp_refused end
  local c = __rlp_lower(__rlp_tostring(cmd))
  -- A plain search for " name:"; the digit after it is the key position
  -- (48 is "0"). Only a name of letters may match.
  local at = __rlp_pfind(__rlp_cmds, " " .. c .. ":", 1, true)
  local n = __rlp_select("#", ...)
  local pos
  if at then pos = __rlp_byte(__rlp_cmds, at + #c + 2) - 48 end
  if pos == nil or __rlp_find(c, "^[a-z]+$") == nil then
    __rlp_refused = string.upper(c) .. " is not a lock command"
  elseif c == "select" and not (n == 1 and __rlp_tostring((...)) == "0") then
    __rlp_refused = "SELECT of a database other than 0"
  elseif pos == 1 and n > 0 then
    if not __rlp_iskey[__rlp_tostring((...))] then
      __rlp_refused = "a key argument of " .. string.upper(c) .. " is not one of KEYS"
    end
  elseif pos == 2 then
    for i = 1, n do
      if not __rlp_iskey[__rlp_tostring((__rlp_select(i, ...)))] then
        __rlp_refused = "a key argument of " .. string.upper(c) .. " is not one of KEYS"
        break
      end
    end
  end
  return __rlp_refused
end
local __rlp_real = redis
local redis = setmetatable({
  call = function(cmd, ...)
    local why = __rlp_check(cmd, ...)
    if why then error({err = "ERR script refused: " .. why}) end
    return __rlp_call(cmd, ...)
  end,
  pcall = function(cmd, ...)
    local why = __rlp_check(cmd, ...)
    if why then return {err = "ERR script refused: " .. why} end
    return __rlp_real.pcall(cmd, ...)
  end,
}, {__index = __rlp_real})
local __rlp_nowv
local function __rlp_now()
  if not __rlp_nowv then
    local t = __rlp_call("time")
    __rlp_nowv = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return __rlp_nowv
end
local function __rlp_snap(k, b)
  -- The absolute expiry (PTTL moves while the script runs); -2 is no key,
  -- which spares the other calls. A GET that fails is a key of another type.
  -- After a run on a key that was missing (b), nothing compares the two
  -- expiries (the types differ, and no other token held it): PTTL alone
  -- spares the TIME call, and exp is left false.
  local s
  if b and b.t == "none" then
    local pttl = __rlp_call("pttl", k)
    s = {t = "none", exp = false, pttl = pttl}
    if pttl == -2 then s.exp = -2; return s end
  else
    local exp = __rlp_call("pexpiretime", k)
    s = {t = "none", exp = exp, pttl = exp}
    if exp == -2 then return s end
    if exp > 0 then s.pttl = exp - __rlp_now() end
  end
  local v = __rlp_real.pcall("get", k)
  if type(v) ~= "table" then
    s.t, s.v = "string", v
    return s
  end
  s.t = __rlp_call("type", k)["ok"]
  if s.t == "hash" then s.v = __rlp_call("hgetall", k)
  elseif s.t == "zset" then s.v = __rlp_call("zrange", k, 0, -1, "WITHSCORES")
  else s.v = __rlp_call("dump", k) end
  return s
end
local function __rlp_holders(s)
  if s.h then return s.h end
  local h = {}
  if s.t == "string" then h[s.v] = ""
  elseif s.t == "hash" or s.t == "zset" then
    for i = 1, #s.v, 2 do h[s.v[i]] = s.v[i + 1] end
  end
  s.h = h
  return h
end
local function __rlp_same(b, a)
  if b.t ~= a.t or b.exp ~= a.exp then return false end
  if b.t ~= "hash" and b.t ~= "zset" then return b.v == a.v end
  if #b.v ~= #a.v then return false end
  local ha = __rlp_holders(a)
  for m, v in pairs(__rlp_holders(b)) do
    if ha[m] ~= v then return false end
  end
  return true
end
local function __rlp_valid(s, v)
  return s.t ~= "zset" or tonumber(v) > __rlp_now()
end
local function __rlp_judge(b, a)
  if b.t ~= "none" and b.t ~= "string" and b.t ~= "hash" and b.t ~= "zset" then
    return "it changes a " .. b.t .. " key"
  end
  if b.t ~= "none" and a.t ~= "none" and b.t ~= a.t then
    return "it turns a " .. b.t .. " key into a " .. a.t
  end
  if a.t ~= "none" and a.pttl < 0 then return "it leaves a key without an expiry" end
  if a.t ~= "none" and a.pttl > __RLP_MAXTTL then return "it leaves a key with an expiry over max_ttl" end
  if b.t ~= "hash" and b.t ~= "zset" and a.t ~= "hash" and a.t ~= "zset" then
    -- No key or a string on both sides (the checks above leave no other
    -- pair that holds a token): the one holder is the value. The same
    -- rules as the loops below, without their tables.
    local others = false
    if b.t == "string" and not __rlp_isown(b.v) then
      if a.t ~= "string" or a.v ~= b.v then return "it removes or overwrites another token's hold" end
      others = true
    end
    if a.t == "string" and (b.t ~= "string" or b.v ~= a.v) and not __rlp_isown(a.v) then
      return "it writes a value that is none of its arguments"
    end
    if others and a.exp ~= b.exp then
      return "it changes the expiry of another token's hold"
    end
    return nil
  end
  local own = __rlp_ownset()
  local hb, ha = __rlp_holders(b), __rlp_holders(a)
  local others, latest = false, 0
  for m, v in pairs(hb) do
    if not own[m] and __rlp_valid(b, v) then
      if ha[m] ~= v then return "it removes or overwrites another token's hold" end
      others = true
      if b.t == "zset" and tonumber(v) > latest then latest = tonumber(v) end
    end
  end
  for m in pairs(ha) do
    if hb[m] == nil and not own[m] then
      return "it writes a value that is none of its arguments"
    end
  end
  if others and b.t ~= "zset" and a.exp ~= b.exp then
    return "it changes the expiry of another token's hold"
  end
  if others and b.t == "zset" and (a.t == "none" or a.pttl < latest - __rlp_now()) then
    return "it cuts short another token's hold"
  end
  return nil
end
-- mine appends to out at n the count of s's own holders, then each of
-- them; it returns the new n and how long the own holders have left.
local function __rlp_mine(s, out, n)
  local at, least = n + 1, 0
  n = at
  out[at] = 0
  if s.t == "none" then return n, least end
  if s.t == "string" then
    if __rlp_isown(s.v) then
      n = n + 1
      out[at], out[n] = 1, s.v
      if s.pttl > 0 then least = s.pttl end
    end
    return n, least
  end
  local own = __rlp_ownset()
  for m, v in pairs(__rlp_holders(s)) do
    if own[m] then
      local left = s.pttl
      if s.t == "zset" then
        local sc = tonumber(v) - __rlp_now()
        if left < 0 or sc < left then left = sc end
      end
      if left ~= 0 and (left > 0 or s.t ~= "zset") then
        n = n + 1
        out[at], out[n] = out[at] + 1, m
        if least == 0 or (left > 0 and left < least) then least = left end
      end
    end
  end
  return n, least
end
local function __rlp_enc(v)
  local t = type(v)
  if t == "table" then
    if v.err then return {"e", __rlp_tostring(v.err)} end
    if v.ok then return {"s", __rlp_tostring(v.ok)} end
    local out = {"a"}
    local i = 1
    while v[i] ~= nil do
      out[#out + 1] = __rlp_enc(v[i])
      i = i + 1
    end
    return out
  elseif t == "number" then return {"i", v}
  elseif t == "string" then return {"b", v}
  elseif t == "boolean" and v then return {"i", 1} end
  return {"n"}
end
local __rlp_before = {}
for i, k in ipairs(__rlp_keys) do __rlp_before[i] = __rlp_snap(k) end
local function __rlp_body(...)
`

const wrapperTail = `
end
local __rlp_ok, __rlp_r = pcall(__rlp_body)
local __rlp_after = {}
for i, k in ipairs(__rlp_keys) do __rlp_after[i] = __rlp_snap(k, __rlp_before[i]) end
local __rlp_why = __rlp_refused
local __rlp_same_ = {}
for i = 1, #__rlp_keys do
  __rlp_same_[i] = __rlp_same(__rlp_before[i], __rlp_after[i])
  if not __rlp_why and not __rlp_same_[i] then
    __rlp_why = __rlp_judge(__rlp_before[i], __rlp_after[i])
  end
end
if __rlp_why then
  -- Defined here: a closure built on every run costs, and only a refused
  -- run restores.
  local function __rlp_restore(k, s)
    __rlp_call("del", k)
    if s.t == "string" then __rlp_call("set", k, s.v)
    elseif s.t == "hash" then __rlp_call("hset", k, unpack(s.v))
    elseif s.t == "zset" then
      local args = {}
      for i = 1, #s.v, 2 do args[#args + 1] = s.v[i + 1]; args[#args + 1] = s.v[i] end
      __rlp_call("zadd", k, unpack(args))
    elseif s.t ~= "none" then __rlp_call("restore", k, 0, s.v) end
    if s.t ~= "none" and s.exp > 0 then __rlp_call("pexpireat", k, s.exp) end
  end
  for i, k in ipairs(__rlp_keys) do
    if not __rlp_same_[i] then __rlp_restore(k, __rlp_before[i]) end
  end
  return {"refused", __rlp_why}
end
local __rlp_reply
if __rlp_ok then __rlp_reply = __rlp_enc(__rlp_r)
elseif type(__rlp_r) == "table" and __rlp_r.err then __rlp_reply = {"e", __rlp_tostring(__rlp_r.err)}
else __rlp_reply = {"e", "ERR " .. __rlp_tostring(__rlp_r)} end
-- One flat array (each nested table costs Redis a walk when it turns
-- the reply into RESP): per key, its fields in order.
local __rlp_out, __rlp_n = {"ok", __rlp_reply}, 2
for i = 1, #__rlp_keys do
  local b, a = __rlp_before[i], __rlp_after[i]
  local ahold
  __rlp_out[__rlp_n + 1], __rlp_out[__rlp_n + 2] = b.t, b.pttl
  __rlp_n = __rlp_mine(b, __rlp_out, __rlp_n + 2)
  __rlp_out[__rlp_n + 1], __rlp_out[__rlp_n + 2] = a.t, a.pttl
  __rlp_n, ahold = __rlp_mine(a, __rlp_out, __rlp_n + 2)
  local changed = 0
  if not __rlp_same_[i] then changed = 1 end
  __rlp_out[__rlp_n + 1], __rlp_out[__rlp_n + 2] = changed, ahold
  __rlp_n = __rlp_n + 2
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

// wrapBody builds the wrapper around body for the given allow-list,
// literals and max_ttl.
func wrapBody(body string, commands map[string]int, literals []string, maxTTL time.Duration) string {
	var lits strings.Builder
	lits.WriteString("{")
	for _, l := range literals {
		lits.WriteString(luaQuote(l))
		lits.WriteString(", ")
	}
	lits.WriteString("}")
	// The same literals as one expression comparing v with each.
	chain := "false"
	if len(literals) > 0 {
		quoted := make([]string, len(literals))
		for i, l := range literals {
			quoted[i] = "v == " + luaQuote(l)
		}
		chain = strings.Join(quoted, " or ")
	}
	// The allow-list as one string constant, " name:pos ...", searched
	// with a plain string.find: a table would be built anew on every run.
	var cmds strings.Builder
	cmds.WriteString(" ")
	for _, name := range sortedKeys(commands) {
		cmds.WriteString(name + ":" + strconv.Itoa(commands[name]) + " ")
	}
	head := strings.NewReplacer(
		"__RLP_LITERALS", lits.String(),
		"__RLP_LITCHAIN", chain,
		"__RLP_COMMANDS", luaQuote(cmds.String()),
		"__RLP_MAXTTL", strconv.FormatInt(maxTTL.Milliseconds(), 10),
	)
	return head.Replace(wrapperHead) + body + head.Replace(wrapperTail)
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
