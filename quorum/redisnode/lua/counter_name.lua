-- Names a pending node in a new deployment's gen (fence.go), when the
-- seeding does not seed it (not up): only if it is still pending with
-- the mark ARGV[1]. ARGV[2] is the gen. Returns 1 if named, else 0.
if redis.call("hget", KEYS[1], "seeded") == "1" or redis.call("hget", KEYS[1], "pending") ~= ARGV[1] then
  return 0
end
redis.call("hset", KEYS[1], "gen", ARGV[2])
return 1
