-- Seeds a pending node (fence.go): only if it is still pending with the
-- mark ARGV[1], so that a node that lost its data again since is not.
-- ARGV[2] is a new deployment's "gen" (the ids of the pending nodes its
-- seeding saw; "" when seeded from the maxima), ARGV[3..] field, value
-- pairs. Returns 1 if seeded, else 0.
if redis.call("hget", KEYS[1], "seeded") == "1" or redis.call("hget", KEYS[1], "pending") ~= ARGV[1] then
  return 0
end
redis.call("del", KEYS[1])
redis.call("hset", KEYS[1], "seeded", "1")
if ARGV[2] ~= "" then
  redis.call("hset", KEYS[1], "gen", ARGV[2])
end
for i = 3, #ARGV, 2 do
  redis.call("hset", KEYS[1], ARGV[i], ARGV[i + 1])
end
return 1
