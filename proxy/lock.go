package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// errLate is a grant whose validity ran out before the reply was written.
var errLate = fmt.Errorf("%w: validity expired before the reply", quorum.ErrDenied)

// SET key token NX PX milliseconds (or EX seconds, PXAT, EXAT; any order)
func (s *Server) set(r *request) (resp.Reply, error) {
	a, l, ttl, err := s.parseSet(r)
	switch {
	case err != nil:
		return resp.Reply{}, err
	case a.Cond != resp.NoCondition:
		r.op = quorum.OpExtend
		return s.setIf(r, a, l, ttl) // an extend: served while draining (cas.go)
	case s.Draining():
		return resp.Reply{}, errDraining
	}
	return s.outcome(s.acquire(r, l, ttl), resp.OK(), resp.Null())
}

// parseSet reads SET's arguments as a lock and its TTL.
func (s *Server) parseSet(r *request) (resp.SetArgs, quorum.Lock, time.Duration, error) {
	a, err := resp.ParseSet(r.args)
	if err != nil {
		return resp.SetArgs{}, quorum.Lock{}, 0, err
	}
	ttl, err := a.TTL(time.Now().UnixMilli())
	if err != nil {
		return resp.SetArgs{}, quorum.Lock{}, 0, err
	}
	if a.Unit == resp.NoExpiry {
		if s.conf().DefaultTTL == 0 {
			return resp.SetArgs{}, quorum.Lock{}, 0, errNeedsTTL
		}
		ttl = s.conf().DefaultTTL
	}
	if err := s.checkTTL(ttl); err != nil {
		return resp.SetArgs{}, quorum.Lock{}, 0, err
	}
	if err := reservedKeys(r.args[1:2]); err != nil {
		return resp.SetArgs{}, quorum.Lock{}, 0, err
	}
	return a, quorum.Lock{Keys: []string{a.Key}, Token: a.Token}, ttl, nil
}

// reservedKeys refuses the proxies' own keys (quorum.Reserved): the
// membership record, which a client could otherwise overwrite to hide a
// node's restart, and the fencing counters and hold records, which it
// could reset or forge.
func reservedKeys(keys [][]byte) error {
	for _, k := range keys {
		if quorum.Reserved(k) {
			return withArgs(errReservedKey, cString(k, 128))
		}
	}
	return nil
}

// read serves a read of one key as a quorum of the nodes agree on it: the
// proxies' own keys refused, missing if no quorum holds the key,
// wrongType (if not nil) if it holds one of another type than a string,
// else what of makes of its state.
func (s *Server) read(r *request, key []byte, missing resp.Reply, wrongType error, of func(quorum.State) (resp.Reply, error)) (resp.Reply, error) {
	if err := reservedKeys([][]byte{key}); err != nil {
		return resp.Reply{}, err
	}
	st, err := s.e.Inspect(r.ctx, string(key))
	switch {
	case err != nil:
		return resp.Reply{}, err
	case !st.Held:
		return missing, nil
	case st.Type != "" && wrongType != nil:
		return resp.Reply{}, wrongType
	}
	return of(st)
}

// GET key
func (s *Server) get(r *request) (resp.Reply, error) {
	if s.counterKey(r.args[1]) && !quorum.Reserved(string(r.args[1])) {
		return s.counterGet(r)
	}
	if s.latchKey(r.args[1]) && !quorum.Reserved(string(r.args[1])) {
		return s.latchGet(r)
	}
	return s.read(r, r.args[1], resp.Null(), errWrongType, func(st quorum.State) (resp.Reply, error) {
		return resp.Bulk(st.Token), nil
	})
}

// PTTL key
func (s *Server) pttl(r *request) (resp.Reply, error) {
	return s.read(r, r.args[1], resp.Int(-2), nil, func(st quorum.State) (resp.Reply, error) {
		return validityMillis(st), nil
	})
}

// validityMillis is a held key's validity as PTTL replies it: -1 for a
// key without expiry.
func validityMillis(st quorum.State) resp.Reply {
	if st.Validity < 0 {
		return resp.Int(-1)
	}
	return resp.Int(st.Validity.Milliseconds())
}

// TTL key
func (s *Server) ttl(r *request) (resp.Reply, error) {
	rep, err := s.pttl(r)
	if ms, ok := rep.Integer(); ok && ms > 0 {
		return resp.Int(ms / 1000), nil // rounded down: never more than is left
	}
	return rep, err
}

// EXISTS key [key ...]
func (s *Server) exists(r *request) (resp.Reply, error) {
	if err := reservedKeys(r.args[1:]); err != nil {
		return resp.Reply{}, err
	}
	// A key named twice is read once and counted twice, so that EXISTS k k
	// is 0 or 2, never 1, while others lock and unlock k.
	times := make(map[string]int64, len(r.args)-1)
	for _, key := range r.args[1:] {
		times[string(key)]++
	}
	n := int64(0)
	for key, k := range times {
		st, err := s.e.Inspect(r.ctx, key)
		if err != nil {
			return resp.Reply{}, err
		}
		if st.Held {
			n += k
		}
	}
	return resp.Int(n), nil
}

// DEL key [key ...]
func (s *Server) del(r *request) (resp.Reply, error) {
	latches := unlockLatches(r.args[1:])
	if !s.conf().AllowForceDel && !latches {
		return resp.Reply{}, errForceDel
	}
	if err := reservedKeys(r.args[1:]); err != nil {
		return resp.Reply{}, err
	}
	keys := make([]string, len(r.args)-1)
	for i, k := range r.args[1:] {
		keys[i] = string(k)
	}
	n, err := s.e.Delete(r.ctx, keys)
	if err != nil {
		return resp.Reply{}, err
	}
	if !latches {
		s.conf().Log.Info("forced delete", "keys", len(keys), "deleted", n, "addr", r.conn.RemoteAddr())
	}
	return resp.Int(int64(n)), nil
}

// latchPrefix names Redisson's unlock latches: short-lived markers its
// unlock script sets (0 or 1, with a PX) so that a retried unlock gets the
// first one's answer, and that Redisson deletes right after the unlock.
// They are not locks, so DEL of them is served without allow_force_del.
const latchPrefix = "redisson_unlock_latch:"

// unlockLatches reports whether every key is a Redisson unlock latch.
func unlockLatches(keys [][]byte) bool {
	for _, k := range keys {
		if !strings.HasPrefix(string(k), latchPrefix) {
			return false
		}
	}
	return len(keys) > 0
}

// acquire takes l for ttl, and checks the lease once more just before the
// reply: a grant whose validity ran out is released and denied. A retry's
// validity counts from the first try, as the client's does.
func (s *Server) acquire(r *request, l quorum.Lock, ttl time.Duration) error {
	first := time.Now()
	lease, err := s.e.Acquire(r.ctx, l, ttl)
	if split(err) && s.pauseForRetry(r) {
		lease, err = s.e.Acquire(r.ctx, l, ttl)
		lease = lease.From(first)
	}
	s.warnFailures(lease.Failures)
	if err == nil && !lease.Valid(time.Now()) {
		s.e.UndoAcquire(context.WithoutCancel(r.ctx), l, lease)
		err = errLate
	}
	if err == nil {
		r.validity = lease.Validity
	}
	return err
}

// split reports an acquire that failed undecided with the nodes that
// answered split: some granted, some denied, and the nodes that failed
// could have made either side a quorum. Most often that is a holder's
// key expiring a few milliseconds apart on the nodes (its copies landed
// that far apart), where one Redis answers from after the expiry. Its
// grants were undone; another try, a moment later, usually decides it.
func split(err error) bool {
	if err == nil {
		return false // before oe, which errors.As puts on the heap
	}
	var oe *quorum.OutcomeError
	return errors.As(err, &oe) && oe.Unavailable && oe.Outcome.Granted > 0 && oe.Outcome.Denied > 0
}

// pauseForRetry waits the node timeout, the longest a holder's copies
// can land apart, and reports whether r's deadline leaves time for the
// wait and one more try.
func (s *Server) pauseForRetry(r *request) bool {
	d := s.e.NodeTimeout()
	if dl, ok := r.ctx.Deadline(); ok && time.Until(dl) < 3*d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.ctx.Done():
		return false
	}
}

// extended checks an extend's lease once more just before the reply.
func (s *Server) extended(lease quorum.Lease, err error) error {
	s.warnFailures(lease.Failures)
	if err == nil && !lease.Valid(time.Now()) {
		err = errLate
	}
	return err
}

// checkTTL refuses a TTL outside [min_ttl, max_ttl].
func (s *Server) checkTTL(ttl time.Duration) error {
	switch {
	case ttl < s.e.MinTTL():
		return withArgs(errTTLUnder, ttl, s.e.MinTTL())
	case ttl > s.e.MaxTTL():
		return withArgs(errTTLOver, ttl, s.e.MaxTTL())
	}
	return nil
}

// parseMillis reads a TTL in milliseconds as a script argument carries it.
func (s *Server) parseMillis(b []byte) (time.Duration, error) {
	ms, ok := resp.ParseInt(b)
	switch {
	case !ok:
		return 0, resp.ErrNotInteger
	case ms <= 0:
		return 0, resp.ErrExpireTime
	case ms > s.e.MaxTTL().Milliseconds(): // before multiplying: no overflow
		return 0, withArgs(errTTLArgOver, ms, "ms", s.e.MaxTTL())
	}
	ttl := time.Duration(ms) * time.Millisecond
	return ttl, s.checkTTL(ttl)
}

// outcome turns an operation's error into its reply: success if none,
// fail if the nodes denied it, else the error (errorReply's).
func (s *Server) outcome(err error, success, fail resp.Reply) (resp.Reply, error) {
	switch {
	case err == nil:
		return success, nil
	case errors.Is(err, quorum.ErrOverMaxTTL): // a denial, but not "taken"
		return resp.Reply{}, err
	case errors.Is(err, quorum.ErrDenied):
		if oe := (*quorum.OutcomeError)(nil); errors.As(err, &oe) {
			s.warnFailures(oe.Failures)
		}
		return fail, nil
	}
	return resp.Reply{}, err
}

func (s *Server) warnFailures(err error) {
	if err != nil {
		s.conf().Log.Debug("node failed", "err", err)
	}
}
