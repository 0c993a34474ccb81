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
func (s *Server) set(r *request) resp.Reply {
	a, l, ttl, rep, ok := s.parseSet(r)
	switch {
	case !ok:
		return s.refused(quorum.OpAcquire, rep)
	case a.Cond != resp.NoCondition:
		return s.setIf(r, a, l, ttl) // an extend: served while draining (cas.go)
	case s.Draining():
		return s.refused(quorum.OpAcquire, errDraining)
	}
	return s.outcome(s.acquire(r, l, ttl), resp.OK(), resp.Null(), "set")
}

// parseSet reads SET's arguments as a lock and its TTL, or the reply
// that refuses them.
func (s *Server) parseSet(r *request) (resp.SetArgs, quorum.Lock, time.Duration, resp.Reply, bool) {
	refuse := func(rep resp.Reply) (resp.SetArgs, quorum.Lock, time.Duration, resp.Reply, bool) {
		return resp.SetArgs{}, quorum.Lock{}, 0, rep, false
	}
	a, err := resp.ParseSet(r.args)
	if err != nil {
		return refuse(resp.Error(err.Error()))
	}
	ttl, err := a.TTL(time.Now().UnixMilli())
	if err != nil {
		return refuse(resp.Error(err.Error()))
	}
	if a.Unit == resp.NoExpiry {
		if s.conf().DefaultTTL == 0 {
			return refuse(resp.Error("ERR a lock needs a TTL: SET key token NX PX milliseconds (or set default_ttl)"))
		}
		ttl = s.conf().DefaultTTL
	}
	if err := s.checkTTL(ttl, "set"); err != nil {
		return refuse(resp.Error(err.Error()))
	}
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return refuse(rep)
	}
	return a, quorum.Lock{Keys: []string{a.Key}, Token: a.Token}, ttl, resp.Reply{}, true
}

// reservedKey refuses the proxies' own keys (quorum.Reserved): the
// membership record, which a client could otherwise overwrite to hide a
// node's restart, and the fencing counters and hold records, which it
// could reset or forge.
func reservedKey(keys [][]byte) (resp.Reply, bool) {
	for _, k := range keys {
		if quorum.Reserved(string(k)) {
			return resp.Error("ERR key '" + string(cString(k, 128)) + "' is reserved for redlock-proxy"), true
		}
	}
	return resp.Reply{}, false
}

// GET key
func (s *Server) get(r *request) resp.Reply {
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return s.refused(quorum.OpRead, rep)
	}
	if s.counterKey(r.args[1]) {
		return s.counterGet(r)
	}
	st, err := s.e.Inspect(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return s.fail(err)
	case !st.Held:
		return resp.Null()
	case st.Type != "":
		return resp.Error("WRONGTYPE Operation against a key holding the wrong kind of value")
	}
	return resp.Bulk(st.Token)
}

// PTTL key
func (s *Server) pttl(r *request) resp.Reply {
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return s.refused(quorum.OpRead, rep)
	}
	st, err := s.e.Inspect(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return s.fail(err)
	case !st.Held:
		return resp.Int(-2)
	}
	return validityMillis(st)
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
func (s *Server) ttl(r *request) resp.Reply {
	rep := s.pttl(r)
	if ms, ok := rep.Integer(); ok && ms > 0 {
		return resp.Int(ms / 1000) // rounded down: never more than is left
	}
	return rep
}

// EXISTS key [key ...]
func (s *Server) exists(r *request) resp.Reply {
	if rep, bad := reservedKey(r.args[1:]); bad {
		return s.refused(quorum.OpRead, rep)
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
			return s.fail(err)
		}
		if st.Held {
			n += k
		}
	}
	return resp.Int(n)
}

// DEL key [key ...]
func (s *Server) del(r *request) resp.Reply {
	latches := unlockLatches(r.args[1:])
	if !s.conf().AllowForceDel && !latches {
		return resp.Error("ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use")
	}
	if rep, bad := reservedKey(r.args[1:]); bad {
		return rep
	}
	keys := make([]string, len(r.args)-1)
	for i, k := range r.args[1:] {
		keys[i] = string(k)
	}
	n, err := s.e.Delete(r.ctx, keys)
	if err != nil {
		return s.fail(err)
	}
	if !latches {
		s.conf().Log.Info("forced delete", "keys", len(keys), "deleted", n, "addr", r.conn.RemoteAddr())
	}
	return resp.Int(int64(n))
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
// reply: a grant whose validity ran out is released and denied.
func (s *Server) acquire(r *request, l quorum.Lock, ttl time.Duration) error {
	lease, err := s.e.Acquire(r.ctx, l, ttl)
	if split(err) && s.pauseForRetry(r) {
		lease, err = s.e.Acquire(r.ctx, l, ttl)
	}
	s.warnFailures(lease.Failures)
	if err == nil && !lease.Valid(time.Now()) {
		s.e.Release(context.WithoutCancel(r.ctx), l)
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
func (s *Server) checkTTL(ttl time.Duration, cmd string) error {
	switch {
	case ttl < s.e.MinTTL():
		return fmt.Errorf("ERR invalid expire time in '%s' command: %v is under min_ttl (%v)", cmd, ttl, s.e.MinTTL())
	case ttl > s.e.MaxTTL():
		return fmt.Errorf("ERR invalid expire time in '%s' command: %v is over max_ttl (%v)", cmd, ttl, s.e.MaxTTL())
	}
	return nil
}

// commandName is the command the client sent, as Redis names it in an
// error: "evalsha" for an EVALSHA, whatever its case.
func commandName(r *request) string { return strings.ToLower(string(r.args[0])) }

// parseMillis reads a TTL in milliseconds as a script argument carries it.
func (s *Server) parseMillis(b []byte, cmd string) (time.Duration, error) {
	ms, ok := resp.ParseInt(b)
	switch {
	case !ok:
		return 0, resp.ErrNotInteger
	case ms <= 0:
		return 0, fmt.Errorf("ERR invalid expire time in '%s' command", cmd)
	case ms > s.e.MaxTTL().Milliseconds(): // before multiplying: no overflow
		return 0, fmt.Errorf("ERR invalid expire time in '%s' command: %dms is over max_ttl (%v)", cmd, ms, s.e.MaxTTL())
	}
	ttl := time.Duration(ms) * time.Millisecond
	return ttl, s.checkTTL(ttl, cmd)
}

// outcome turns an operation's error into its reply: success if none,
// fail if the nodes denied it, an error reply if they could not decide.
// cmd names the command the client sent, as Redis names it in errors.
func (s *Server) outcome(err error, success, fail resp.Reply, cmd string) resp.Reply {
	switch {
	case err == nil:
		return success
	case errors.Is(err, quorum.ErrOverMaxTTL):
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: the extended TTL would be over max_ttl (%v)", cmd, s.e.MaxTTL()))
	case errors.Is(err, quorum.ErrDenied):
		if oe := (*quorum.OutcomeError)(nil); errors.As(err, &oe) {
			s.warnFailures(oe.Failures)
		}
		return fail
	}
	return s.fail(err)
}

// fail logs an operation that could not be decided and returns its reply.
// Debug only: during an outage every request fails, and the engine's
// monitor logs each node's state changes once instead.
func (s *Server) fail(err error) resp.Reply {
	s.conf().Log.Debug("no quorum", "err", err)
	return replyForError(err)
}

func (s *Server) warnFailures(err error) {
	if err != nil {
		s.conf().Log.Debug("node failed", "err", err)
	}
}
