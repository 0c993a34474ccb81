package proxy

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// FENCE key token
func (s *Server) fence(r *request) (resp.Reply, error) {
	key := string(r.args[1])
	if err := reservedKeys(r.args[1:2]); err != nil {
		return resp.Reply{}, err
	}
	f, err := s.e.Fence(r.ctx, key, string(r.args[2]))
	switch {
	case errors.Is(err, quorum.ErrDenied):
		return resp.Reply{}, withArgs(errNotHeld, cString(r.args[1], 128))
	case err != nil:
		return resp.Reply{}, err
	}
	return resp.Int(f.Token), nil
}

// INCR key
func (s *Server) incr(r *request) (resp.Reply, error) { return s.incrBy(r, 1) }

// INCRBY key increment
func (s *Server) incrby(r *request) (resp.Reply, error) {
	by, ok := resp.ParseInt(r.args[2])
	switch {
	case !ok:
		return resp.Reply{}, resp.ErrNotInteger
	case by <= 0:
		return resp.Reply{}, errCounterDown
	}
	return s.incrBy(r, by)
}

// incrBy serves INCR and INCRBY of a counter.
func (s *Server) incrBy(r *request, by int64) (resp.Reply, error) {
	if !s.counterKey(r.args[1]) {
		return resp.Reply{}, &unknownCommandError{r.args} // not a counter: refused as Redis's other commands are
	}
	v, err := s.incrCounter(r, string(r.args[1]), by)
	if err != nil {
		return resp.Reply{}, err
	}
	return resp.Int(v), nil
}

// incrCounter raises the counter name by by, trying again after a random
// pause while another INCR takes the same value.
func (s *Server) incrCounter(r *request, name string, by int64) (int64, error) {
	for {
		v, err := s.e.Incr(r.ctx, name, by)
		if !errors.Is(err, quorum.ErrContended) {
			return v, err
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(s.e.NodeTimeout()/5) + 1)))
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return 0, err
		}
	}
}

// counterGet is GET of a counter: at least the last value an INCR
// returned, and below every value a later INCR returns; nil for a counter
// never increased.
func (s *Server) counterGet(r *request) (resp.Reply, error) {
	v, err := s.e.Counter(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return resp.Reply{}, err
	case v == 0:
		return resp.Null(), nil
	}
	return resp.Bulk(strconv.FormatInt(v, 10)), nil
}

// counterKey reports whether key is a counter: a fence_keys one, or an
// RFencedLock's token.
func (s *Server) counterKey(key []byte) bool {
	if redissonToken(key) {
		return true
	}
	for _, p := range s.conf().FenceKeys {
		if acl.Match(p, key) {
			return true
		}
	}
	return false
}

// counterCommands may name a counter; every other command that names one
// is refused (counterRefusal).
var counterCommands = map[string]bool{"incr": true, "incrby": true, "get": true}

// counterRefusal refuses a command that names a counter, other than INCR,
// INCRBY and GET: a counter lives in the masters' counters, and one
// master's key of that name means nothing. A script may name an
// RFencedLock's token here: RFencedLock's own scripts do (runFencedLock),
// and run refuses every other (tokenKeys).
func (s *Server) counterRefusal(name string, cm command, args [][]byte) error {
	if counterCommands[name] {
		return nil
	}
	patterns := len(s.conf().FenceKeys) > 0
	for _, k := range keysOf(cm.keys, args) {
		switch {
		case redissonToken(k) && cm.keys != scriptKeys:
			return withArgs(errFencedTokenKey, cString(k, 128))
		case patterns && s.counterKey(k) && !redissonToken(k):
			return withArgs(errCounterKey, cString(k, 128))
		}
	}
	return nil
}
