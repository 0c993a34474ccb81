package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// These tests run the go-redis node (quorum/redisnode) against real
// redis-server processes: its scripts are Lua, and only Redis can say
// what they do.

// redisProc is a redis-server started for one test.
type redisProc struct{ *redistest.Server }

// startRedis runs a redis-server with no persistence on a free loopback
// port and stops it when the test ends.
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	return &redisProc{redistest.Start(t)}
}

// admin returns a plain client for setting up and checking keys.
func (p *redisProc) admin(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// node returns the go-redis node for p, closed when the test ends.
func (p *redisProc) node(t *testing.T) Node { return p.nodeIn(t, asLibrary) }

// nodeIn is node, running wrapped scripts in form.
func (p *redisProc) nodeIn(t testing.TB, form wrapperForm) Node {
	t.Helper()
	n := RedisNode(p.Addr, bool(form))
	t.Cleanup(func() { n.Close() })
	return n
}

// flush empties the server between table rows.
func flush(t *testing.T, admin *redis.Client) {
	t.Helper()
	if err := admin.FlushAll(t.Context()).Err(); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
}

// setKey stores key = token with ttl (negative: no expiry).
func setKey(t *testing.T, admin *redis.Client, key, token string, ttl time.Duration) {
	t.Helper()
	if ttl < 0 {
		ttl = 0
	}
	if err := admin.Set(t.Context(), key, token, ttl).Err(); err != nil {
		t.Fatalf("SET %s: %v", key, err)
	}
}

// keyState is a key's value and PTTL in milliseconds (-2: missing, -1:
// no expiry).
func keyState(t *testing.T, admin *redis.Client, key string) (string, int64) {
	t.Helper()
	pttl, err := admin.Do(t.Context(), "pttl", key).Int64()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	if pttl == -2 {
		return "", pttl
	}
	v, err := admin.Get(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v, pttl
}

// wantKey is what a key should hold after a call: a value ("" for
// missing) and a PTTL range in milliseconds.
type wantKey struct {
	value    string
	min, max int64
}

func missingKey() wantKey                 { return wantKey{"", -2, -2} }
func noExpiry(v string) wantKey           { return wantKey{v, -1, -1} }
func expiring(v string, ms int64) wantKey { return wantKey{v, ms - 500, ms} }

func checkKeys(t *testing.T, admin *redis.Client, want map[string]wantKey) {
	t.Helper()
	for k, w := range want {
		v, pttl := keyState(t, admin, k)
		if v != w.value || pttl < w.min || pttl > w.max {
			t.Errorf("key %s = %q, PTTL %dms; want %q, PTTL in [%d, %d]ms", k, v, pttl, w.value, w.min, w.max)
		}
	}
}

// checkKeysSince is checkKeys with an expiring key's PTTL allowed to have
// run down by the time since begin (when the row started writing keys),
// and by no more: a loaded machine makes that time long, not the check
// loose.
func checkKeysSince(t *testing.T, admin *redis.Client, want map[string]wantKey, begin time.Time) {
	t.Helper()
	for k, w := range want {
		v, pttl := keyState(t, admin, k)
		if w.min != w.max {
			w.min = w.max - sinceMillis(begin)
		}
		if v != w.value || pttl < w.min || pttl > w.max {
			t.Errorf("key %s = %q, PTTL %dms; want %q, PTTL in [%d, %d]ms", k, v, pttl, w.value, w.min, w.max)
		}
	}
}

// sinceMillis is the time since begin in whole milliseconds, plus the 2ms
// that Redis's own millisecond clock may round off at each end.
func sinceMillis(begin time.Time) int64 {
	return time.Since(begin).Milliseconds() + 2
}

func TestRedisNodeAcquire(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	if n.Addr() != p.Addr {
		t.Errorf("Addr() = %q; want %q", n.Addr(), p.Addr)
	}
	// again is a key taken again that held v with about ms left (-1: none).
	again := func(v string, ms int64) Entry {
		return Entry{Present: true, Token: v, TTL: time.Duration(ms) * time.Millisecond}
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		lock    Lock
		want    bool
		before  []Entry // the answer's Before
		wantErr bool
		keys    map[string]wantKey
	}{
		{"SET NX: free key", nil, Lock{Keys: []string{"k"}, Token: "mine"}, true, nil, false,
			map[string]wantKey{"k": expiring("mine", 1000)}},
		{"SET NX: held key", func(t *testing.T) { setKey(t, admin, "k", "other", 100*time.Second) },
			Lock{Keys: []string{"k"}, Token: "mine"}, false, nil, false,
			map[string]wantKey{"k": expiring("other", 100000)}},
		{"SET NX: key of another type exists", func(t *testing.T) { admin.RPush(t.Context(), "k", "x") },
			Lock{Keys: []string{"k"}, Token: "mine"}, false, nil, false, nil},
		{"script: several free keys", nil, Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, true, nil, false,
			map[string]wantKey{"k1": expiring("mine", 1000), "k2": expiring("mine", 1000)}},
		{"script: one key held sets none", func(t *testing.T) { setKey(t, admin, "k2", "other", -1) },
			Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, false, nil, false,
			map[string]wantKey{"k1": missingKey(), "k2": noExpiry("other")}},
		// A re-entry keeps a longer TTL (the engine sets the new one once
		// granted: a failed one must not shorten the earlier grant).
		{"script: own prefix re-enters, keeping a longer TTL", func(t *testing.T) { setKey(t, admin, "k", "app:1", 100*time.Second) },
			Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, []Entry{again("app:1", 100000)}, false,
			map[string]wantKey{"k": expiring("app:2", 100000)}},
		{"script: own prefix re-enters with a longer new TTL", func(t *testing.T) { setKey(t, admin, "k", "app:1", 300*time.Millisecond) },
			Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, []Entry{again("app:1", 300)}, false,
			map[string]wantKey{"k": expiring("app:2", 1000)}},
		{"script: re-entry beside a free key", func(t *testing.T) { setKey(t, admin, "k1", "app:1", -1) },
			Lock{Keys: []string{"k1", "k2"}, Token: "app:2", PrefixLen: 4}, true, []Entry{again("app:1", -1), {}}, false,
			map[string]wantKey{"k1": noExpiry("app:2"), "k2": expiring("app:2", 1000)}},
		{"script: other prefix is denied", func(t *testing.T) { setKey(t, admin, "k", "web:1", -1) },
			Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, false, nil, false,
			map[string]wantKey{"k": noExpiry("web:1")}},
		{"script: prefix longer than the tokens", func(t *testing.T) { setKey(t, admin, "k", "ab", -1) },
			Lock{Keys: []string{"k"}, Token: "ab", PrefixLen: 10}, true, []Entry{again("ab", -1)}, false,
			map[string]wantKey{"k": noExpiry("ab")}},
		{"script: prefix on a free key", nil, Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, nil, false,
			map[string]wantKey{"k": expiring("app:2", 1000)}},
		{"script: error reply is a failure", func(t *testing.T) { admin.RPush(t.Context(), "k", "x") },
			Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, false, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			if tt.setup != nil {
				tt.setup(t)
			}
			got, err := n.Acquire(t.Context(), tt.lock, time.Second)
			if got.Granted != tt.want || (err != nil) != tt.wantErr || !sameBefore(got.Before, tt.before) {
				t.Fatalf("Acquire(%+v, 1s) = %+v, %v; want granted %v, Before %+v, error %v", tt.lock, got, err, tt.want, tt.before, tt.wantErr)
			}
			var rerr redis.Error
			if tt.wantErr && !errors.As(err, &rerr) {
				t.Errorf("Acquire error %v is not a redis.Error; want an error reply", err)
			}
			checkKeys(t, admin, tt.keys)
		})
	}
}

// sameBefore reports whether got is want, each positive TTL up to 100ms
// less (it ran on before the read).
func sameBefore(got, want []Entry) bool {
	return slices.EqualFunc(got, want, func(g, w Entry) bool {
		if w.TTL > 0 {
			return g.Present == w.Present && g.Token == w.Token && g.TTL <= w.TTL && g.TTL > w.TTL-100*time.Millisecond
		}
		return g == w
	})
}

func TestRedisNodeRelease(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		keys    []string
		want    []Found
		wantErr bool
		after   map[string]wantKey
	}{
		{"each code", func(t *testing.T) {
			setKey(t, admin, "deleted", "mine", time.Second)
			setKey(t, admin, "other", "other", -1)
		}, []string{"deleted", "other", "missing"}, []Found{FoundDeleted, FoundOther, FoundMissing}, false,
			map[string]wantKey{"deleted": missingKey(), "other": noExpiry("other")}},
		{"token must match exactly", func(t *testing.T) { setKey(t, admin, "k", "mine:more", -1) },
			[]string{"k"}, []Found{FoundOther}, false, map[string]wantKey{"k": noExpiry("mine:more")}},
		{"error reply is a failure", func(t *testing.T) { admin.RPush(t.Context(), "k", "x") },
			[]string{"k"}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			tt.setup(t)
			got, err := n.Release(t.Context(), Lock{Keys: tt.keys, Token: "mine"}, 0)
			if !slices.Equal(got, tt.want) || (err != nil) != tt.wantErr {
				t.Fatalf("Release(%v) = %v, %v; want %v, error %v", tt.keys, got, err, tt.want, tt.wantErr)
			}
			checkKeys(t, admin, tt.after)
		})
	}
}

func TestRedisNodeExtend(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name   string
		setup  func(t *testing.T)
		keys   []string
		mode   ExtendMode
		want   time.Duration // exactly, or for ExtendAdd less the time the keys have run since set
		after  map[string]wantKey
		errRow bool
	}{
		{"set: held", func(t *testing.T) { setKey(t, admin, "k", "mine", 100*time.Second) },
			[]string{"k"}, ExtendSet, time.Second, map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"set: no expiry gets one", func(t *testing.T) { setKey(t, admin, "k", "mine", -1) },
			[]string{"k"}, ExtendSet, time.Second, map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"set: another token", func(t *testing.T) { setKey(t, admin, "k", "other", 100*time.Second) },
			[]string{"k"}, ExtendSet, 0, map[string]wantKey{"k": expiring("other", 100000)}, false},
		{"set: missing", nil, []string{"k"}, ExtendSet, 0, map[string]wantKey{"k": missingKey()}, false},
		{"set: one key not held changes none", func(t *testing.T) {
			setKey(t, admin, "k1", "mine", 100*time.Second)
			setKey(t, admin, "k2", "other", -1)
		}, []string{"k1", "k2"}, ExtendSet, 0,
			map[string]wantKey{"k1": expiring("mine", 100000), "k2": noExpiry("other")}, false},
		{"add: held", func(t *testing.T) { setKey(t, admin, "k", "mine", time.Second) },
			[]string{"k"}, ExtendAdd, 2 * time.Second, map[string]wantKey{"k": expiring("mine", 2000)}, false},
		{"add: shortest of several", func(t *testing.T) {
			setKey(t, admin, "k1", "mine", 3*time.Second)
			setKey(t, admin, "k2", "mine", 2*time.Second)
		}, []string{"k1", "k2"}, ExtendAdd, 3 * time.Second,
			map[string]wantKey{"k1": expiring("mine", 4000), "k2": expiring("mine", 3000)}, false},
		{"add: no expiry is denied", func(t *testing.T) { setKey(t, admin, "k", "mine", -1) },
			[]string{"k"}, ExtendAdd, 0, map[string]wantKey{"k": noExpiry("mine")}, false},
		{"add: missing", nil, []string{"k"}, ExtendAdd, 0, map[string]wantKey{"k": missingKey()}, false},
		{"acquire: missing is set", nil, []string{"k"}, ExtendOrAcquire, time.Second,
			map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"acquire: held and missing", func(t *testing.T) { setKey(t, admin, "k1", "mine", -1) },
			[]string{"k1", "k2"}, ExtendOrAcquire, time.Second,
			map[string]wantKey{"k1": expiring("mine", 1000), "k2": expiring("mine", 1000)}, false},
		{"acquire: another token sets none", func(t *testing.T) { setKey(t, admin, "k2", "other", -1) },
			[]string{"k1", "k2"}, ExtendOrAcquire, 0,
			map[string]wantKey{"k1": missingKey(), "k2": noExpiry("other")}, false},
		{"error reply is a failure", func(t *testing.T) { admin.RPush(t.Context(), "k", "x") },
			[]string{"k"}, ExtendSet, 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			begin := time.Now()
			if tt.setup != nil {
				tt.setup(t)
			}
			got, err := n.Extend(t.Context(), Lock{Keys: tt.keys, Token: "mine"}, time.Second, tt.mode, 0, 0)
			if (err != nil) != tt.errRow {
				t.Fatalf("Extend(%v, 1s, %d) = %v, %v; want error %v", tt.keys, tt.mode, got, err, tt.errRow)
			}
			ok := got == tt.want
			if tt.mode == ExtendAdd && tt.want > 0 {
				// ADD counts on the server's clock from the TTL the setup
				// left, which has run down since begin.
				ok = got >= tt.want-time.Duration(sinceMillis(begin))*time.Millisecond && got <= tt.want
			}
			if !ok {
				t.Errorf("Extend(%v, 1s, %d) = %v; want %v", tt.keys, tt.mode, got, tt.want)
			}
			checkKeysSince(t, admin, tt.after, begin)
		})
	}
}

func TestRedisNodeInspect(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		want    Entry // TTL: the most it may be
		wantErr bool
	}{
		{"missing", nil, Entry{}, false},
		{"present", func(t *testing.T) { setKey(t, admin, "k", "mine", time.Second) },
			Entry{Present: true, Token: "mine", TTL: time.Second}, false},
		{"no expiry", func(t *testing.T) { setKey(t, admin, "k", "mine", -1) },
			Entry{Present: true, Token: "mine", TTL: -time.Millisecond}, false},
		{"another type is reported by its type", func(t *testing.T) { admin.RPush(t.Context(), "k", "x") },
			Entry{Present: true, Type: "list", TTL: -time.Millisecond}, false},
		{"a hash lock", func(t *testing.T) {
			admin.HSet(t.Context(), "k", "u:1", 1)
			admin.PExpire(t.Context(), "k", time.Second)
		}, Entry{Present: true, Type: "hash", TTL: time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			if tt.setup != nil {
				tt.setup(t)
			}
			got, err := n.Inspect(t.Context(), "k")
			if (err != nil) != tt.wantErr {
				t.Fatalf(`Inspect("k") = %+v, %v; want error %v`, got, err, tt.wantErr)
			}
			ok := got == tt.want
			if tt.want.TTL > 0 {
				ok = got.Present && got.Token == tt.want.Token && got.Type == tt.want.Type &&
					got.TTL > tt.want.TTL-500*time.Millisecond && got.TTL <= tt.want.TTL
			}
			if !ok {
				t.Errorf(`Inspect("k") = %+v; want %+v`, got, tt.want)
			}
		})
	}
}

func TestRedisNodeDelete(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	setKey(t, admin, "k1", "mine", time.Second)
	setKey(t, admin, "k2", "other", -1)
	admin.RPush(t.Context(), "k3", "x")
	got, err := n.Delete(t.Context(), []string{"k1", "k2", "k3", "k4"})
	if got != 3 || err != nil {
		t.Fatalf("Delete(k1..k4) = %d, %v; want 3, nil", got, err)
	}
	checkKeys(t, admin, map[string]wantKey{"k1": missingKey(), "k2": missingKey(), "k3": missingKey()})
	if got, err := n.Delete(t.Context(), []string{"k1"}); got != 0 || err != nil {
		t.Errorf("Delete(k1) again = %d, %v; want 0, nil", got, err)
	}
}

// A frozen node accepts connections but never answers: every call must
// give up at its context deadline, not at go-redis's own read timeout.
func TestRedisNodeFrozenCallReturnsAtDeadline(t *testing.T) {
	p := startRedis(t)
	warm := p.node(t)
	if _, err := warm.Inspect(t.Context(), "k"); err != nil {
		t.Fatalf("Inspect before freezing: %v", err)
	}
	p.Freeze(t)
	one := Lock{Keys: []string{"k"}, Token: "mine"}
	two := Lock{Keys: []string{"k1", "k2"}, Token: "mine"}
	tests := []struct {
		name string
		node func(t *testing.T) Node
		call func(ctx context.Context, n Node) error
	}{
		{"acquire on a pooled connection, SET NX", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Acquire(ctx, one, time.Second)
			return err
		}},
		{"acquire, script", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Acquire(ctx, two, time.Second)
			return err
		}},
		{"release", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Release(ctx, one, 0)
			return err
		}},
		{"extend", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Extend(ctx, one, time.Second, ExtendSet, 0, 0)
			return err
		}},
		{"inspect", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Inspect(ctx, "k")
			return err
		}},
		{"delete", func(*testing.T) Node { return warm }, func(ctx context.Context, n Node) error {
			_, err := n.Delete(ctx, []string{"k"})
			return err
		}},
		{"acquire on a new connection", func(t *testing.T) Node { return p.node(t) }, func(ctx context.Context, n Node) error {
			_, err := n.Acquire(ctx, one, time.Second)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.node(t)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := tt.call(ctx, n)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatalf("%s on a frozen node = nil; want an error", tt.name)
			}
			// A bound against a 3s+ hang, not a speed test.
			if elapsed > time.Second {
				t.Errorf("%s on a frozen node took %v (%v); want about 100ms, under 1s", tt.name, elapsed, err)
			}
		})
	}
}

// The engine over three real nodes: the Redlock steps end to end, and a
// frozen node costs NodeTimeout and no more.
func TestEngineOverRedisNodes(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	// No node is frozen in the first part, so its NodeTimeout only bounds
	// a node that never answers: a loaded machine must not turn a slow
	// first dial into a failure. Validities are checked against the time
	// each call took, which is all they may lose.
	e := New(Config{NodeTimeout: 10 * time.Second}, nodes...)
	ctx := t.Context()
	lock := Lock{Keys: []string{"job"}, Token: "mine"}
	const ttl = 10 * time.Second
	most := ttl - e.Drift(ttl)

	start := time.Now()
	lease, err := e.Acquire(ctx, lock, ttl)
	least := ttl - time.Since(start) - e.Drift(ttl)
	if err != nil || lease.Granted != 3 || lease.Validity > most || lease.Validity < least {
		t.Fatalf("Acquire = %+v, %v; want 3 granted, validity in [%v, %v]", lease, err, least, most)
	}
	if _, err := e.Acquire(ctx, Lock{Keys: []string{"job"}, Token: "other"}, ttl); !errors.Is(err, ErrDenied) {
		t.Errorf("second Acquire = %v; want %v", err, ErrDenied)
	}
	if st, err := e.Inspect(ctx, "job"); err != nil || !st.Held || st.Token != "mine" || st.Validity <= 0 || st.Validity > most {
		t.Errorf(`Inspect("job") = %+v, %v; want held by "mine" with validity in (0, %v]`, st, err, most)
	}
	// ExtendBy adds to what is left; Extend would leave at most ttl.
	if lease, err := e.ExtendBy(ctx, lock, ttl, 0); err != nil || lease.Granted != 3 || lease.Validity <= ttl {
		t.Errorf("ExtendBy(%v) = %+v, %v; want 3 granted, validity over %v", ttl, lease, err, ttl)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Keys: 1}) {
		t.Errorf("Release = %+v, %v; want {Keys:1}", rel, err)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Missing: 1}) {
		t.Errorf("Release again = %+v, %v; want {Missing:1}", rel, err)
	}

	// The same nodes, now with a short NodeTimeout, and one of them frozen.
	// Without the per-node deadline on the socket, the frozen node would
	// cost go-redis's own read timeout, 3s; a loaded machine may add to
	// NodeTimeout, but not that much.
	const nodeTimeout = 500 * time.Millisecond
	const readTimeout = 3 * time.Second
	e = New(Config{NodeTimeout: nodeTimeout}, nodes...)
	procs[2].Freeze(t)
	start = time.Now()
	lease, err = e.Acquire(ctx, lock, ttl)
	elapsed := time.Since(start)
	if err != nil || lease.Granted != 2 {
		t.Fatalf("Acquire with a frozen node = %+v, %v; want 2 granted", lease, err)
	}
	if ne := (*NodeError)(nil); !errors.As(lease.Failures, &ne) || ne.Node != 2 {
		t.Errorf("Acquire with a frozen node: Failures = %v; want node 2's failure", lease.Failures)
	}
	if elapsed < nodeTimeout || elapsed >= readTimeout {
		t.Errorf("Acquire with a frozen node took %v; want about %v, under go-redis's %v read timeout", elapsed, nodeTimeout, readTimeout)
	}
	if most := ttl - nodeTimeout - e.Drift(ttl); lease.Validity > most {
		t.Errorf("Acquire with a frozen node: validity %v; want at most %v", lease.Validity, most)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Keys: 1}) {
		t.Errorf("Release with a frozen node = %+v, %v; want {Keys:1}", rel, err)
	}
}

// conformStep is one call in a TestFakeNodeMatchesRedisNode scenario. It
// returns the call's result in a form both nodes must agree on.
type conformStep func(t *testing.T, n Node) answer

// answer is a node's answer with a positive TTL in it (a returned TTL, or
// an Entry's) apart: the two nodes count TTLs down on their own clocks,
// Redis in whole milliseconds, so theirs may differ by the time the
// scenario has run, and by no more. Zero and negative TTLs (denied, no
// expiry) stay in text, compared exactly.
type answer struct {
	text string
	ttl  time.Duration
}

func (a answer) String() string {
	if a.ttl == 0 {
		return a.text
	}
	return fmt.Sprintf("%s, TTL %v", a.text, a.ttl)
}

// matches reports whether a and b agree, TTLs within slack.
func (a answer) matches(b answer, slack time.Duration) bool {
	d := a.ttl - b.ttl
	return a.text == b.text && (a.ttl > 0) == (b.ttl > 0) && d <= slack && d >= -slack
}

func norm(v any, err error) answer {
	if err != nil {
		return answer{text: "error"}
	}
	switch v := v.(type) {
	case time.Duration:
		if v > 0 {
			return answer{text: "extended", ttl: v}
		}
	case Acquired:
		// The first positive TTL of a key taken again is compared; the
		// others are left out.
		var ttl time.Duration
		before := make([]string, len(v.Before))
		for i, e := range v.Before {
			if e.TTL > 0 && ttl == 0 {
				ttl, e.TTL = e.TTL, 0
			} else if e.TTL > 0 {
				e.TTL = 0
			}
			before[i] = fmt.Sprintf("%+v", e)
		}
		return answer{text: fmt.Sprintf("granted %v, before %v", v.Granted, before), ttl: ttl}
	case Entry:
		if ttl := v.TTL; ttl > 0 {
			v.TTL = 0
			return answer{text: fmt.Sprintf("{Present:%v Token:%s Type:%s}", v.Present, v.Token, v.Type), ttl: ttl}
		}
		return answer{text: fmt.Sprintf("%+v", v)}
	case CounterEntry:
		// The nodes' clocks differ: their readings (Now, a pending
		// mark) are left out.
		v.Now = 0
		if v.State == CounterPending {
			v.Value = 0
		}
		if ttl := v.TTL; ttl > 0 {
			v.TTL = 0
			return answer{text: fmt.Sprintf("%+v", v), ttl: ttl}
		}
		return answer{text: fmt.Sprintf("%+v", v)}
	}
	return answer{text: fmt.Sprint(v)}
}

func acquireStep(l Lock, ttl time.Duration) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Acquire(t.Context(), l, ttl)) }
}

func undoStep(l Lock, before []Entry) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Undo(t.Context(), l, before, 0)) }
}

func releaseStep(l Lock) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Release(t.Context(), l, 0)) }
}

func extendStep(l Lock, ttl time.Duration, mode ExtendMode) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Extend(t.Context(), l, ttl, mode, 0, 0)) }
}

func inspectStep(key string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Inspect(t.Context(), key)) }
}

func deleteStep(keys ...string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Delete(t.Context(), keys)) }
}

// seedStep stores key = token with ttl (negative: no expiry), as another
// client would.
func seedStep(key, token string, ttl time.Duration) conformStep {
	return func(t *testing.T, n Node) answer {
		switch n := n.(type) {
		case *fakeNode:
			n.with(key, token, ttl)
		case adminNode:
			if err := n.admin.Set(t.Context(), key, token, max(ttl, 0)).Err(); err != nil {
				t.Fatalf("SET %s: %v", key, err)
			}
		}
		return answer{text: "seeded"}
	}
}

// adminNode is a real node with a plain client to the same server, which
// seedStep and countersStep write with.
type adminNode struct {
	Node
	admin *redis.Client
}

// countersStep seeds the node's counters with fields, as
// counter_seed.lua does.
func countersStep(fields map[string]int64) conformStep {
	return func(t *testing.T, n Node) answer {
		switch n := n.(type) {
		case *fakeNode:
			n.withCounters(fields)
		case adminNode:
			args := []any{"seeded", "1"}
			for f, v := range fields {
				args = append(args, f, v)
			}
			n.admin.Del(t.Context(), CountersKey) // seeding writes the hash anew
			if err := n.admin.HSet(t.Context(), CountersKey, args...).Err(); err != nil {
				t.Fatalf("HSET %s: %v", CountersKey, err)
			}
		}
		return answer{text: "seeded counters"}
	}
}

func fenceStep(key, token string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.FenceRound(t.Context(), key, token, FenceField)) }
}

func readCounterStep(key, token, field string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.ReadCounter(t.Context(), key, token, field)) }
}

func writeCounterStep(key, token, field string, v int64, exclusive bool) conformStep {
	return func(t *testing.T, n Node) answer {
		return norm(n.WriteCounter(t.Context(), key, token, field, v, exclusive))
	}
}

func markStep(id string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.MarkCounters(t.Context(), id)) }
}

func countersReadStep() conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Counters(t.Context())) }
}

func sleepStep(d time.Duration) conformStep {
	return func(*testing.T, Node) answer {
		time.Sleep(d)
		return answer{text: "slept"}
	}
}

// The fake must do what the Lua scripts do, or the engine tests prove
// nothing. Each scenario runs on both and their answers must agree.
func TestFakeNodeMatchesRedisNode(t *testing.T) {
	p := startRedis(t)
	admin := p.admin(t)
	rn := adminNode{p.node(t), admin}
	mine := func(keys ...string) Lock { return Lock{Keys: keys, Token: "mine"} }
	tests := []struct {
		name  string
		steps []conformStep
	}{
		{"acquire and release one key", []conformStep{
			acquireStep(mine("k"), time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second),
			inspectStep("k"),
			releaseStep(Lock{Keys: []string{"k"}, Token: "other"}),
			releaseStep(mine("k")),
			releaseStep(mine("k")),
			inspectStep("k"),
		}},
		{"many keys, all or nothing", []conformStep{
			seedStep("k2", "other", time.Second),
			acquireStep(mine("k1", "k2"), time.Second),
			inspectStep("k1"),
			acquireStep(mine("k1", "k3"), 2*time.Second),
			releaseStep(mine("k1", "k2", "k3")),
			deleteStep("k1", "k2", "k3"),
		}},
		{"undo of a re-entry", []conformStep{
			seedStep("k", "app:1", 2*time.Second),
			seedStep("k3", "app:0", -1),
			acquireStep(Lock{Keys: []string{"k", "k2", "k3"}, Token: "app:2", PrefixLen: 4}, time.Second),
			undoStep(Lock{Keys: []string{"k", "k2", "k3"}, Token: "app:2"}, []Entry{
				{Present: true, Token: "app:1", TTL: 1500 * time.Millisecond}, {}, {Present: true, Token: "app:0", TTL: -time.Millisecond},
			}),
			inspectStep("k"),
			inspectStep("k2"),
			inspectStep("k3"),
			undoStep(Lock{Keys: []string{"k"}, Token: "app:2"}, []Entry{{Present: true, Token: "app:9", TTL: time.Second}}),
			inspectStep("k"),
			seedStep("k", "app:2", time.Second),
			undoStep(Lock{Keys: []string{"k"}, Token: "app:2"}, []Entry{{Present: true, Token: "app:1", TTL: 0}}),
			sleepStep(20 * time.Millisecond),
			inspectStep("k"),
		}},
		{"prefix re-entry", []conformStep{
			acquireStep(Lock{Keys: []string{"k"}, Token: "app:1"}, 2*time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, time.Second),
			inspectStep("k"),
			acquireStep(Lock{Keys: []string{"k"}, Token: "web:3", PrefixLen: 4}, time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "ap", PrefixLen: 10}, time.Second),
			acquireStep(Lock{Keys: []string{"k", "k2"}, Token: "app:9", PrefixLen: 4}, 3*time.Second),
			inspectStep("k"),
			inspectStep("k2"),
		}},
		{"extend modes", []conformStep{
			seedStep("k", "mine", 500*time.Millisecond),
			extendStep(mine("k"), time.Second, ExtendSet),
			extendStep(mine("k"), time.Second, ExtendAdd),
			inspectStep("k"),
			extendStep(mine("k", "k2"), time.Second, ExtendOrAcquire),
			inspectStep("k2"),
			extendStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second, ExtendSet),
			seedStep("k3", "mine", -1),
			extendStep(mine("k3"), time.Second, ExtendAdd),
			inspectStep("k3"),
			extendStep(mine("k3"), time.Second, ExtendSet),
			inspectStep("k3"),
			extendStep(mine("missing"), time.Second, ExtendSet),
			extendStep(mine("missing"), time.Second, ExtendAdd),
		}},
		{"extend or acquire over another token", []conformStep{
			seedStep("k2", "other", time.Second),
			extendStep(mine("k1", "k2"), time.Second, ExtendOrAcquire),
			inspectStep("k1"),
			inspectStep("k2"),
		}},
		{"keys expire", []conformStep{
			acquireStep(mine("k"), 50*time.Millisecond),
			sleepStep(100 * time.Millisecond),
			inspectStep("k"),
			releaseStep(mine("k")),
			acquireStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second),
		}},
		{"no expiry", []conformStep{
			seedStep("k", "mine", -1),
			inspectStep("k"),
			acquireStep(mine("k"), time.Second),
			releaseStep(mine("k")),
		}},
		{"counters and FENCE rounds", []conformStep{
			readCounterStep("", "", FenceField),
			markStep("id1"),
			readCounterStep("", "", FenceField),
			writeCounterStep("", "", FenceField, 3, false),
			countersStep(map[string]int64{FenceField: 7}),
			markStep("id2"),
			seedStep("k", "mine", time.Second),
			fenceStep("k", "mine"),
			fenceStep("k", "mine"),
			fenceStep("k", "other"),
			readCounterStep("k", "mine", FenceField),
			writeCounterStep("k", "mine", FenceField, 5, true),
			writeCounterStep("k", "mine", FenceField, 9, false),
			fenceStep("k", "mine"),
			extendStep(mine("k"), 2*time.Second, ExtendSet),
			readCounterStep("k", "mine", FenceField),
			writeCounterStep("k", "other", FenceField, 10, false),
			writeCounterStep("", "", counterPrefix+"x", 3, true),
			countersReadStep(),
			releaseStep(mine("k")),
			readCounterStep("k", "mine", FenceField),
			seedStep("k", "mine", time.Second),
			fenceStep("k", "mine"),
			seedStep("n", "mine", -1),
			fenceStep("n", "mine"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			fake := &fakeNode{addr: "fake", fence: true}
			begin := time.Now()
			for i, step := range tt.steps {
				want, got := step(t, rn), step(t, fake)
				slack := time.Since(begin) + 2*time.Millisecond // Redis's rounding, at each end
				if !got.matches(want, slack) {
					t.Errorf("step %d: fake = %s; want %s, as Redis answered (TTLs within %v)", i, got, want, slack)
				}
			}
		})
	}
}

// Redis refuses SET ... PX 0, so a TTL under 1ms must never leave a key
// that does not expire: a lock nobody can lose.
func TestRedisNodeAcquireNeverSetsKeyWithoutExpiry(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name string
		lock Lock
		ttl  time.Duration
	}{
		{"SET NX, under a millisecond", Lock{Keys: []string{"k"}, Token: "mine"}, 500 * time.Microsecond},
		{"SET NX, negative", Lock{Keys: []string{"k"}, Token: "mine"}, -time.Second},
		{"script, under a millisecond", Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, 500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			got, err := n.Acquire(t.Context(), tt.lock, tt.ttl)
			for _, k := range tt.lock.Keys {
				if v, pttl := keyState(t, admin, k); pttl == -1 {
					t.Errorf("Acquire(%v, %v) = %v, %v and left %s = %q with no expiry; want an error and no key",
						tt.lock.Keys, tt.ttl, got, err, k, v)
				}
			}
		})
	}
}

// Lock.PrefixLen re-enters only "when above zero": a negative one must
// not turn on Lua's negative string indexes.
func TestRedisNodeAcquireNegativePrefixLenIsPlain(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name string
		keys []string
	}{
		{"one key", []string{"k"}},
		{"two keys", []string{"k", "k2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			// Another client's token is ours plus one byte: GETRANGE k 0 -2
			// equals string.sub(token, 1, -1).
			setKey(t, admin, "k", "mineX", -1)
			l := Lock{Keys: tt.keys, Token: "mine", PrefixLen: -1}
			got, err := n.Acquire(t.Context(), l, time.Second)
			if got.Granted || err != nil {
				t.Errorf("Acquire(%+v) over another token = %v, %v; want false, nil", l, got, err)
			}
			checkKeys(t, admin, map[string]wantKey{"k": noExpiry("mineX")})
		})
	}
}

func TestRedisNodeExtendAddRespectsLimit(t *testing.T) {
	p := startRedis(t)
	admin, n := p.admin(t), p.node(t)
	tests := []struct {
		name  string
		limit time.Duration
		want  time.Duration // -1ms: over the limit, nothing set
		after wantKey
	}{
		{"over the limit sets nothing", 1500 * time.Millisecond, -time.Millisecond, expiring("mine", 1000)},
		{"within the limit", 2500 * time.Millisecond, 2 * time.Second, expiring("mine", 2000)},
		{"zero is no limit", 0, 2 * time.Second, expiring("mine", 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			flush(t, admin)
			setKey(t, admin, "k", "mine", time.Second)
			got, err := n.Extend(t.Context(), Lock{Keys: []string{"k"}, Token: "mine"}, time.Second, ExtendAdd, tt.limit, 0)
			if err != nil {
				t.Fatalf("Extend(add 1s, limit %v) = %v", tt.limit, err)
			}
			if got != tt.want && !(tt.want > 0 && got > tt.want-500*time.Millisecond && got <= tt.want) {
				t.Errorf("Extend(add 1s, limit %v) = %v; want %v", tt.limit, got, tt.want)
			}
			checkKeys(t, admin, map[string]wantKey{"k": tt.after})
		})
	}
}

// go-redis stops dialing for a second at a time once PoolSize dials have
// failed; a node that is up again must be reached at once.
func TestRedisNodeReachedAtOnceAfterManyFailedDials(t *testing.T) {
	port := redistest.FreePort(t)
	n := RedisNode(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), false)
	t.Cleanup(func() { n.Close() })
	for i := range 200 {
		if _, err := n.Probe(t.Context()); err == nil {
			t.Fatalf("Probe %d of a closed port = nil error; want a dial error", i)
		}
	}
	if _, err := redistest.StartOn(t, port, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Probe(t.Context()); err != nil {
		t.Fatalf("Probe once the node is up = %v; want it reached at once", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if a, err := n.Acquire(ctx, Lock{Keys: []string{"k"}, Token: "t"}, time.Second); !a.Granted || err != nil {
		t.Fatalf("Acquire once the node is up = %+v, %v; want granted, nil", a, err)
	}
}
