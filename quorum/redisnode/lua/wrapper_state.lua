local __rlp_call, __rlp_pcall, __rlp_tostring, __rlp_select, __rlp_type, __rlp_xpcall, __rlp_asis
-- st[k] is what the run knows of key k, one of KEYS (st[k] == nil: not
-- one of them). Its fields:
--   m  what the key holds now, as far as the run proved it: nil unknown,
--      false no key, or a string's value (mi: its place among the own
--      tokens, once known);
--   ttl  set once the fast path changed the key: while m is a value,
--      its PTTL (ttls: as the write gave it, for the reply), else 0; then
--      o is what it held before (nil or false: no key; a string: that own
--      value, oi its place, oe its PEXPIRETIME);
--   s  the snapshot taken before the key's first write the fast path
--      could not prove (the slow path): it is judged after the run.
-- A run starts with m and ttl cleared, not mi and ttls: they are read
-- only beside a value m the run set (and, ttls, a ttl it set), and each
-- write that makes m a value sets mi, each that sets ttl beside one sets
-- ttls (a DEL's ttl leaves m false).
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
-- p1 is pool[1], the state of a one-key run's key.
local __rlp_p1
-- okr is the run's last status reply of a SET the fast path proved;
-- held is true once the fast path kept what an own value held before its
-- first change (st.o).
local __rlp_okr, __rlp_held
-- tsv and tsn are the last ttl argument of a SET the fast path read, and
-- its number.
local __rlp_tsv, __rlp_tsn
-- digits are the small numbers as text.
local __rlp_digits = {[0] = "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15"}
-- fastts and fastr are the ttl argument and the reply of the last run
-- the tail answered first as a take of ARGV[1] (wrapperTailSrc).
local __rlp_fastts, __rlp_fastr
