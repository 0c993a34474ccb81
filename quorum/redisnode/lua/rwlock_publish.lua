-- A decided message (a read lock's release, a latch's): ARGV[1] is
-- PUBLISH or SPUBLISH, KEYS[1] the channel, ARGV[2] the message, ARGV[3]
-- the last millisecond on this node's clock at which it may still be
-- sent (0: no limit). A copy that reaches its node later is dropped: the
-- proxies' hubs could no longer tell it from a new publish.
local last = tonumber(ARGV[3])
if last > 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > last then
    return 0
  end
end
return redis.call(ARGV[1], KEYS[1], ARGV[2])
