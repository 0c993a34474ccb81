-- The run's deadline (lateCheck, redisnode.go): the last millisecond on
-- this node's clock at which it may run, 0 for no limit. Past it nothing
-- runs and the call answers LATE: its proxy gave up on it, and its
-- client, told so, may have taken the key again through another proxy,
-- which this run would cut (attack18 A6).
if tonumber(__rlp_until) > 0 then
  local t = ${if .Lib}__rlp_G()${else}redis${end}.call("time")
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(__rlp_until) then
    return {err = "LATE the proxy gave up on this run before it ran"}
  end
end
