if not __rlp_call then
  __rlp_call, __rlp_pcall, __rlp_tostring, __rlp_select, __rlp_type, __rlp_xpcall = ${if .Lib}__rlp_G()${else}redis${end}.call, ${if .Lib}__rlp_G()${else}redis${end}.pcall, tostring, select, type, xpcall
  -- xpcall with this handler keeps a raised table a table (Redis's pcall
  -- makes it its err text, which a Lua error's text cannot be told from).
  __rlp_asis = function(e) return e end
  ${if .Lib}setmetatable(redis, {__index = __rlp_G()})${end}
end
-- Only a run that kept an own value's past (held) or put a key on the
-- slow path (slowfns) set a state's o, oi, oe or s: the last run's states
-- lose them here, and every run's lose m and ttl below.
if __rlp_held or __rlp_slowfns then
  for i = 1, #__rlp_keys do
    local st = __rlp_st[__rlp_keys[i]]
    st.o, st.oi, st.oe, st.s = nil, nil, nil, nil
  end
end
__rlp_refused, __rlp_slowfns, __rlp_pubs, __rlp_okr, __rlp_held = false, nil, nil, nil, false
local __rlp_n, __rlp_last, __rlp_st1, __rlp_k1 = #ARGV, __rlp_nargv, __rlp_p1, KEYS[1]
if __rlp_st1 and __rlp_k1 ~= nil and KEYS[2] == nil and __rlp_last <= 64 and __rlp_keys[2] == nil then
  -- One key after a run of at most one (the common lock script): its
  -- state is pool[1], as below, and no loop runs over the keys.
  local keys, st, argv = __rlp_keys, __rlp_st, __rlp_argv
  local k0 = keys[1]
  if k0 ~= nil then st[k0] = nil end
  __rlp_st1.m, __rlp_st1.ttl = nil, nil
  keys[1], st[__rlp_k1] = __rlp_k1, __rlp_st1
  local a = ARGV
  if __rlp_n == 2 then
    argv[1], argv[2], argv[3] = a[1], a[2], __rlp_k1
  else
    for i = 1, __rlp_n do argv[i] = a[i] end
    argv[__rlp_n + 1] = __rlp_k1
  end
  __rlp_nargv = __rlp_n + 1
else
  if __rlp_last > 64 then
    -- A large run's tables are not kept.
    __rlp_keys, __rlp_st, __rlp_argv = {}, {}, {}
  else
    for i = #__rlp_keys, 1, -1 do __rlp_st[__rlp_keys[i]], __rlp_keys[i] = nil, nil end
  end
  for i = 1, __rlp_n do __rlp_argv[i] = ARGV[i] end
  for i = 1, #KEYS do
    local k = KEYS[i]
    __rlp_argv[__rlp_n + i] = k
    if not __rlp_st[k] then
      local j = #__rlp_keys + 1
      local st = __rlp_pool[j]
      if st then
        st.m, st.ttl = nil, nil
      else
        -- The fields named here get their room now, not by a rehash each.
        st = {m = nil, mi = nil, o = nil, oi = nil, oe = nil, ttl = nil, ttls = nil, s = nil}
        if j <= 8 then __rlp_pool[j] = st end
        if j == 1 then __rlp_p1 = st end
      end
      __rlp_keys[j], __rlp_st[k] = k, st
    end
  end
  __rlp_nargv = __rlp_n + #KEYS
end
for i = __rlp_nargv + 1, __rlp_last do __rlp_argv[i] = nil end
