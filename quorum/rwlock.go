package quorum

// Redisson's read lock (RReadWriteLock's readLock()), served as quorum
// operations of its own. Its scripts name keys the generic effect path
// cannot take: each reader's hold has a timeout key named from KEYS[2]
// (take, unlock) or from the hash's fields (the unlock's expiry, the
// watchdog's renewal). The proxy knows these exact script bodies by
// their SHA-1 and calls the operations here, which run Redisson's
// logic per node (lua/rwlock_*.lua) and decide by the Redlock rules.
//
// On one node, a reader holds the lock while the hash has its field
// (mode "read", or mode "write" with the same thread's write lock), and
// the hash lives at least as long as the reader's timeout key, which has
// the reader's lease: a take sets the hash's expiry to at least the
// lease, and an unlock shortens it no further than the longest timeout
// key left. The write lock (the effect path) takes a node only where
// the hash is missing, and a reader only where it is not another's
// write lock. Each needs a quorum, so a reader's quorum and a writer's
// meet in a node that denied the later of them while the earlier held:
// never a writer beside another thread's reader (rwlockcheck_test.go
// checks it). A reader under its own thread's write lock (Redisson's
// downgrade) shares the hash with it; so the write lock's unlock and its
// watchdog are served here too, and never shorten the hash while another
// holder is in it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// ReadLock names one reader of a read lock, with Redisson's KEYS and
// ARGV (RedissonReadLock.tryLockInnerAsync).
type ReadLock struct {
	Key           string // KEYS[1]: the lock's hash
	TimeoutPrefix string // KEYS[2]: the reader's timeout keys are this, ":", n
	Name          string // ARGV[2]: the reader (client id and thread)
	WriteName     string // ARGV[3]: the same thread's write lock
}

// ReadTaken is a read lock take's outcome.
type ReadTaken struct {
	Lease Lease // when granted
	// PTTL is a denial's reply: how long until a quorum could grant.
	PTTL   time.Duration
	l      ReadLock
	nonce  string
	landed []bool
}

// ReadUnlock is a read lock's unlock, with Redisson's KEYS and ARGV
// (RedissonReadLock.unlockInnerAsync).
type ReadUnlock struct {
	Key, Channel, TimeoutPrefix, KeyPrefix, Latch string // KEYS[1..5]
	Message, Name, Publish, LatchPX               string // ARGV[1..4]
}

// rwNode is the part of Node that runs the read lock's scripts.
type rwNode interface {
	TakeRead(ctx context.Context, l ReadLock, ttl time.Duration, nonce string) (ReadTake, error)
	UndoRead(ctx context.Context, l ReadLock, nonce string) error
	UnlockRead(ctx context.Context, u ReadUnlock) (ReadRelease, error)
	UnlockWrite(ctx context.Context, u WriteUnlock) (WriteRelease, error)
	ForceUnlock(ctx context.Context, key, mode string) (int64, error)
	// RenewRead and RenewLocks take until as Node.Extend does.
	RenewRead(ctx context.Context, keys, args []string, until int64) ([]int64, error)
	RenewLocks(ctx context.Context, keys, args []string, until int64) ([]int64, error)
	publisher
}

// rwOp runs op on every node.
func rwOp[T any](ctx context.Context, e *Engine, op func(context.Context, rwNode) (T, error)) []result[T] {
	return fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (T, error) { return op(ctx, n) })
}

// countedNodes says, per node, whether its answers count (not quarantined).
func (e *Engine) countedNodes() []bool {
	c := make([]bool, len(e.nodes))
	for i := range c {
		c[i] = e.counts(i)
	}
	return c
}

// TakeRead takes a read lock for one reader with the given lease (Redlock
// steps 1-5, as Acquire). Granted: err is nil. Denied (a writer holds
// it): err matches ErrDenied and PTTL is the reply. Otherwise err
// matches ErrUnavailable, or ErrDenied with the validity run out; what
// the take may have added is undone wherever it may have landed.
func (e *Engine) TakeRead(ctx context.Context, l ReadLock, ttl time.Duration) (ReadTaken, error) {
	start := time.Now()
	nonce := newNonce()
	results := rwOp(ctx, e, func(ctx context.Context, n rwNode) (ReadTake, error) {
		return n.TakeRead(ctx, l, ttl, nonce)
	})
	d := decideReadTake(readTakeVotes{results: results, counted: e.countedNodes(), quorum: e.quorum,
		ttl: ttl, start: start, now: time.Now(), driftFactor: e.cfg.DriftFactor})
	e.report(OpAcquire, start, d.decision)
	t := ReadTaken{Lease: d.lease, PTTL: d.pttl, l: l, nonce: nonce, landed: d.landed}
	if d.err != nil {
		e.undoRead(ctx, l, nonce, d.undo)
	}
	return t, d.err
}

// UndoRead gives a granted take back (its validity ran out before the
// reply, or the proxy is draining): on each node where it may have
// landed, the hold it added, by its nonce.
func (e *Engine) UndoRead(ctx context.Context, t ReadTaken) {
	e.undoRead(ctx, t.l, t.nonce, t.landed)
}

// undoRead removes the take with nonce on the nodes undo names. As
// Acquire's undo, it goes past the breaker and the caller's cancellation.
func (e *Engine) undoRead(ctx context.Context, l ReadLock, nonce string, undo []bool) {
	fanOutWithin(context.WithoutCancel(ctx), e, e.cfg.NodeTimeout, false, nil, func(ctx context.Context, i int, n Node) (struct{}, error) {
		if !undo[i] {
			return struct{}{}, nil
		}
		return struct{}{}, n.UndoRead(ctx, l, nonce)
	})
}

// UnlockRead releases one hold of a reader and answers as Redisson's
// unlock on one Redis: nil (not held), 0 (still locked) or 1 (free now),
// or an earlier run's latched answer. The unlock message is published
// once the quorum has decided, on every node (the proxies' subscribers
// get it once), when one Redis would publish it.
func (e *Engine) UnlockRead(ctx context.Context, u ReadUnlock) (Value, error) {
	return unlockRW(ctx, e, func(ctx context.Context, n rwNode) (ReadRelease, error) {
		return n.UnlockRead(ctx, u)
	}, decideReadRelease, u.Publish, u.Channel, u.Message)
}

// unlockRW runs an unlock on every node, decides it, and publishes the
// message (with cmd, on channel) once the quorum decided it is due.
func unlockRW[T any](ctx context.Context, e *Engine, op func(context.Context, rwNode) (T, error),
	decide func([]result[T], []bool, int, error) readReleaseDecision, cmd, channel, message string) (Value, error) {
	start := time.Now()
	results := rwOp(ctx, e, op)
	d := decide(results, e.countedNodes(), e.quorum, failures(results))
	e.observe(OpRelease, start, d.err)
	if d.err != nil {
		return Value{}, d.err
	}
	if d.publish {
		e.publishDecided(ctx, cmd, channel, message)
	}
	return d.reply, nil
}

// WriteUnlock is a write lock's unlock, with Redisson's KEYS and ARGV
// (RedissonWriteLock.unlockInnerAsync).
type WriteUnlock struct {
	Key, Channel, Latch                    string // KEYS[1..3]
	Message, Lease, Name, Publish, LatchPX string // ARGV[1..5]
}

// UnlockWrite releases one hold of a write lock and answers as Redisson's
// unlock on one Redis: nil (not held), 0 (counted down, still held), 1
// (released; a reader the same thread took under it keeps the lock, now
// in mode read), or an earlier run's latched answer. It is served here
// rather than by its effect, which refuses a change to a hash another
// token holds (that reader). The message is published once the quorum
// has decided, when one Redis would publish it.
func (e *Engine) UnlockWrite(ctx context.Context, u WriteUnlock) (Value, error) {
	return unlockRW(ctx, e, func(ctx context.Context, n rwNode) (WriteRelease, error) {
		return n.UnlockWrite(ctx, u)
	}, decideWriteRelease, u.Publish, u.Channel, u.Message)
}

// ForceUnlock is Redisson's forceUnlock of a lock, with its KEYS and ARGV
// (RedissonReadLock, RedissonWriteLock and RedissonLock's
// forceUnlockAsync, which differ in the mode they delete).
type ForceUnlock struct {
	Key, Channel     string // KEYS[1..2]
	Message, Publish string // ARGV[1..2]
	// Mode is the read-write lock's mode it deletes, "read" or "write";
	// "" deletes whatever the key holds (an RLock's).
	Mode string
}

// ForceUnlockRW deletes a lock in f.Mode, whoever holds it, as
// Redisson's forceUnlock: 1 if it was locked so (the message is then
// published), else 0.
func (e *Engine) ForceUnlockRW(ctx context.Context, f ForceUnlock) (int64, error) {
	start := time.Now()
	results := rwOp(ctx, e, func(ctx context.Context, n rwNode) (int64, error) {
		return n.ForceUnlock(ctx, f.Key, f.Mode)
	})
	v, err := decideReadForce(results, e.countedNodes(), e.quorum, failures(results))
	e.observe(OpRelease, start, err)
	if err == nil && v == 1 {
		e.publishDecided(ctx, f.Publish, f.Channel, f.Message)
	}
	return v, err
}

// RenewRead runs Redisson's read lock watchdog renewal (keys: pairs of a
// lock's hash and its key prefix; args: the lease, then per pair a count
// and the reader names) and answers 1 or 0 per pair, each decided by its
// own quorum (decideRenew).
func (e *Engine) RenewRead(ctx context.Context, keys, args []string, ttl time.Duration) ([]int64, error) {
	start := time.Now()
	results := fanOut(ctx, e, func(nctx context.Context, i int, n Node) ([]int64, error) {
		return dated(nctx, ctx, e, i, func(nctx context.Context, until int64) ([]int64, error) { return n.RenewRead(nctx, keys, args, until) })
	})
	out, err := decideRenew(results, e.countedNodes(), e.quorum, len(keys)/2, ttl, start, time.Now(), e.cfg.DriftFactor)
	e.observe(OpExtend, start, err)
	return out, err
}

// RenewLocks runs Redisson's watchdog renewal of one client's locks
// (renewal/LockTask.java: keys are the locks, RLocks and write locks
// mixed; args the lease, then each key's lock name) and answers 1 or 0
// per key, each decided by its own quorum (decideRenew) from whether
// the name held it on each node. It is served here rather than by its
// effect: a renewal that lands within the millisecond of the take (or of
// the last renewal) leaves a node's expiry as it was, which the effect
// path counts as no hold there; and a write lock's hash may carry the
// same thread's reader, another token, whose hold the renewal never
// shortens (rwlock_renewlock.lua).
func (e *Engine) RenewLocks(ctx context.Context, keys, args []string, ttl time.Duration) ([]int64, error) {
	start := time.Now()
	// A late renewal must not cut the same owner's later, longer lock
	// through another proxy (attack18 A6): it carries a deadline.
	results := fanOut(ctx, e, func(nctx context.Context, i int, n Node) ([]int64, error) {
		return dated(nctx, ctx, e, i, func(nctx context.Context, until int64) ([]int64, error) { return n.RenewLocks(nctx, keys, args, until) })
	})
	out, err := decideRenew(results, e.countedNodes(), e.quorum, len(keys), ttl, start, time.Now(), e.cfg.DriftFactor)
	e.observe(OpExtend, start, err)
	return out, err
}

// ReservedPrefix reports whether a key named prefix, ":" and anything
// (a read lock's timeout key) can be one of the proxies' own keys.
func ReservedPrefix(prefix string) bool {
	p := prefix + ":"
	return Reserved(prefix) || strings.HasPrefix(CountersKey, p) || strings.HasPrefix(MembersKey, p) ||
		strings.HasPrefix(p, CountersKey)
}

func newNonce() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
