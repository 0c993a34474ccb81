-- The read locks' watchdog renewal (rwlock.go): Redisson's
-- renewal/ReadLockTask.java script, except that the hash's expiry is
-- never lowered (another reader's lease may be longer than this
-- renewal's, as the take keeps it). KEYS are pairs (a lock's
-- hash, its key prefix); ARGV[1] the lease in ms, then for each pair a
-- count and that many reader names. Returns 1 or 0 per pair: whether one
-- of the names held the lock there (its holds and the hash renewed).
local result = {} local argIdx = 2 for i = 1, #KEYS, 2 do local anyAlive = false; local lockNamesCount = tonumber(ARGV[argIdx]); argIdx = argIdx + 1; for k = 1, lockNamesCount do local counter = redis.call('hget', KEYS[i], ARGV[argIdx]); if (counter ~= false) then anyAlive = true; for c=counter, 1, -1 do redis.call('pexpire', KEYS[i+1] .. ':' .. ARGV[argIdx] .. ':rwlock_timeout:' .. c, ARGV[1]); end; end; argIdx = argIdx + 1; end; if (anyAlive) then redis.call('pexpire', KEYS[i], math.max(redis.call('pttl', KEYS[i]), tonumber(ARGV[1]))); table.insert(result, 1); else table.insert(result, 0); end; end; return result;
