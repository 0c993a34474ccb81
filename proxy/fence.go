package proxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// FENCE key token
func (s *Server) fence(r *request) resp.Reply {
	key := string(r.args[1])
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return rep
	}
	f, err := s.e.Fence(r.ctx, key, string(r.args[2]))
	switch {
	case errors.Is(err, quorum.ErrDenied):
		return resp.Error(fmt.Sprintf("NOTHELD the lock '%s' is not held by this token (or its validity ran out)", cString(r.args[1], 128)))
	case err != nil:
		return s.fail(err)
	}
	return resp.Int(f.Token)
}

// INCR key
func (s *Server) incr(r *request) resp.Reply { return s.incrBy(r, 1) }

// INCRBY key increment
func (s *Server) incrby(r *request) resp.Reply {
	by, ok := resp.ParseInt(r.args[2])
	switch {
	case !ok:
		return resp.Error(resp.ErrNotInteger.Error())
	case by <= 0:
		return resp.Error("ERR a fence_keys counter only grows: the increment must be above 0")
	}
	return s.incrBy(r, by)
}

// incrBy serves INCR and INCRBY of a fence_keys counter, trying again
// after a random pause while another INCR takes the same value.
func (s *Server) incrBy(r *request, by int64) resp.Reply {
	if !s.counterKey(r.args[1]) {
		return unknownCommand(r.args) // not a counter: refused as Redis's other commands are
	}
	for {
		v, err := s.e.Incr(r.ctx, string(r.args[1]), by)
		if !errors.Is(err, quorum.ErrContended) {
			if err != nil {
				return s.fail(err)
			}
			return resp.Int(v)
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(s.e.NodeTimeout()/5) + 1)))
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return s.fail(err)
		}
	}
}

// counterGet is GET of a fence_keys counter: at least the last value an
// INCR returned; nil for a counter never increased.
func (s *Server) counterGet(r *request) resp.Reply {
	v, err := s.e.Counter(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return s.fail(err)
	case v == 0:
		return resp.Null()
	}
	return resp.Bulk(strconv.FormatInt(v, 10))
}

// counterKey reports whether key is a fence_keys counter.
func (s *Server) counterKey(key []byte) bool {
	for _, p := range s.conf().FenceKeys {
		if acl.Match(p, key) {
			return true
		}
	}
	return false
}

// counterCommands may name a fence_keys counter; every other command
// that names one is refused (counterRefusal).
var counterCommands = map[string]bool{"incr": true, "incrby": true, "get": true}

// counterRefusal refuses a command that names a fence_keys counter, other
// than INCR, INCRBY and GET: a counter lives in the masters' counters,
// and one master's key of that name means nothing.
func (s *Server) counterRefusal(name string, cm command, args [][]byte) (resp.Reply, bool) {
	if counterCommands[name] || len(s.conf().FenceKeys) == 0 {
		return resp.Reply{}, false
	}
	for _, k := range keysOf(cm.keys, args) {
		if s.counterKey(k) {
			return resp.Error(fmt.Sprintf("ERR '%s' is a fence_keys counter: only INCR, INCRBY and GET may name it",
				cString(k, 128))), true
		}
	}
	return resp.Reply{}, false
}
