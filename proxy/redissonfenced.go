package proxy

import (
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// Redisson's RFencedLock (RedissonFencedLock.java at redisson/redisson
// 66863978b4a9) takes the lock with RLock's script plus an INCR of
// KEYS[2], redisson_lock_token:{name}, on every acquisition (a re-entry
// too), and getToken() GETs that key. The proxy serves the lock part as
// RLock's script, by its effect, and the INCR by the quorum counter of
// that name (quorum.Engine.Incr), after the grant and only if the
// grant's validity still runs when it is done: every token is then
// above every token an earlier holder got, since that holder's INCR
// finished within its validity, before this grant. No hold record is
// read, so a thread that takes the lock again (Redisson's lock token
// uuid:threadId is the same) still gets a new token.

// fencedScript is one of RFencedLock's acquire scripts.
type fencedScript uint8

const (
	fencedNone  fencedScript = iota
	fencedToken              // tryLockInnerAsync(leaseTime, unit, threadId): {-1, token} or {pttl, -1}
	fencedLock               // the RLock override lock() and tryLock() run: nil or the PTTL
)

// redissonFenced are RFencedLock's acquire scripts by SHA-1
// (integration/redissonfenced_test.go replays them byte for byte).
var redissonFenced = map[string]fencedScript{
	"49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45": fencedToken, // RedissonFencedLock.java:107-117
	"46b5551ba403d6152a7a6eca122e08728d6c8c66": fencedLock,  // RedissonFencedLock.java:297-307
}

// redissonLockScript is RLock's acquire (RedissonLock.java): the lock
// part of both, run by its effect as RLock's own calls are.
const redissonLockScript = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"

// redissonTokenPrefix begins the name of every RFencedLock's token
// counter: a quorum counter, as a fence_keys one is.
const redissonTokenPrefix = "redisson_lock_token:"

// runFencedLock serves an RFencedLock acquire script called with
// Redisson's layout: KEYS the lock and its token counter, ARGV the lease
// and the lock's name for the thread.
func (s *Server) runFencedLock(r *request, op fencedScript) (resp.Reply, error) {
	rest, nk, err := scriptArgs(r)
	if err != nil {
		return resp.Reply{}, err
	}
	if nk != 2 || len(rest) != 4 || string(rest[1]) != redissonTokenPrefix+braced(string(rest[0])) {
		return resp.Reply{}, withArgs(errFencedLayout, "2 keys (the lock, "+redissonTokenPrefix+"{name}) and 2 arguments (lease, name)")
	}
	if redissonToken(rest[0]) {
		return resp.Reply{}, withArgs(errFencedTokenKey, cString(rest[0], 128)) // a lock named as another's counter
	}
	if lease, ok := resp.ParseInt(rest[2]); !ok || lease <= 0 {
		// Redisson always sends one; with none, one Redis takes a token
		// for a lock that ends at once.
		return resp.Reply{}, withArgs(errFencedLayout, "a lease above 0 ms")
	}
	lock, _, err := s.scripts.learn(r.ctx, []byte(redissonLockScript))
	if err != nil {
		return resp.Reply{}, err
	}
	r.op = quorum.OpAcquire
	res, err := s.effect(r, lock.eff, []string{string(rest[0])}, []string{string(rest[2]), string(rest[3])})
	switch {
	case err != nil:
		return resp.Reply{}, err
	case res.Reply.Kind == quorum.ValueInt: // taken: its PTTL
		if op == fencedToken {
			return resp.Array(resp.Int(res.Reply.Int), resp.Int(-1)), nil
		}
		return resp.Int(res.Reply.Int), nil
	case !res.Granted || res.Op != quorum.EffectHold:
		return valueReply(res.Reply), nil // not an acquisition: the script's own reply
	}
	t, err := s.incrCounter(r, string(rest[1]), 1)
	if err == nil && !res.Lease.Valid(time.Now()) {
		err = errLate // a token for a hold that may have ended is no token
	}
	if err != nil {
		// Given back, as a grant without its reply: what this run took
		// new (a re-entry's count stays, as after a reply lost).
		s.e.UndoEffect(r.ctx, res)
		return resp.Reply{}, err
	}
	if op == fencedToken {
		return resp.Array(resp.Int(-1), resp.Int(t)), nil
	}
	return resp.Null(), nil
}

// redissonToken reports whether key names an RFencedLock's token counter.
func redissonToken(key []byte) bool {
	// Compared as a conversion, which allocates no string.
	return len(key) >= len(redissonTokenPrefix) && string(key[:len(redissonTokenPrefix)]) == redissonTokenPrefix
}
