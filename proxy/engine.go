package proxy

import (
	"context"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Engine is what the server asks of the quorum engine: *quorum.Engine,
// or a fake in the tests. Its methods are safe for concurrent use.
type Engine interface {
	// Limits, fixed at the engine's New.
	MinTTL() time.Duration
	MaxTTL() time.Duration
	NodeTimeout() time.Duration
	Nodes() int
	Addrs() []string
	Status() []quorum.NodeStatus

	// Locks.
	Acquire(ctx context.Context, l quorum.Lock, ttl time.Duration) (quorum.Lease, error)
	Release(ctx context.Context, l quorum.Lock) (quorum.Released, error)
	// UndoAcquire gives back a grant the client is not told of.
	UndoAcquire(ctx context.Context, l quorum.Lock, lease quorum.Lease)
	Extend(ctx context.Context, l quorum.Lock, ttl time.Duration) (quorum.Lease, error)
	ExtendBy(ctx context.Context, l quorum.Lock, ttl, limit time.Duration) (quorum.Lease, error)
	ExtendOrAcquire(ctx context.Context, l quorum.Lock, ttl time.Duration) (quorum.Lease, error)
	Delete(ctx context.Context, keys []string) (int, error)

	// Reads.
	Inspect(ctx context.Context, key string) (quorum.State, error)
	ReadKey(ctx context.Context, key string) (quorum.KeyValue, error)
	Scan(ctx context.Context, cur quorum.ScanCursor, match string, count int64, typ string) (quorum.ScanCursor, []quorum.ScanKey, error)
	Keyspace(ctx context.Context) (quorum.KeyView, error)

	// Fencing tokens and fence_keys counters.
	Fence(ctx context.Context, key, token string) (quorum.Fencing, error)
	Incr(ctx context.Context, name string, by int64) (int64, error)
	Counter(ctx context.Context, name string) (int64, error)

	// Redisson's read lock, the write lock's unlock, forceUnlock of a
	// read or a write lock, and the watchdog of RLocks and write locks
	// (quorum/rwlock.go).
	TakeRead(ctx context.Context, l quorum.ReadLock, ttl time.Duration) (quorum.ReadTaken, error)
	UndoRead(ctx context.Context, t quorum.ReadTaken)
	UnlockRead(ctx context.Context, u quorum.ReadUnlock) (quorum.Value, error)
	UnlockWrite(ctx context.Context, u quorum.WriteUnlock) (quorum.Value, error)
	ForceUnlockRW(ctx context.Context, f quorum.ForceUnlock) (int64, error)
	RenewRead(ctx context.Context, keys, args []string, ttl time.Duration) ([]int64, error)
	RenewLocks(ctx context.Context, keys, args []string, ttl time.Duration) ([]int64, error)

	// Redisson's RCountDownLatch (quorum/latch.go).
	LatchSet(ctx context.Context, name string, count int64, m quorum.LatchMessages) (bool, error)
	LatchCountDown(ctx context.Context, name string, m quorum.LatchMessages) error
	LatchDelete(ctx context.Context, name string, m quorum.LatchMessages) (bool, error)
	LatchCount(ctx context.Context, name string) (int64, error)

	// Scripts run by their effect, and the masters' script state.
	Wrap(body string, literals []string) *quorum.Effect
	RunEffect(ctx context.Context, eff *quorum.Effect, keys, args []string) (quorum.EffectResult, error)
	UndoEffect(ctx context.Context, res quorum.EffectResult)
	FlushEffects(ctx context.Context) (int, error)
	KillScript(ctx context.Context) (quorum.KillResult, error)
	ScriptBusy(ctx context.Context) (bool, error)
}

var _ Engine = (*quorum.Engine)(nil)
