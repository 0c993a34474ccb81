    -- GET of one of KEYS, the commonest read, in either common spelling,
    -- before the chain below: the run sees what the key holds (st.m). Any
    -- other spelling reads without it (a write to its key after it is
    -- then judged by snapshots).
    if (cmd == "GET" or cmd == "get") and not __rlp_refused then
      local st = __rlp_st[(...)]
      if st then
        local r = ${.PC}(cmd, ...)
        if not st.s then
          if r == false or r == nil then st.m = false
          elseif __rlp_type(r) == "string" then st.m, st.mi = r, nil
          else st.m = nil end
        end
        return r
      end
    end
    -- SET of one of KEYS not on the slow path, in either common
    -- spelling, before the chain below: the fast path runs one it proves
    -- a lock owner's as it is, and its reply tells what it did. It proves,
    -- for a string:
    --   SET k v NX PX t, v own, 0 < t <= max_ttl: OK took a free key;
    --   SET k v PX t on a key the run saw free or holding an own value.
    -- What the run saw (m) is its last GET's reply or the fast path's
    -- last write; mi is m's place among the own tokens, once known. A t
    -- that is not an integer needs no test: Redis refuses it. Any other
    -- SET (or spelling) goes on below, and puts k on the slow path.
    if (cmd == "SET" or cmd == "set") and not __rlp_refused then
      -- Five arguments (o3 given, o4 not) or four: a nil among them
      -- fails the command (Redis takes strings and numbers only).
      local k, v, o1, o2, o3, o4 = ...
      local st = __rlp_st[k]
      if st and not st.s then
        local nx, t
        if o4 ~= nil then
        elseif o3 ~= nil and (o1 == "NX" or o1 == "nx") and (o2 == "PX" or o2 == "px") then nx, t = true, o3
        elseif o3 ~= nil and (o1 == "PX" or o1 == "px") and (o3 == "NX" or o3 == "nx") then nx, t = true, o2
        elseif o3 == nil and o2 ~= nil and (o1 == "PX" or o1 == "px") then nx, t = false, o2 end
        local ts, vi, m, mi = t
        if t ~= nil then
          -- Clients send one ttl call after call: the last one's number
          -- is kept.
          if t == __rlp_tsv then t = __rlp_tsn
          else
            __rlp_tsv, t = t, tonumber(t)
            __rlp_tsn = t
          end
          if t and t > 0 and t <= ${.MaxTTL} then
            if v ~= nil and __rlp_argv[1] == v then vi = 1 else vi = __rlp_own(v) end
          end
        end
        if vi and not nx then
          m = st.m
          if m then mi = st.mi or __rlp_own(m) end
        end
        if vi and (nx or m == false or mi) then
          if not nx and not st.ttl then
            st.o, st.oi, __rlp_held = m, mi, true
            if m then st.oe = __rlp_call("pexpiretime", k) end
          end
          local r = ${.PC}(cmd, ...)
          -- SET's reply here: a status table, false, or an error table.
          if r and r.ok then
            __rlp_okr = r
            -- OK to NX: the key was free (st.o is nil: none).
            st.m, st.mi, st.ttl, st.ttls = v, vi, t, ts
          end
          return r
        end
      end
    end
    -- The command's kind: 0 no key, 1 reads its first argument's key,
    -- 2 reads every argument's, 3 writes its first argument's key, 4
    -- writes every argument's, 5 SELECT. A chain of comparisons: a table
    -- would be built anew on every run.
    local c, kind = cmd
    if not __rlp_refused then
      ${.KindChain}
      if not kind then
        c = string.lower(__rlp_tostring(cmd))
        ${.KindChain}
        if not kind then __rlp_refused = string.upper(c) .. " is not a lock command" end
      end
    end
    local k, st
    if kind == 1 or kind == 3 then
      k = ...
      st = __rlp_st[k]
      if st == nil then
        -- Keys are strings: Redis would turn a number into a key of
        -- other digits than tostring gives. No argument at all is
        -- Redis's error to give.
        if __rlp_select("#", ...) == 0 then return ${.PC}(cmd, ...) end
        __rlp_refused = "a key argument of " .. string.upper(c) .. " is not one of KEYS"
      elseif kind == 1 then
        return ${.PC}(cmd, ...)
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
      return ${.PC}(cmd, ...)
    elseif kind and __rlp_slow().keysok(c, kind, ...) then
      if kind ~= 4 then return ${.PC}(cmd, ...) end
      if __rlp_select("#", ...) == 1 then
        k = ...
        st = __rlp_st[k]
      else
        for i = 1, __rlp_select("#", ...) do
          if not __rlp_slow().toslow((__rlp_select(i, ...))) then break end
        end
        if not __rlp_refused then return ${.PC}(cmd, ...) end
      end
    end
    if st then
      -- A write to one key k, not yet on the slow path: the fast path
      -- runs one it proves a lock owner's as it is (SET, above), and its
      -- reply tells what it did; any other first puts k on the slow path.
      -- It proves here PEXPIRE k t / EXPIRE k s, DEL k / UNLINK k on a
      -- key the run saw holding an own value (or free: then they do
      -- nothing).
      if st.s then return ${.PC}(cmd, ...) end
      local m = st.m
      local t, ts, mi
      if m ~= nil and (c == "pexpire" or c == "expire" or c == "del" or c == "unlink") then
        if m == false then return ${.PC}(cmd, ...) end -- no key: nothing to do
        if c == "del" or c == "unlink" then t = 0
        elseif __rlp_select("#", ...) == 2 then
          ts = __rlp_select(2, ...)
          t = tonumber(ts)
          if t and c == "expire" then t, ts = t * 1000, nil end
          if not (t and t > 0 and t <= ${.MaxTTL}) then t = nil end
        end
        if t then mi = st.mi or __rlp_own(m) end
        if mi then
          if not st.ttl then
            st.o, st.oi, st.oe, __rlp_held = m, mi, __rlp_call("pexpiretime", k), true
          end
          local r = ${.PC}(cmd, ...)
          if r == 1 then
            if t == 0 then st.m, st.mi, st.ttl = false, nil, 0 else st.mi, st.ttl, st.ttls = mi, t, ts end
          end
          return r
        end
      end
      if __rlp_slow().toslow(k) then return ${.PC}(cmd, ...) end
    end
    ${.Refuse}