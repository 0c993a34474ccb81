package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode is an in-memory Node for engine tests. Each method has the
// semantics of redisNode's Lua script for it (TestFakeNodeMatchesRedisNode
// checks that against a real server). Keys expire on time.Now(), which is
// virtual inside synctest.Test, so the TTLs tests see are exact.
//
// The zero behaviour answers at once. The fields above mu make the node
// slow, silent, failing or lossy; set them before the node is used.
type fakeNode struct {
	addr string
	// delay is how long the node takes to answer. A deadline that comes
	// first cuts the call short, and then nothing is applied: the request
	// never reached the node.
	delay time.Duration
	// silent never answers: the call blocks until its context is done,
	// returns ctx.Err() and applies nothing.
	silent bool
	// err, when set, is returned after delay and nothing is applied.
	err error
	// lost applies the operation after delay, then waits past the
	// caller's deadline and returns ctx.Err(): the write lands, the reply
	// is lost.
	lost bool
	// closeErr is what Close returns.
	closeErr error
	// effect, when set, is the node's answer to every wrapped script.
	effect *NodeEffect
	// fence: the node keeps counters (counters, below).
	fence bool
	// old is a master older than Redis 7.0: its denial of a plain
	// acquire does not reveal whether a key holds the token.
	old bool

	// What Probe reports; set before the engine starts, or through the
	// methods below. An empty runID is filled in from addr.
	runID   string
	role    string // "" reads as master
	policy  string // maxmemory-policy
	aof     bool
	fsync   string        // appendfsync
	started time.Time     // the process's start; zero: long ago (1h)
	rtt     time.Duration // how long TIME takes, on the virtual clock

	mu      sync.Mutex
	keys    map[string]fakeEntry
	calls   []fakeCall
	members map[string]string
	failing error         // every call fails with it, when set
	offset  time.Duration // the node's clock minus the proxy's
	rate    float64       // how much faster the node's clock runs, from rateFrom
	rateAt  time.Time
	watch   func(runID string)
	// counters is CountersKey's hash: nil when missing.
	counters map[string]string
}

// fakeEntry is one key on a fakeNode.
type fakeEntry struct {
	token   string
	expires time.Time // zero: no expiry
}

// fakeCall records one call a fakeNode received, as it arrived.
type fakeCall struct {
	op          string // acquire, undo, release, extend, inspect, delete, close
	keys        []string
	token       string
	prefixLen   int
	ttl         time.Duration
	mode        ExtendMode
	until       int64 // a lock write's deadline field (Node.Release)
	ctxErr      error // the context's error when the call arrived
	hasDeadline bool  // whether the context carried a deadline
}

// with stores key with token and ttl (negative: no expiry), as if some
// client had set it, and returns f for chaining. Call it inside the
// synctest bubble, so the expiry is on the virtual clock.
func (f *fakeNode) with(key, token string, ttl time.Duration) *fakeNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := fakeEntry{token: token}
	if ttl >= 0 {
		e.expires = time.Now().Add(ttl)
	}
	f.store()[key] = e
	return f
}

// token returns the token key holds now, and whether it exists.
func (f *fakeNode) token(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.get(time.Now(), key)
	return e.token, ok
}

// ttl returns key's remaining TTL: negative when it has no expiry, and
// -2ms when it does not exist (Redis's PTTL codes).
func (f *fakeNode) ttl(key string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	e, ok := f.get(now, key)
	if !ok {
		return -2 * time.Millisecond
	}
	return e.pttl(now)
}

// callsTo returns the calls of kind op the node received, in order.
func (f *fakeNode) callsTo(op string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var cs []fakeCall
	for _, c := range f.calls {
		if c.op == op {
			cs = append(cs, c)
		}
	}
	return cs
}

// ops returns the kinds of the calls the node received, in order.
func (f *fakeNode) ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	ops := make([]string, len(f.calls))
	for i, c := range f.calls {
		ops[i] = c.op
	}
	return ops
}

func (f *fakeNode) store() map[string]fakeEntry {
	if f.keys == nil {
		f.keys = make(map[string]fakeEntry)
	}
	return f.keys
}

// get returns key's entry, dropping it if it expired. Like Redis, a key
// is gone only once now is past its expiry. f.mu must be held.
func (f *fakeNode) get(now time.Time, key string) (fakeEntry, bool) {
	e, ok := f.store()[key]
	if ok && !e.expires.IsZero() && now.After(e.expires) {
		delete(f.keys, key)
		return fakeEntry{}, false
	}
	return e, ok
}

// pttl is the entry's remaining TTL, -1ms if it has no expiry.
func (e fakeEntry) pttl(now time.Time) time.Duration {
	if e.expires.IsZero() {
		return -time.Millisecond
	}
	return e.expires.Sub(now)
}

// do records the call, behaves as the node's fields say, and runs apply
// under the lock unless the call failed first. An error from apply is the
// node's error reply.
func (f *fakeNode) do(ctx context.Context, c fakeCall, apply func(now time.Time) error) error {
	c.ctxErr = ctx.Err()
	_, c.hasDeadline = ctx.Deadline()
	c.keys = slices.Clone(c.keys)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()

	f.mu.Lock()
	failing := f.failing
	f.mu.Unlock()
	if failing != nil {
		return failing
	}
	if f.silent {
		<-ctx.Done()
		return ctx.Err()
	}
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.err != nil {
		return f.err
	}
	if err := ctx.Err(); err != nil {
		return err // a request on a dead context is never sent
	}
	f.mu.Lock()
	err := apply(time.Now())
	f.mu.Unlock()
	if err != nil {
		return err
	}
	if f.lost {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeNode) Addr() string { return f.addr }

func (f *fakeNode) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{op: "close"})
	return f.closeErr
}

// errFakeTTL is the fake's answer to a TTL Redis would refuse.
var errFakeTTL = errors.New("ERR invalid expire time")

// Acquire is acquireScript (and the SET NX PX path, its one-key case):
// all keys or none, and an existing key counts as free only when it
// starts with the token's first PrefixLen bytes; such a key keeps its
// TTL where that is longer, and its earlier value and TTL are in the
// answer's Before. A plain acquire denied says whether a key holds the
// token (SET NX GET), unless the node is old.
func (f *fakeNode) Acquire(ctx context.Context, l Lock, ttl time.Duration) (Acquired, error) {
	var a Acquired
	err := f.do(ctx, fakeCall{op: "acquire", keys: l.Keys, token: l.Token, prefixLen: l.PrefixLen, ttl: ttl}, func(now time.Time) error {
		if ttl < time.Millisecond {
			return errFakeTTL // SET ... PX 0 is refused
		}
		var before []Entry
		for i, k := range l.Keys {
			if e, held := f.get(now, k); held {
				n := l.PrefixLen
				if n <= 0 || prefix(e.token, n) != prefix(l.Token, n) {
					if n <= 0 && !f.old {
						a = Acquired{Revealed: true, Held: e.token}
						if len(l.Keys) > 1 && !slices.ContainsFunc(l.Keys, func(k string) bool {
							e, held := f.get(now, k)
							return held && e.token == l.Token
						}) {
							a.Held = ""
						} else if len(l.Keys) > 1 {
							a.Held = l.Token
						}
					}
					return nil
				}
				if before == nil {
					before = make([]Entry, len(l.Keys))
				}
				before[i] = Entry{Present: true, Token: e.token, TTL: e.pttl(now).Truncate(time.Millisecond)}
			}
		}
		for i, k := range l.Keys {
			e := fakeEntry{token: l.Token, expires: now.Add(ttl)}
			if before != nil && before[i].Present {
				if left := before[i].TTL; left < 0 {
					e.expires = time.Time{}
				} else if left > ttl {
					e.expires = now.Add(left)
				}
			}
			f.store()[k] = e
		}
		a = Acquired{Granted: true, Before: before}
		return nil
	})
	if err != nil {
		return Acquired{}, err
	}
	return a, nil
}

// Undo is undoScript: each key that holds the token is deleted, or, taken
// again, set back to its earlier value, with the later of its earlier
// TTL's expiry (at least 1ms) and the one it has.
func (f *fakeNode) Undo(ctx context.Context, l Lock, before []Entry, until int64) (int, error) {
	var done int
	err := f.do(ctx, fakeCall{op: "undo", keys: l.Keys, token: l.Token, until: until}, func(now time.Time) error {
		if f.late(now, until) {
			return errFakeLate
		}
		for i, k := range l.Keys {
			e, ok := f.get(now, k)
			if !ok || e.token != l.Token {
				continue
			}
			done++
			if i >= len(before) || !before[i].Present {
				delete(f.keys, k)
				continue
			}
			back := fakeEntry{token: before[i].Token}
			if ttl := before[i].TTL; ttl >= 0 && !e.expires.IsZero() {
				back.expires = now.Add(max(ttl.Truncate(time.Millisecond), time.Millisecond))
				if e.expires.After(back.expires) {
					back.expires = e.expires
				}
			}
			f.store()[k] = back
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return done, nil
}

// errFakeLate is lateCheck's reply.
var errFakeLate = replyErr("LATE the proxy gave up on this lock write before it ran")

// late is lateCheck: the node's clock at now is past until (if above 0),
// in whole milliseconds.
func (f *fakeNode) late(now time.Time, until int64) bool {
	return until > 0 && f.nodeTime(now).UnixMilli() > until
}

// prefix is s's first n bytes, or s if it is shorter (Lua's string.sub
// and Redis's GETRANGE both stop at the end).
func prefix(s string, n int) string { return s[:min(n, len(s))] }

// Release is releaseScript: per key, deleted, another token, or missing.
func (f *fakeNode) Release(ctx context.Context, l Lock, until int64) ([]Found, error) {
	var found []Found
	err := f.do(ctx, fakeCall{op: "release", keys: l.Keys, token: l.Token, until: until}, func(now time.Time) error {
		if f.late(now, until) {
			return errFakeLate
		}
		found = make([]Found, len(l.Keys))
		for i, k := range l.Keys {
			e, ok := f.get(now, k)
			switch {
			case !ok:
				found[i] = FoundMissing
			case e.token == l.Token:
				delete(f.keys, k)
				delete(f.keys, HoldPrefix+k) // the hold's fencing record ends with it
				found[i] = FoundDeleted
			default:
				found[i] = FoundOther
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return found, nil
}

// Extend is extendScript: every key must hold the token (in
// ExtendOrAcquire mode, or be missing; in ExtendAdd mode, and have an
// expiry), and then each gets its TTL; it returns the shortest TTL set.
func (f *fakeNode) Extend(ctx context.Context, l Lock, ttl time.Duration, mode ExtendMode, limit time.Duration, until int64) (time.Duration, error) {
	var least time.Duration
	err := f.do(ctx, fakeCall{op: "extend", keys: l.Keys, token: l.Token, ttl: ttl, mode: mode, until: until}, func(now time.Time) error {
		if f.late(now, until) {
			return errFakeLate
		}
		for _, k := range l.Keys {
			e, ok := f.get(now, k)
			if !(ok && e.token == l.Token) && !(mode == ExtendOrAcquire && !ok) {
				return nil
			}
			if mode == ExtendAdd && e.expires.IsZero() {
				return nil
			}
			if mode == ExtendAdd && limit.Milliseconds() > 0 && e.pttl(now)+ttl.Truncate(time.Millisecond) > limit.Truncate(time.Millisecond) {
				least = -1
				return nil
			}
		}
		for _, k := range l.Keys {
			t := ttl.Truncate(time.Millisecond) // sent as whole milliseconds
			e, ok := f.get(now, k)
			if mode == ExtendAdd {
				t += e.pttl(now)
			}
			switch {
			case t <= 0:
				delete(f.keys, k) // PEXPIRE with a TTL <= 0 deletes
			case !ok:
				f.store()[k] = fakeEntry{token: l.Token, expires: now.Add(t)}
			default:
				f.keys[k] = fakeEntry{token: e.token, expires: now.Add(t)}
			}
			if r, held := f.get(now, HoldPrefix+k); ok && held {
				// A fenced hold's record lives as long as the hold.
				f.keys[HoldPrefix+k] = fakeEntry{token: r.token, expires: now.Add(t)}
				if t <= 0 {
					delete(f.keys, HoldPrefix+k)
				}
			}
			if least == 0 || t < least {
				least = t
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return least, nil
}

// Inspect is inspectScript: the key's token and remaining TTL.
func (f *fakeNode) Inspect(ctx context.Context, key string) (Entry, error) {
	var ent Entry
	err := f.do(ctx, fakeCall{op: "inspect", keys: []string{key}}, func(now time.Time) error {
		if e, ok := f.get(now, key); ok {
			ent = Entry{Present: true, Token: e.token, TTL: e.pttl(now)}
		}
		return nil
	})
	if err != nil {
		return Entry{}, err
	}
	return ent, nil
}

// Delete is DEL: it deletes keys whoever holds them and counts those
// that existed.
func (f *fakeNode) Delete(ctx context.Context, keys []string) (int, error) {
	var n int
	err := f.do(ctx, fakeCall{op: "delete", keys: keys}, func(now time.Time) error {
		for _, k := range keys {
			if _, ok := f.get(now, k); ok {
				delete(f.keys, k)
				n++
			}
			delete(f.keys, HoldPrefix+k)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Probe reports the fields above, and the node's clock: the proxy's plus
// offset, running rate faster since rateAt.
func (f *fakeNode) Probe(ctx context.Context) (Probe, error) {
	var p Probe
	err := f.do(ctx, fakeCall{op: "probe"}, func(now time.Time) error {
		p = Probe{RunID: f.runID, Role: f.role, MaxmemoryPolicy: f.policy, AOF: f.aof, RTT: f.rtt}
		if p.RunID == "" {
			p.RunID = "run-" + f.addr
		}
		if p.Role == "" {
			p.Role = "master"
		}
		if f.aof {
			p.Appendfsync, p.NoFsyncOnRewrite = f.fsync, "no"
		}
		started := f.started
		if started.IsZero() {
			started = now.Add(-time.Hour)
		}
		// As Redis counts it: the difference of two whole-second clock
		// readings, which can exceed the true uptime by almost a second.
		p.Uptime = time.Duration(now.Unix()-started.Unix()) * time.Second
		p.Time = f.nodeTime(now)
		p.Local = now
		return nil
	})
	return p, err
}

// nodeTime is the node's clock at now: the proxy's plus offset, running
// rate faster since rateAt. f.mu must be held.
func (f *fakeNode) nodeTime(now time.Time) time.Time {
	node := now.Add(f.offset)
	if f.rate != 0 {
		node = node.Add(time.Duration(f.rate * float64(now.Sub(f.rateAt))))
	}
	return node.Round(0)
}

// Members is HGETALL of the membership record.
func (f *fakeNode) Members(ctx context.Context) (map[string]string, error) {
	var m map[string]string
	err := f.do(ctx, fakeCall{op: "members"}, func(time.Time) error {
		m = make(map[string]string, len(f.members))
		for k, v := range f.members {
			m[k] = v
		}
		return nil
	})
	return m, err
}

// SetMembers is HSET of the membership record.
func (f *fakeNode) SetMembers(ctx context.Context, fields map[string]string) error {
	return f.do(ctx, fakeCall{op: "setmembers"}, func(time.Time) error {
		if f.members == nil {
			f.members = make(map[string]string)
		}
		for k, v := range fields {
			f.members[k] = v
		}
		return nil
	})
}

// record returns the node's membership record.
func (f *fakeNode) record() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := make(map[string]string, len(f.members))
	for k, v := range f.members {
		m[k] = v
	}
	return m
}

// withRecord stores a membership record, as an earlier proxy would have.
func (f *fakeNode) withRecord(m map[string]string) *fakeNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = m
	return f
}

// fail makes every call fail with err from now on; nil heals the node.
func (f *fakeNode) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = err
}

// restart is a crash and a restart without persistence: a new run_id,
// uptime from now, and no keys or record.
func (f *fakeNode) restart(runID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runID, f.started, f.keys, f.members, f.counters = runID, time.Now(), nil, nil, nil
}

// jump moves the node's clock by d.
func (f *fakeNode) jump(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offset += d
}

// drift makes the node's clock run rate faster (negative: slower) from now.
func (f *fakeNode) drift(rate float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate, f.rateAt = rate, time.Now()
}

func (f *fakeNode) WatchConnects(w func(runID string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watch = w
}

// connect is a new connection to the node: the watcher, if any, hears the
// node's run_id.
func (f *fakeNode) connect() {
	f.mu.Lock()
	w, runID := f.watch, f.runID
	f.mu.Unlock()
	if runID == "" {
		runID = "run-" + f.addr
	}
	if w != nil {
		w(runID)
	}
}

// asNodes returns fs as the engine's Node list.
func asNodes(fs []*fakeNode) []Node {
	ns := make([]Node, len(fs))
	for i, f := range fs {
		ns[i] = f
	}
	return ns
}

// holders returns the addresses of the nodes where key holds token.
func holders(fs []*fakeNode, key, token string) []string {
	var addrs []string
	for _, f := range fs {
		if got, ok := f.token(key); ok && got == token {
			addrs = append(addrs, f.addr)
		}
	}
	return addrs
}

// checkSentinel fails the test unless err matches want (nil, ErrDenied or
// ErrUnavailable) and does not match the other sentinel. call names the
// call for the message.
func checkSentinel(t *testing.T, call string, err, want error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("%s = %v; want nil", call, err)
		}
		return
	}
	other := ErrDenied
	if want == ErrDenied {
		other = ErrUnavailable
	}
	if !errors.Is(err, want) || errors.Is(err, other) {
		t.Fatalf("%s = %v; want %v", call, err, want)
	}
}

// outcome returns the *OutcomeError in err, failing the test if there is
// none.
func outcome(t *testing.T, call string, err error) *OutcomeError {
	t.Helper()
	var oe *OutcomeError
	if !errors.As(err, &oe) {
		t.Fatalf("%s = %v (%T); want an *OutcomeError", call, err, err)
	}
	return oe
}

// answering returns the fakes that answer usefully: not silent, not
// failing, not lossy.
func answering(fs []*fakeNode) []*fakeNode {
	var ok []*fakeNode
	for _, f := range fs {
		if !f.silent && f.err == nil && !f.lost {
			ok = append(ok, f)
		}
	}
	return ok
}

// checkFailures fails the test unless err, a Lease's Failures, is nil
// when want is empty, and otherwise matches every cause in want and
// holds a *NodeError.
func checkFailures(t *testing.T, call string, err error, want []error) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s = %v; want nil", call, err)
		}
		return
	}
	for _, cause := range want {
		if !errors.Is(err, cause) {
			t.Errorf("%s = %v; want it to match %v", call, err, cause)
		}
	}
	var ne *NodeError
	if !errors.As(err, &ne) {
		t.Errorf("errors.As(%s, *NodeError) = false; want true (%v)", call, err)
	}
}

// DropConnection: the fake keeps no connection.
func (f *fakeNode) DropConnection() {}

// Batch is nil: a fake has no batch path, its methods run.
func (f *fakeNode) Batch() Batch { return nil }

// The operations below the lock's are errUnsupported on the fake unless
// a field gives it their state: then the call goes through do, as the
// lock's do (delay, silence, failure and loss apply alike).

// RunEffect answers the canned effect, when set.
func (f *fakeNode) RunEffect(ctx context.Context, _ *Effect, c EffectCall, _ []KeyEffect) (NodeEffect, error) {
	if f.effect == nil {
		return NodeEffect{}, errUnsupported
	}
	var ne NodeEffect
	err := f.do(ctx, fakeCall{op: "effect", keys: c.Keys, until: c.Until}, func(now time.Time) error {
		if f.late(now, c.Until) {
			return errFakeLate
		}
		ne = *f.effect
		return nil
	})
	return ne, err
}

// UndoEffect records the key given back, when an effect is set.
func (f *fakeNode) UndoEffect(ctx context.Context, key string, _ KeyUndo, until int64) error {
	if f.effect == nil {
		return errUnsupported
	}
	return f.do(ctx, fakeCall{op: "undoeffect", keys: []string{key}, until: until}, func(now time.Time) error {
		if f.late(now, until) {
			return errFakeLate
		}
		return nil
	})
}

func (f *fakeNode) FlushEffects(context.Context) error { return errUnsupported }

func (f *fakeNode) KeyCount(context.Context) (KeyCount, error) { return KeyCount{}, errUnsupported }
func (f *fakeNode) ReadKey(context.Context, string) (NodeKey, error) {
	return NodeKey{}, errUnsupported
}
func (f *fakeNode) ScanKeys(context.Context, uint64, string, int64, string) ([]string, uint64, error) {
	return nil, 0, errUnsupported
}

func (f *fakeNode) KillScript(context.Context) (Kill, string, error) { return 0, "", errUnsupported }
func (f *fakeNode) ScriptBusy(context.Context) (bool, error)         { return false, errUnsupported }

func (f *fakeNode) Publish(context.Context, string, string, string, int64) error {
	return errUnsupported
}

// The latch's and the read lock's scripts are checked against their
// models (latchcheck_test.go, rwlockcheck_test.go) and on Redis; the fake
// runs none.

func (f *fakeNode) LatchSet(context.Context, string, int64, int64) (LatchAnswer, error) {
	return LatchAnswer{}, errUnsupported
}
func (f *fakeNode) LatchUndo(context.Context, string, int64, bool) error { return errUnsupported }
func (f *fakeNode) LatchReset(context.Context, string, int64, int64, int64) error {
	return errUnsupported
}
func (f *fakeNode) LatchDecrement(context.Context, string, int64) (LatchDecremented, error) {
	return LatchDecremented{}, errUnsupported
}
func (f *fakeNode) LatchClaim(context.Context, string, int64, int64, int64) (LatchAnswer, error) {
	return LatchAnswer{}, errUnsupported
}
func (f *fakeNode) LatchDelete(context.Context, string) (LatchAnswer, error) {
	return LatchAnswer{}, errUnsupported
}

func (f *fakeNode) TakeRead(context.Context, ReadLock, time.Duration, string) (ReadTake, error) {
	return ReadTake{}, errUnsupported
}
func (f *fakeNode) UndoRead(context.Context, ReadLock, string) error { return errUnsupported }
func (f *fakeNode) UnlockRead(context.Context, ReadUnlock) (ReadRelease, error) {
	return ReadRelease{}, errUnsupported
}
func (f *fakeNode) UnlockWrite(context.Context, WriteUnlock) (WriteRelease, error) {
	return WriteRelease{}, errUnsupported
}
func (f *fakeNode) ForceUnlock(context.Context, string, string) (int64, error) {
	return 0, errUnsupported
}
func (f *fakeNode) RenewRead(context.Context, []string, []string, int64) ([]int64, error) {
	return nil, errUnsupported
}
func (f *fakeNode) RenewLocks(context.Context, []string, []string, int64) ([]int64, error) {
	return nil, errUnsupported
}

// The counters: the fake keeps CountersKey's fields in counters, as the
// hash would (counter_*.lua), and a hold record as a key (HoldPrefix +
// key, "T token"), once fence is set; else they are errUnsupported.

// FenceRound is counter_fence.lua on a string key.
func (f *fakeNode) FenceRound(ctx context.Context, key, token, field string) (CounterEntry, error) {
	if !f.fence {
		return CounterEntry{}, errUnsupported
	}
	var en CounterEntry
	err := f.do(ctx, fakeCall{op: "fenceround", keys: []string{key}, token: token}, func(now time.Time) error {
		en = f.readCounter(now, key, token, field)
		en.Now = 0 // the round reads the node's clock only when pending
		if en.State == CounterPending {
			en.Now = f.nodeTime(now).UnixMilli()
		}
		if en.State != CounterSeeded || !en.Held || en.TTL <= 0 {
			return nil
		}
		if en.Hold > 0 {
			en = CounterEntry{State: CounterSeeded, Value: en.Value, Held: true, TTL: en.TTL, Hold: en.Hold, Answer: en.Hold}
			return nil
		}
		t := f.counterValue(field) + 1
		f.counters[field] = strconv.FormatInt(t, 10)
		f.store()[HoldPrefix+key] = fakeEntry{token: fmt.Sprint(t, " ", token), expires: now.Add(en.TTL)}
		en = CounterEntry{State: CounterSeeded, Value: t, Held: true, TTL: en.TTL, Answer: t}
		return nil
	})
	return en, err
}

// ReadCounter is counter_read.lua.
func (f *fakeNode) ReadCounter(ctx context.Context, key, token, field string) (CounterEntry, error) {
	if !f.fence {
		return CounterEntry{}, errUnsupported
	}
	var en CounterEntry
	err := f.do(ctx, fakeCall{op: "readcounter", keys: []string{key}, token: token}, func(now time.Time) error {
		en = f.readCounter(now, key, token, field)
		return nil
	})
	return en, err
}

// readCounter is counter_read.lua's reading; f.mu must be held.
func (f *fakeNode) readCounter(now time.Time, key, token, field string) CounterEntry {
	en := CounterEntry{Now: f.nodeTime(now).UnixMilli(), TTL: -2 * time.Millisecond}
	switch h := f.counters; {
	case h["seeded"] == "1":
		en.State, en.Value, en.Gen = CounterSeeded, f.counterValue(field), h["gen"]
		en.Virgin = len(h) == 1 || len(h) == 2 && h["gen"] != ""
	case h["pending"] != "":
		en.State, en.ID, en.Gen = CounterPending, h["id"], h["gen"]
		en.Value, _ = strconv.ParseInt(h["pending"], 10, 64)
	}
	if key == "" {
		return en
	}
	if e, ok := f.get(now, key); ok && e.token == token {
		en.Held, en.TTL = true, e.pttl(now).Truncate(time.Millisecond)
		if rec, ok := f.get(now, HoldPrefix+key); ok {
			if t, tok, _ := strings.Cut(rec.token, " "); tok == token {
				en.Hold, _ = strconv.ParseInt(t, 10, 64)
				if en.TTL > 0 {
					f.keys[HoldPrefix+key] = fakeEntry{token: rec.token, expires: now.Add(en.TTL)}
				}
			}
		}
	}
	return en
}

// counterValue is field's counter, 0 if none; f.mu must be held.
func (f *fakeNode) counterValue(field string) int64 {
	v, _ := strconv.ParseInt(f.counters[field], 10, 64)
	return v
}

// WriteCounter is counter_write.lua.
func (f *fakeNode) WriteCounter(ctx context.Context, key, token, field string, v int64, exclusive bool, until int64) (CounterWrite, error) {
	if !f.fence {
		return 0, errUnsupported
	}
	var w CounterWrite
	err := f.do(ctx, fakeCall{op: "writecounter", keys: []string{key}, token: token, until: until}, func(now time.Time) error {
		if f.late(now, until) {
			return errFakeLate
		}
		switch {
		case f.counters["seeded"] != "1":
			w = CounterUnseeded
			return nil
		case f.counterValue(field) < v:
			f.counters[field] = strconv.FormatInt(v, 10)
		case exclusive:
			w = CounterContended
			return nil
		}
		w = CounterWritten
		if key == "" {
			return nil
		}
		e, ok := f.get(now, key)
		if !ok || e.token != token || e.pttl(now) <= 0 {
			w = CounterNotHeld
			return nil
		}
		if rec, ok := f.get(now, HoldPrefix+key); ok {
			if t, tok, ok := strings.Cut(rec.token, " "); ok && tok == token {
				if n, _ := strconv.ParseInt(t, 10, 64); n > v {
					v = n // a higher record of this token stays
				}
			}
		}
		f.store()[HoldPrefix+key] = fakeEntry{token: fmt.Sprint(v, " ", token), expires: now.Add(e.pttl(now).Truncate(time.Millisecond))}
		return nil
	})
	return w, err
}

// MarkCounters is counter_mark.lua.
func (f *fakeNode) MarkCounters(ctx context.Context, id string) (CounterEntry, error) {
	if !f.fence {
		return CounterEntry{}, errUnsupported
	}
	var en CounterEntry
	err := f.do(ctx, fakeCall{op: "markcounters"}, func(now time.Time) error {
		if f.counters["seeded"] == "1" {
			en = CounterEntry{State: CounterSeeded}
			return nil
		}
		if f.counters["pending"] == "" {
			f.counters = map[string]string{"pending": strconv.FormatInt(f.nodeTime(now).UnixMilli(), 10), "id": id}
		}
		en.State = CounterPending
		en.Value, _ = strconv.ParseInt(f.counters["pending"], 10, 64)
		return nil
	})
	return en, err
}

// Counters is countersResult of the hash.
func (f *fakeNode) Counters(ctx context.Context) (map[string]int64, error) {
	if !f.fence {
		return nil, errUnsupported
	}
	var m map[string]int64
	err := f.do(ctx, fakeCall{op: "counters"}, func(time.Time) error {
		if f.counters["seeded"] != "1" {
			return nil
		}
		m = map[string]int64{}
		for k := range f.counters {
			if k != "seeded" && k != "gen" {
				m[k] = f.counterValue(k)
			}
		}
		return nil
	})
	return m, err
}

// SeedCounters is counter_seed.lua.
func (f *fakeNode) SeedCounters(ctx context.Context, mark int64, gen string, fields map[string]int64) (bool, error) {
	if !f.fence {
		return false, errUnsupported
	}
	var ok bool
	err := f.do(ctx, fakeCall{op: "seedcounters"}, func(time.Time) error {
		if !f.pendingWith(mark) {
			return nil
		}
		f.counters = map[string]string{"seeded": "1"}
		if gen != "" {
			f.counters["gen"] = gen
		}
		for k, v := range fields {
			f.counters[k] = strconv.FormatInt(v, 10)
		}
		ok = true
		return nil
	})
	return ok, err
}

// NameCounters is counter_name.lua.
func (f *fakeNode) NameCounters(ctx context.Context, mark int64, gen string) (bool, error) {
	if !f.fence {
		return false, errUnsupported
	}
	var ok bool
	err := f.do(ctx, fakeCall{op: "namecounters"}, func(time.Time) error {
		if ok = f.pendingWith(mark); ok {
			f.counters["gen"] = gen
		}
		return nil
	})
	return ok, err
}

// pendingWith reports whether the node is pending with mark; f.mu must
// be held.
func (f *fakeNode) pendingWith(mark int64) bool {
	return f.counters["seeded"] != "1" && f.counters["pending"] == strconv.FormatInt(mark, 10)
}

// withCounters seeds the node's counters with fields, as a deployment
// that ran a while, and returns f for chaining.
func (f *fakeNode) withCounters(fields map[string]int64) *fakeNode {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fence = true
	f.counters = map[string]string{"seeded": "1"}
	for k, v := range fields {
		f.counters[k] = strconv.FormatInt(v, 10)
	}
	return f
}
