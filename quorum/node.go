package quorum

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Node is one Redis master as the engine sees it. Each method is one
// atomic step on that node. The engine declares it for its own use, so
// that tests can swap in fakes; NewRedisNode is the real one.
type Node interface {
	// Addr is the node's address, for errors and logs.
	Addr() string
	// Acquire sets every key of l to its token with ttl, but only if no
	// key exists (or, with l.PrefixLen, each existing one starts with the
	// token's prefix: it takes that key again, keeping its TTL where that
	// is longer). It reports whether it set them, and what each key taken
	// again held before.
	Acquire(ctx context.Context, l Lock, ttl time.Duration) (Acquired, error)
	// Undo gives back what an acquire of l took, before being its answer's
	// Before (one per key): a key taken free is deleted, a key taken again
	// set back to its earlier value and TTL; each only if it still holds
	// l's token. It returns how many keys it gave back.
	//
	// Undo, Release and Extend take until: the last millisecond on the
	// node's clock at which they may take effect (Engine.writeUntil; 0:
	// no limit). Past it they do nothing and answer an error (LATE).
	Undo(ctx context.Context, l Lock, before []Entry, until int64) (int, error)
	// Release deletes each key of l that holds its token and reports, per
	// key, what it found.
	Release(ctx context.Context, l Lock, until int64) ([]Found, error)
	// Extend gives every key of l the TTL mode asks for, but only if all of
	// them hold its token (ExtendOrAcquire: or are missing). It returns the
	// shortest TTL it set, or 0 if it set none. In ExtendAdd mode with a
	// limit above zero, it sets none and returns -1 if a key's TTL would
	// pass limit.
	Extend(ctx context.Context, l Lock, ttl time.Duration, mode ExtendMode, limit time.Duration, until int64) (time.Duration, error)
	// Inspect reads key's value and remaining TTL.
	Inspect(ctx context.Context, key string) (Entry, error)
	// Delete deletes keys unconditionally and returns how many existed.
	Delete(ctx context.Context, keys []string) (int, error)
	// Probe reads what the monitor checks: the node's identity, role and
	// settings (INFO), and its clock (TIME).
	Probe(ctx context.Context) (Probe, error)
	// Members reads the node's membership record, MembersKey: node
	// address -> run_id. A missing record is empty, not an error.
	Members(ctx context.Context) (map[string]string, error)
	// SetMembers writes the given fields of the node's membership record.
	SetMembers(ctx context.Context, fields map[string]string) error
	// Close closes the node's connections.
	Close() error
	// Batch is the node's batch path (batch.go), nil if it has none.
	Batch() Batch

	// The operations of the other command families, each group in the
	// file of its family. A node that cannot run one (a test's fake)
	// answers errUnsupported, and counts as failed there.
	Fencer       // FENCE and the counters (fence.go)
	effectNode   // wrapped scripts (effectnode.go)
	rwNode       // the read lock's scripts (rwlock.go)
	latcher      // the latch's scripts (latch.go)
	publisher    // decided messages (publish.go)
	keyCounter   // DBSIZE (keyspace.go)
	keyReader    // a key's whole value (keyvalue.go)
	keyScanner   // SCAN (scan.go)
	scriptKiller // SCRIPT KILL (kill.go)
	connWatcher
	connDropper
}

// errUnsupported is a node's answer to an operation it cannot run.
var errUnsupported = fmt.Errorf("quorum: node cannot run the operation: %w", errors.ErrUnsupported)

// errorReply is an error reply a node sent: the node answered. It has
// go-redis's redis.Error method set, which the pipeline's replies
// (internal/wire) have too, so the engine reads replies without a Redis
// client.
type errorReply interface {
	error
	RedisError()
}

// replyHasPrefix reports whether err holds an error reply that starts
// with prefix, after the "ERR " some servers put first (as go-redis's
// HasErrorPrefix).
func replyHasPrefix(err error, prefix string) bool {
	var re errorReply
	if !errors.As(err, &re) {
		return false
	}
	return strings.HasPrefix(strings.TrimPrefix(re.Error(), "ERR "), prefix)
}

// MembersKey is the hash on every node that records, for each node
// address, the run_id that the proxies last verified there. Clients may
// not touch it.
const MembersKey = "redlock-proxy:members"

// Probe is what one probe read from a node.
type Probe struct {
	RunID   string        // INFO run_id: new on every start of the process
	Version string        // INFO redis_version
	Uptime  time.Duration // INFO uptime_in_seconds
	Loading bool          // INFO loading: still reading its data set
	Role    string        // INFO role: "master" or "slave"
	// MaxmemoryPolicy is INFO maxmemory_policy; an allkeys-* policy may
	// evict lock keys.
	MaxmemoryPolicy string
	AOF             bool   // INFO aof_enabled
	Appendfsync     string // CONFIG GET appendfsync; "" if not read
	// NoFsyncOnRewrite is CONFIG GET no-appendfsync-on-rewrite ("" if not
	// read): with "yes" no write is synced while a rewrite runs.
	NoFsyncOnRewrite string
	// Time is the node's clock (TIME), and Local the proxy's clock (with
	// its monotonic reading) half-way through that call, which took RTT.
	Time  time.Time
	Local time.Time
	RTT   time.Duration
}

// connWatcher reports the run_id of every new connection of a node
// before the connection is used, so that a node restarted between two
// probes cannot have a grant counted before the engine knows.
type connWatcher interface {
	WatchConnects(func(runID string))
}

// connDropper drops the connection a node keeps across operations. After
// the node is marked down, the next operation must not reuse it: the
// process behind it may have died, and its first use would fail. A node
// that keeps none does nothing.
type connDropper interface {
	DropConnection()
}

// Acquired is a node's answer to an acquire.
type Acquired struct {
	// Granted: the node set every key.
	Granted bool
	// Before is, for a grant that took a key again (it held a value with
	// the token's prefix: a re-entry), per key what the key held before:
	// the earlier value and its TTL (negative: no expiry); a key taken
	// free has the zero Entry. Nil when every key was free.
	Before []Entry
	// Revealed: the node denied a plain acquire (no PrefixLen) and said
	// what the key holds (Held), as SET NX GET does. False where it
	// cannot say (a master older than Redis 7.0): the undo of a failed
	// acquire then knows less (leavesSilent).
	Revealed bool
	// Held is, where Revealed, the key's value ("" for a key of another
	// type); of several keys, the token if one holds it, else "".
	Held string
}

// holds reports whether a revealed that a key holds token.
func (a Acquired) holds(token string) bool { return a.Revealed && a.Held == token }

// Found is what a release found at one key on one node.
type Found int8

const (
	FoundOther   Found = 0  // the key holds another token: left alone
	FoundDeleted Found = 1  // the key held the token: deleted
	FoundMissing Found = -1 // no such key
)

// ExtendMode says how an extend sets the TTL.
type ExtendMode uint8

const (
	// ExtendSet sets the TTL to the given one.
	ExtendSet ExtendMode = iota
	// ExtendAdd adds the given TTL to the key's remaining one.
	ExtendAdd
	// ExtendOrAcquire sets the TTL, or sets a missing key to the token.
	ExtendOrAcquire
)

// Entry is a key's state on one node.
type Entry struct {
	Present bool
	Token   string
	// Type is the key's type when it is not a string ("hash", "zset");
	// such a key has no Token.
	Type string
	TTL  time.Duration // remaining TTL; negative means no expiry
}
