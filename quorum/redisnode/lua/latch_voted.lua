-- The latch's vote memory (latch.go), the head of latch_set.lua,
-- latch_reset.lua, latch_claim.lua and latch_del.lua: "d:" of a latch's
-- name holds the ballots its node voted for and no longer keeps a vote
-- of (a delete took it, or a set replaced a kept one), one bit each (a
-- ballot's last nine digits, halved as a set's nonce is odd, modulo 52),
-- or "-1": any (a vote of no ballot, a node seeded after a restart, a
-- tombstone the scripts before "d:" left). "x:" holds, the same way,
-- the ballots of kept votes a claim of a third ballot made the node
-- forget while its slot lived (latch_claim.lua: the rest of L3). Two
-- ballots may share a bit:
-- a claim of the other is then nobody's where the memory is read.
local function ballotbit(b)
  if not b or not string.match(b, "^[1-9]%d*$") then
    return nil
  end
  return 2 ^ (math.floor(tonumber(string.sub(b, -9)) / 2) % 52)
end

-- voted: whether memory d holds ballot b (a ballot "0" is any).
local function voted(d, b)
  local bit = ballotbit(b)
  return d == "-1" or not bit or math.floor(tonumber(d) / bit) % 2 == 1
end

-- remember is memory d (nil: none) with ballot b (nil: unknown) added.
local function remember(d, b)
  local bit = ballotbit(b)
  if d == "-1" or not bit then
    return "-1"
  end
  d = d or "0"
  if math.floor(tonumber(d) / bit) % 2 == 0 then
    d = string.format("%.0f", tonumber(d) + bit)
  end
  return d
end

-- merge is memory d (nil: none) with every ballot of memory x added.
local function merge(d, x)
  if not x then
    return d
  end
  if d == "-1" or x == "-1" then
    return "-1"
  end
  local v, w = tonumber(d or "0"), tonumber(x)
  for i = 0, 51 do
    local bit = 2 ^ i
    if math.floor(w / bit) % 2 == 1 and math.floor(v / bit) % 2 == 0 then
      v = v + bit
    end
  end
  return string.format("%.0f", v)
end
