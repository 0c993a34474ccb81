local __rlp_bodies, __rlp_nbodies, __rlp_bodybytes = {}, 0, 0
local __rlp_curtag, __rlp_body, __rlp_set = false, nil, nil
-- loadstring is read when a chunk is compiled: a library is loaded
-- without it, and a server may have none (then the body runs as a script).
local function __rlp_loadstring() return loadstring end
local function __rlp_find(a)
  local n = #a
  local tag, src = a[n], a[n - 1]
  if n < 2 or type(tag) ~= "string" or type(src) ~= "string" or string.sub(tag, 1, 1) ~= "+" then
    return {err = "RLPNOBODY the node has not compiled this body"}
  end
  local sha = string.sub(tag, 2)
  if __rlp_G().sha1hex(src) ~= sha then return {err = "RLPNOBODY the body does not match its digest"} end
  local e = __rlp_bodies[sha]
  if not e then
    local ok, load = pcall(__rlp_loadstring)
    if not ok or not load then return {err = "RLPNOCOMPILE the node's functions have no loadstring"} end
    -- Named as Redis names a script's chunk: a Lua error's text, caught
    -- by the body or not, names the body's line as one Redis's does.
    local f, why = load(src, "@user_script")
    if not f then return {err = "RLPNOCOMPILE " .. tostring(why)} end
    local body, set, lits = f(redis)
    while __rlp_nbodies > 0 and (__rlp_nbodies >= ${.MaxBodies} or __rlp_bodybytes + #src > ${.MaxBodyBytes}) do
      local k, old = next(__rlp_bodies)
      __rlp_bodies[k], __rlp_nbodies, __rlp_bodybytes = nil, __rlp_nbodies - 1, __rlp_bodybytes - old.n
    end
    e = {body = body, set = set, lits = lits, n = #src}
    __rlp_bodies[sha], __rlp_nbodies, __rlp_bodybytes = e, __rlp_nbodies + 1, __rlp_bodybytes + #src
  end
  a[n], a[n - 1] = nil, nil
  return e
end
