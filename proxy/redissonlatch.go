package proxy

import (
	"strconv"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// latchScript is one of RCountDownLatch's scripts, served as a quorum
// latch (quorum/latch.go) for names that match latch_keys.
type latchScript uint8

const (
	latchNone        latchScript = iota
	latchCountDown               // RedissonCountDownLatch.countDownAsync
	latchTrySetCount             // RedissonCountDownLatch.trySetCountAsync
	latchDelete                  // RedissonCountDownLatch.deleteAsync
)

// redissonLatch names RCountDownLatch's scripts by the SHA-1 of their
// text, as redisson/redisson 66863978b4a9 sends them
// (integration/redissonlatch_test.go replays each).
var redissonLatch = map[string]latchScript{
	"38060fab26b0e7c5982a5cfd7ad542e44d3da19b": latchCountDown,   // RedissonCountDownLatch.java:255-257
	"2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892": latchTrySetCount, // RedissonCountDownLatch.java:288-294
	"47aed1b8133417c9bc009ffc08602e37ed4a1bb3": latchDelete,      // RedissonCountDownLatch.java:302-307
}

// latchChannelPrefix begins a latch's channel: Redisson's
// getChannelName, with the name in braces.
const latchChannelPrefix = "redisson_countdownlatch__channel__"

// latchKey reports whether name is a latch: it matches latch_keys.
func (s *Server) latchKey(name []byte) bool {
	for _, p := range s.conf().LatchKeys {
		if acl.Match(p, name) {
			return true
		}
	}
	return false
}

// runLatch serves an RCountDownLatch script called with Redisson's
// layout: KEYS the latch and its channel; ARGV the message, then
// trySetCount's count, then the publish command.
func (s *Server) runLatch(r *request, op latchScript) (resp.Reply, error) {
	rest, nk, err := scriptArgs(r)
	if err != nil {
		return resp.Reply{}, err
	}
	want := 2
	if op == latchTrySetCount {
		want = 3
	}
	name := string(rest[0])
	if nk != 2 || len(rest)-nk != want || string(rest[1]) != latchChannelPrefix+"{"+name+"}" || !publishCommand(string(rest[len(rest)-1])) {
		return resp.Reply{}, withArgs(errRedissonLayout, "RCountDownLatch", "2 keys (the latch, "+latchChannelPrefix+"{name}), the message, trySetCount's count, and PUBLISH or SPUBLISH")
	}
	if !s.latchKey(rest[0]) || quorum.Reserved(name) {
		return resp.Reply{}, withArgs(errRedissonType, "RCountDownLatch", "its name must match latch_keys")
	}
	m := quorum.LatchMessages{Publish: string(rest[len(rest)-1]), Channel: string(rest[1]), Message: string(rest[2])}
	switch op {
	case latchCountDown:
		r.op = quorum.OpRelease
		if err := s.e.LatchCountDown(r.ctx, name, m); err != nil {
			return resp.Reply{}, err
		}
		return resp.Null(), nil
	case latchTrySetCount:
		r.op = quorum.OpAcquire
		count, ok := resp.ParseInt(rest[3])
		if !ok {
			return resp.Reply{}, withArgs(errRedissonLayout, "RCountDownLatch", "trySetCount's count is an integer")
		}
		set, err := s.e.LatchSet(r.ctx, name, count, m)
		return boolInt(set), err
	default:
		r.op = quorum.OpRelease
		deleted, err := s.e.LatchDelete(r.ctx, name, m)
		return boolInt(deleted), err
	}
}

// latchGet is GET of a latch: its count as a bulk string, nil when it is
// open or was never set (Redisson reads nil as 0).
func (s *Server) latchGet(r *request) (resp.Reply, error) {
	v, err := s.e.LatchCount(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return resp.Reply{}, err
	case v <= 0:
		return resp.Null(), nil
	}
	return resp.Bulk(strconv.FormatInt(v, 10)), nil
}

func boolInt(b bool) resp.Reply {
	if b {
		return resp.Int(1)
	}
	return resp.Int(0)
}
