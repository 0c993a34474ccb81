package proxy

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// rwScript is one of Redisson's read lock scripts the proxy serves as a
// quorum operation of its own (quorum/rwlock.go).
type rwScript uint8

const (
	rwNone        rwScript = iota
	rwTake                 // RedissonReadLock.tryLockInnerAsync
	rwUnlock               // RedissonReadLock.unlockInnerAsync
	rwForce                // RedissonReadLock.forceUnlockAsync
	rwRenew                // renewal/ReadLockTask: the watchdog
	rwForceWrite           // RedissonWriteLock.forceUnlockAsync
	rwForceLock            // RedissonLock.forceUnlockAsync
	rwRenewLocks           // renewal/LockTask: the watchdog of RLocks and write locks
	rwWriteUnlock          // RedissonWriteLock.unlockInnerAsync
)

// redissonServed names, by the SHA-1 of its text, each read lock script
// served, the write lock's unlock, its and RLock's forceUnlock and the
// watchdog of RLocks and write locks, as redisson/redisson
// 66863978b4a9 sends them (integration/redissonrwread_test.go and
// redissonrw_test.go replay each).
var redissonServed = map[string]rwScript{
	"95553a6ff11176c18e71344e89d116b06fd6f753": rwTake,
	"6e1b10e11ac0a3ed8e902562ecd32ce01b553039": rwUnlock,
	"27dbe744e95c1d854a7f556cc6817030de2d0d01": rwForce,
	"38d2b478dfbe264ab67c221b7e4be62245f00ba0": rwRenew,
	"2e2cb2a3b13e2e80e4236ef6a25beaf365dba608": rwForceWrite,
	"605e338249a7a1d40df83b04f7658354f883b41b": rwForceLock,
	"6a3d31570dc6f4b0bd32bcdc8e75667747c6f635": rwRenewLocks,
	"21f5fb0f8ddfa9be5c3e0c9757c128796add75c6": rwWriteUnlock,
}

// rwNames names each script in errors.
var rwNames = [...]string{rwTake: "read lock tryLock", rwUnlock: "read lock unlock", rwForce: "read lock forceUnlock",
	rwRenew: "read lock watchdog renewal", rwForceWrite: "write lock forceUnlock", rwForceLock: "RLock forceUnlock",
	rwRenewLocks: "lock watchdog renewal", rwWriteUnlock: "write lock unlock"}

// runReadLock serves a read lock script called with Redisson's KEYS and
// ARGV layout; any other call is refused, since the scripts name keys
// from their arguments. On a key of another type on a quorum of nodes it
// answers Redis's error of the script's first line (each script served
// is one line).
func (s *Server) runReadLock(r *request, op rwScript) (resp.Reply, error) {
	reply, err := s.readLockOp(r, op)
	if errors.Is(err, quorum.ErrWrongType) {
		return resp.Reply{}, withArgs(errScriptWrongType, scriptSHA(r))
	}
	return reply, err
}

// scriptSHA is the SHA-1 a script call names: EVALSHA's argument, or
// that of EVAL's body.
func scriptSHA(r *request) string {
	if strings.HasPrefix(r.name, "evalsha") {
		return ascii.Lower(r.args[1])
	}
	return script.SHA1Hex(r.args[1])
}

// readLockOp is runReadLock's operation.
func (s *Server) readLockOp(r *request, op rwScript) (resp.Reply, error) {
	rest, nk, err := scriptArgs(r)
	if err != nil {
		return resp.Reply{}, err
	}
	keys, args := make([]string, nk), make([]string, len(rest)-nk)
	for i, k := range rest[:nk] {
		keys[i] = string(k)
	}
	for i, a := range rest[nk:] {
		args[i] = string(a)
	}
	layout := func(want string) error { return withArgs(errRedissonLayout, rwNames[op], want) }
	switch op {
	case rwTake:
		if nk != 2 || len(args) != 3 {
			return resp.Reply{}, layout("2 keys (the lock, the timeout prefix) and 3 arguments (lease, name, write name)")
		}
		if args[2] != args[1]+":write" {
			// The script lets a reader in beside the write lock it names:
			// Redisson names its own thread's, and another would put a
			// reader beside another thread's writer.
			return resp.Reply{}, layout("the write name is the reader's name and \":write\"")
		}
		return s.takeRead(r, quorum.ReadLock{Key: keys[0], TimeoutPrefix: keys[1], Name: args[1], WriteName: args[2]}, rest[nk])
	case rwUnlock:
		if nk != 5 || len(args) != 4 {
			return resp.Reply{}, layout("5 keys (the lock, the channel, the timeout prefix, the key prefix, the latch) and 4 arguments (message, name, publish command, latch timeout)")
		}
		return s.unlockRead(r, quorum.ReadUnlock{Key: keys[0], Channel: keys[1], TimeoutPrefix: keys[2], KeyPrefix: keys[3], Latch: keys[4],
			Message: args[0], Name: args[1], Publish: args[2], LatchPX: args[3]})
	case rwForce, rwForceWrite, rwForceLock:
		if nk != 2 || len(args) != 2 {
			return resp.Reply{}, layout("2 keys (the lock, the channel) and 2 arguments (message, publish command)")
		}
		r.op = quorum.OpRelease
		if !s.conf().AllowForceDel {
			return resp.Reply{}, errForceUnlock
		}
		if !publishCommand(args[1]) {
			return resp.Reply{}, layout("PUBLISH or SPUBLISH as the publish command")
		}
		f := quorum.ForceUnlock{Key: keys[0], Channel: keys[1], Message: args[0], Publish: args[1], Mode: "read"}
		switch op {
		case rwForceWrite:
			f.Mode = "write"
		case rwForceLock:
			f.Mode = "" // RLock's: whatever the key holds, as its DEL
		}
		v, err := s.e.ForceUnlockRW(r.ctx, f)
		if err != nil {
			return resp.Reply{}, err
		}
		return resp.Int(v), nil
	case rwRenew:
		return s.renewRead(r, keys, args, layout)
	case rwWriteUnlock:
		if nk != 3 || len(args) != 5 {
			return resp.Reply{}, layout("3 keys (the lock, the channel, the latch) and 5 arguments (message, lease, name, publish command, latch timeout)")
		}
		return s.unlockWrite(r, quorum.WriteUnlock{Key: keys[0], Channel: keys[1], Latch: keys[2],
			Message: args[0], Lease: args[1], Name: args[2], Publish: args[3], LatchPX: args[4]})
	case rwRenewLocks:
		if nk == 0 || len(args) != nk+1 {
			return resp.Reply{}, layout("the locks as keys, and the lease, then each lock's name")
		}
		r.op = quorum.OpExtend
		ttl, err := s.parseMillis([]byte(args[0]))
		if err != nil {
			return resp.Reply{}, err
		}
		return renewReply(s.e.RenewLocks(r.ctx, keys, args, ttl))
	}
	return resp.Reply{}, errUnsupportedScript
}

// braced is Redisson's key prefix of a lock (RedissonObject.suffixName):
// the name in braces, unless it already has a hash tag.
func braced(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// timeoutPrefix is the prefix of a reader's timeout keys, as Redisson's
// RedissonReadLock.getReadWriteTimeoutNamePrefix names it: the scripts
// build keys from it, so no other prefix is taken (it could name another
// lock's key).
func timeoutPrefix(lock, reader string) string {
	return braced(lock) + ":" + reader + ":rwlock_timeout"
}

// publishCommand reports whether cmd is one a read lock script may send
// its message with.
func publishCommand(cmd string) bool {
	return ascii.EqualFold(cmd, "publish") || ascii.EqualFold(cmd, "spublish")
}

// reservedPrefix refuses a timeout prefix whose keys could be the
// proxies' own.
func reservedPrefix(prefix string) error {
	if quorum.ReservedPrefix(prefix) {
		return withArgs(errReservedKey, cString([]byte(prefix+":"), 128))
	}
	return nil
}

// takeRead serves a read lock's take: nil when granted, the PTTL when a
// writer holds it.
func (s *Server) takeRead(r *request, l quorum.ReadLock, leaseArg []byte) (resp.Reply, error) {
	r.op = quorum.OpAcquire
	ttl, err := s.parseMillis(leaseArg)
	if err != nil {
		return resp.Reply{}, err
	}
	if err := reservedPrefix(l.TimeoutPrefix); err != nil {
		return resp.Reply{}, err
	}
	if l.TimeoutPrefix != timeoutPrefix(l.Key, l.Name) {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwTake], "the timeout prefix Redisson names from the lock and the reader: "+timeoutPrefix(l.Key, "<name>"))
	}
	if s.Draining() {
		return resp.Reply{}, errDraining
	}
	// Not tried again when split: its undo on a node whose reply was
	// lost can run before the take lands there.
	t, err := s.e.TakeRead(r.ctx, l, ttl)
	var oe *quorum.OutcomeError
	switch {
	case err == nil && !t.Lease.Valid(time.Now()):
		s.e.UndoRead(r.ctx, t)
		return resp.Reply{}, errLate
	case err == nil:
		s.warnFailures(t.Lease.Failures)
		r.validity = t.Lease.Validity
		return resp.Null(), nil
	case errors.As(err, &oe) && !oe.Unavailable && !oe.Expired:
		s.warnFailures(oe.Failures)
		return resp.Int(t.PTTL.Milliseconds()), nil
	}
	return resp.Reply{}, err
}

// unlockRead serves a read lock's unlock.
func (s *Server) unlockRead(r *request, u quorum.ReadUnlock) (resp.Reply, error) {
	r.op = quorum.OpRelease
	if !publishCommand(u.Publish) {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwUnlock], "PUBLISH or SPUBLISH as the publish command")
	}
	if px, err := strconv.ParseInt(u.LatchPX, 10, 64); err != nil || px <= 0 || time.Duration(px)*time.Millisecond > s.e.MaxTTL() {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwUnlock], "a latch timeout in milliseconds above 0 and within max_ttl")
	}
	if err := reservedPrefix(u.TimeoutPrefix); err != nil {
		return resp.Reply{}, err
	}
	if u.TimeoutPrefix != timeoutPrefix(u.Key, u.Name) || u.KeyPrefix != braced(u.Key) ||
		!strings.HasPrefix(u.Latch, "redisson_unlock_latch:"+braced(u.Key)+":") {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwUnlock], "the timeout prefix, key prefix and latch Redisson names from the lock: "+
			timeoutPrefix(u.Key, "<name>")+", "+braced(u.Key)+", redisson_unlock_latch:"+braced(u.Key)+":<id>")
	}
	v, err := s.e.UnlockRead(r.ctx, u)
	if err != nil {
		return resp.Reply{}, err
	}
	return valueReply(v), nil
}

// unlockWrite serves a write lock's unlock. Its count-down sets the
// lease, which must be one the proxy grants.
func (s *Server) unlockWrite(r *request, u quorum.WriteUnlock) (resp.Reply, error) {
	r.op = quorum.OpRelease
	if !publishCommand(u.Publish) {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwWriteUnlock], "PUBLISH or SPUBLISH as the publish command")
	}
	if px, err := strconv.ParseInt(u.LatchPX, 10, 64); err != nil || px <= 0 || time.Duration(px)*time.Millisecond > s.e.MaxTTL() {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwWriteUnlock], "a latch timeout in milliseconds above 0 and within max_ttl")
	}
	if _, err := s.parseMillis([]byte(u.Lease)); err != nil {
		return resp.Reply{}, err
	}
	if !strings.HasPrefix(u.Latch, "redisson_unlock_latch:"+braced(u.Key)+":") {
		return resp.Reply{}, withArgs(errRedissonLayout, rwNames[rwWriteUnlock], "the latch Redisson names from the lock: redisson_unlock_latch:"+braced(u.Key)+":<id>")
	}
	v, err := s.e.UnlockWrite(r.ctx, u)
	if err != nil {
		return resp.Reply{}, err
	}
	return valueReply(v), nil
}

// renewRead serves the read locks' watchdog renewal: KEYS are pairs (a
// lock, its key prefix); ARGV the lease, then per pair a count and that
// many reader names.
func (s *Server) renewRead(r *request, keys, args []string, layout func(string) error) (resp.Reply, error) {
	r.op = quorum.OpExtend
	const want = "pairs of keys (a lock, its key prefix), and the lease, then for each pair a count and that many names"
	if len(keys) == 0 || len(keys)%2 != 0 || len(args) < 1 {
		return resp.Reply{}, layout(want)
	}
	at := 1
	for i := 1; i < len(keys); i += 2 {
		if err := reservedPrefix(keys[i]); err != nil {
			return resp.Reply{}, err
		}
		if at >= len(args) {
			return resp.Reply{}, layout(want)
		}
		c, err := strconv.Atoi(args[at])
		if err != nil || c < 0 || c > len(args)-at-1 {
			return resp.Reply{}, layout(want)
		}
		for _, name := range args[at+1 : at+1+c] {
			// A name's timeout keys are the prefix, ":", the name, ...
			if err := reservedPrefix(keys[i] + ":" + name); err != nil {
				return resp.Reply{}, err
			}
		}
		at += 1 + c
	}
	if at != len(args) {
		return resp.Reply{}, layout(want)
	}
	for i := 1; i < len(keys); i += 2 {
		if keys[i] != braced(keys[i-1]) {
			return resp.Reply{}, layout("each lock's key prefix as Redisson names it: " + braced(keys[i-1]))
		}
	}
	ttl, err := s.parseMillis([]byte(args[0]))
	if err != nil {
		return resp.Reply{}, err
	}
	return renewReply(s.e.RenewRead(r.ctx, keys, args, ttl))
}

// renewReply is a watchdog renewal's reply: 1 or 0 per lock.
func renewReply(got []int64, err error) (resp.Reply, error) {
	if err != nil {
		return resp.Reply{}, err
	}
	items := make([]resp.Reply, len(got))
	for i, v := range got {
		items[i] = resp.Int(v)
	}
	return resp.Array(items...), nil
}
