package redisnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestAcquireAnswerDecodesTheReentry(t *testing.T) {
	again := quorum.Entry{Present: true, Token: "app:1", TTL: 1500 * time.Millisecond}
	tests := []struct {
		name    string
		reply   any
		keys    int
		want    quorum.Acquired
		wantErr bool
	}{
		{"denied", int64(0), 1, quorum.Acquired{}, false},
		{"granted, every key free", int64(1), 2, quorum.Acquired{Granted: true}, false},
		{"one key taken again", []any{[]any{"app:1", int64(1500)}}, 1, quorum.Acquired{Granted: true, Before: []quorum.Entry{again}}, false},
		{"taken again beside a free key", []any{int64(0), []any{"app:1", int64(1500)}}, 2, quorum.Acquired{Granted: true, Before: []quorum.Entry{{}, again}}, false},
		{"taken again, no expiry", []any{[]any{"app:1", int64(-1)}}, 1,
			quorum.Acquired{Granted: true, Before: []quorum.Entry{{Present: true, Token: "app:1", TTL: -time.Millisecond}}}, false},
		{"unknown code", int64(2), 1, quorum.Acquired{}, true},
		{"negative code", int64(-1), 1, quorum.Acquired{}, true},
		{"denied, a key holds the token", "app:1", 2, quorum.Acquired{Revealed: true, Held: "app:1"}, false},
		{"denied, no key holds the token", "", 2, quorum.Acquired{Revealed: true}, false},
		{"nil", nil, 1, quorum.Acquired{}, true},
		{"too few items", []any{int64(0)}, 2, quorum.Acquired{}, true},
		{"too many items", []any{int64(0), []any{"a", int64(1)}}, 1, quorum.Acquired{}, true},
		{"no key taken again", []any{int64(0), int64(0)}, 2, quorum.Acquired{}, true},
		{"an item code 1", []any{int64(1)}, 1, quorum.Acquired{}, true},
		{"a pair too short", []any{[]any{"app:1"}}, 1, quorum.Acquired{}, true},
		{"a pair too long", []any{[]any{"app:1", int64(1), int64(2)}}, 1, quorum.Acquired{}, true},
		{"a value not a string", []any{[]any{int64(7), int64(1500)}}, 1, quorum.Acquired{}, true},
		{"a nil value", []any{[]any{nil, int64(1500)}}, 1, quorum.Acquired{}, true},
		{"a pttl not an integer", []any{[]any{"app:1", "1500"}}, 1, quorum.Acquired{}, true},
		{"a pttl of a missing key", []any{[]any{"app:1", int64(-2)}}, 1, quorum.Acquired{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := acquireAnswer(tt.reply, nil, tt.keys)
			if (err != nil) != tt.wantErr || !slices.Equal(got.Before, tt.want.Before) || got.Granted != tt.want.Granted || got.Revealed != tt.want.Revealed || got.Held != tt.want.Held {
				t.Errorf("acquireAnswer(%#v, %d keys) = %+v, %v; want %+v, error %v", tt.reply, tt.keys, got, err, tt.want, tt.wantErr)
			}
			if err != nil && (got.Granted || got.Before != nil || got.Revealed) {
				t.Errorf("acquireAnswer(%#v) = %+v with error %v; want the zero answer", tt.reply, got, err)
			}
		})
	}
}

// The tests below run the node against real redis-server processes: its
// scripts are Lua, and only Redis can say what they do.

func TestRedisNodeAcquire(t *testing.T) {
	p := startRedis(t)
	admin, n := p.Client(t), p.node(t)
	if n.Addr() != p.Addr {
		t.Errorf("Addr() = %q; want %q", n.Addr(), p.Addr)
	}
	// again is a key taken again that held v with about ms left (-1: none).
	again := func(v string, ms int64) quorum.Entry {
		return quorum.Entry{Present: true, Token: v, TTL: time.Duration(ms) * time.Millisecond}
	}
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		lock    quorum.Lock
		want    bool
		before  []quorum.Entry // the answer's Before
		wantErr bool
		keys    map[string]wantKey
	}{
		{"SET NX: free key", nil, quorum.Lock{Keys: []string{"k"}, Token: "mine"}, true, nil, false,
			map[string]wantKey{"k": expiring("mine", 1000)}},
		{"SET NX: held key", holds(admin, "k", "other", 100*time.Second),
			quorum.Lock{Keys: []string{"k"}, Token: "mine"}, false, nil, false,
			map[string]wantKey{"k": expiring("other", 100000)}},
		{"SET NX: key of another type exists", aList(admin, "k"),
			quorum.Lock{Keys: []string{"k"}, Token: "mine"}, false, nil, false, nil},
		{"script: several free keys", nil, quorum.Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, true, nil, false,
			map[string]wantKey{"k1": expiring("mine", 1000), "k2": expiring("mine", 1000)}},
		{"script: one key held sets none", holds(admin, "k2", "other", -1),
			quorum.Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, false, nil, false,
			map[string]wantKey{"k1": missingKey(), "k2": noExpiry("other")}},
		// A re-entry keeps a longer TTL (the engine sets the new one once
		// granted: a failed one must not shorten the earlier grant).
		{"script: own prefix re-enters, keeping a longer TTL", holds(admin, "k", "app:1", 100*time.Second),
			quorum.Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, []quorum.Entry{again("app:1", 100000)}, false,
			map[string]wantKey{"k": expiring("app:2", 100000)}},
		{"script: own prefix re-enters with a longer new TTL", holds(admin, "k", "app:1", 300*time.Millisecond),
			quorum.Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, []quorum.Entry{again("app:1", 300)}, false,
			map[string]wantKey{"k": expiring("app:2", 1000)}},
		{"script: re-entry beside a free key", holds(admin, "k1", "app:1", -1),
			quorum.Lock{Keys: []string{"k1", "k2"}, Token: "app:2", PrefixLen: 4}, true, []quorum.Entry{again("app:1", -1), {}}, false,
			map[string]wantKey{"k1": noExpiry("app:2"), "k2": expiring("app:2", 1000)}},
		{"script: other prefix is denied", holds(admin, "k", "web:1", -1),
			quorum.Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, false, nil, false,
			map[string]wantKey{"k": noExpiry("web:1")}},
		{"script: prefix longer than the tokens", holds(admin, "k", "ab", -1),
			quorum.Lock{Keys: []string{"k"}, Token: "ab", PrefixLen: 10}, true, []quorum.Entry{again("ab", -1)}, false,
			map[string]wantKey{"k": noExpiry("ab")}},
		{"script: prefix on a free key", nil, quorum.Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, true, nil, false,
			map[string]wantKey{"k": expiring("app:2", 1000)}},
		{"script: error reply is a failure", aList(admin, "k"),
			quorum.Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, false, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
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

// TestRedisNodeAcquireRevealsTheHolder: a plain acquire denied says what
// the key holds (SET NX GET) once the node's INFO read Redis 7.0 or
// later, and a key of another type is a denial that holds no token, as
// SET NX's nil there, not an error. Several keys (acquireScript) reveal
// whether one holds the token, whatever the version.
func TestRedisNodeAcquireRevealsTheHolder(t *testing.T) {
	p := startRedis(t)
	admin := p.Client(t)
	mine := func(keys ...string) quorum.Lock { return quorum.Lock{Keys: keys, Token: "mine"} }
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		lock    quorum.Lock
		want    quorum.Acquired // after a probe
		unknown bool            // before a probe: no reveal (Revealed false)
	}{
		{"free key", nil, mine("k"), quorum.Acquired{Granted: true}, false},
		{"held by another token", func(t *testing.T) { redistest.SetKey(t, admin, "k", "other", time.Minute) },
			mine("k"), quorum.Acquired{Revealed: true, Held: "other"}, true},
		{"held by the token", func(t *testing.T) { redistest.SetKey(t, admin, "k", "mine", time.Minute) },
			mine("k"), quorum.Acquired{Revealed: true, Held: "mine"}, true},
		{"held by an empty value", func(t *testing.T) { redistest.SetKey(t, admin, "k", "", time.Minute) },
			mine("k"), quorum.Acquired{Revealed: true}, true},
		{"a key of another type", func(t *testing.T) { admin.RPush(t.Context(), "k", "mine") },
			mine("k"), quorum.Acquired{Revealed: true}, true},
		{"several keys, one holds the token", func(t *testing.T) {
			redistest.SetKey(t, admin, "k1", "other", time.Minute)
			redistest.SetKey(t, admin, "k2", "mine", time.Minute)
		}, mine("k1", "k2"), quorum.Acquired{Revealed: true, Held: "mine"}, false},
		{"several keys, another type beside the token", func(t *testing.T) {
			admin.HSet(t.Context(), "k1", "mine", "1")
			redistest.SetKey(t, admin, "k2", "mine", time.Minute)
		}, mine("k1", "k2"), quorum.Acquired{Revealed: true, Held: "mine"}, false},
		{"several keys, none holds the token", func(t *testing.T) { admin.HSet(t.Context(), "k2", "mine", "1") },
			mine("k1", "k2"), quorum.Acquired{Revealed: true}, false},
	}
	for _, probed := range []bool{false, true} {
		n := p.node(t)
		if probed {
			if _, err := n.Probe(t.Context()); err != nil {
				t.Fatalf("Probe: %v", err)
			}
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s, probed %v", tt.name, probed), func(t *testing.T) {
				redistest.Flush(t, admin)
				if tt.setup != nil {
					tt.setup(t)
				}
				dump := func() map[string]string {
					out := map[string]string{}
					for _, k := range tt.lock.Keys {
						v, _ := admin.Dump(t.Context(), k).Result()
						out[k] = v
					}
					return out
				}
				before := dump()
				want := tt.want
				if tt.unknown && !probed {
					want = quorum.Acquired{}
				}
				got, err := n.Acquire(t.Context(), tt.lock, time.Second)
				if err != nil || got.Granted != want.Granted || got.Revealed != want.Revealed || got.Held != want.Held || got.Before != nil {
					t.Fatalf("Acquire(%+v) = %+v, %v; want %+v", tt.lock, got, err, want)
				}
				if !got.Granted && !maps.Equal(dump(), before) {
					t.Errorf("a denied Acquire changed the keys")
				}
			})
		}
	}
}

// sameBefore reports whether got is want, each positive TTL up to 100ms
// less (it ran on before the read).
func sameBefore(got, want []quorum.Entry) bool {
	return slices.EqualFunc(got, want, func(g, w quorum.Entry) bool {
		if w.TTL > 0 {
			return g.Present == w.Present && g.Token == w.Token && g.TTL <= w.TTL && g.TTL > w.TTL-100*time.Millisecond
		}
		return g == w
	})
}

func TestRedisNodeRelease(t *testing.T) {
	p := startRedis(t)
	admin, n := p.Client(t), p.node(t)
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		keys    []string
		want    []quorum.Found
		wantErr bool
		after   map[string]wantKey
	}{
		{"each code", all(holds(admin, "deleted", "mine", time.Second), holds(admin, "other", "other", -1)),
			[]string{"deleted", "other", "missing"}, []quorum.Found{quorum.FoundDeleted, quorum.FoundOther, quorum.FoundMissing}, false,
			map[string]wantKey{"deleted": missingKey(), "other": noExpiry("other")}},
		{"token must match exactly", holds(admin, "k", "mine:more", -1),
			[]string{"k"}, []quorum.Found{quorum.FoundOther}, false, map[string]wantKey{"k": noExpiry("mine:more")}},
		{"error reply is a failure", aList(admin, "k"), []string{"k"}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			tt.setup(t)
			got, err := n.Release(t.Context(), quorum.Lock{Keys: tt.keys, Token: "mine"}, 0)
			if !slices.Equal(got, tt.want) || (err != nil) != tt.wantErr {
				t.Fatalf("Release(%v) = %v, %v; want %v, error %v", tt.keys, got, err, tt.want, tt.wantErr)
			}
			checkKeys(t, admin, tt.after)
		})
	}
}

func TestRedisNodeExtend(t *testing.T) {
	p := startRedis(t)
	admin, n := p.Client(t), p.node(t)
	tests := []struct {
		name   string
		setup  func(t *testing.T)
		keys   []string
		mode   quorum.ExtendMode
		want   time.Duration // exactly, or for ExtendAdd less the time the keys have run since set
		after  map[string]wantKey
		errRow bool
	}{
		{"set: held", holds(admin, "k", "mine", 100*time.Second),
			[]string{"k"}, quorum.ExtendSet, time.Second, map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"set: no expiry gets one", holds(admin, "k", "mine", -1),
			[]string{"k"}, quorum.ExtendSet, time.Second, map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"set: another token", holds(admin, "k", "other", 100*time.Second),
			[]string{"k"}, quorum.ExtendSet, 0, map[string]wantKey{"k": expiring("other", 100000)}, false},
		{"set: missing", nil, []string{"k"}, quorum.ExtendSet, 0, map[string]wantKey{"k": missingKey()}, false},
		{"set: one key not held changes none", all(holds(admin, "k1", "mine", 100*time.Second), holds(admin, "k2", "other", -1)),
			[]string{"k1", "k2"}, quorum.ExtendSet, 0,
			map[string]wantKey{"k1": expiring("mine", 100000), "k2": noExpiry("other")}, false},
		{"add: held", holds(admin, "k", "mine", time.Second),
			[]string{"k"}, quorum.ExtendAdd, 2 * time.Second, map[string]wantKey{"k": expiring("mine", 2000)}, false},
		{"add: shortest of several", all(holds(admin, "k1", "mine", 3*time.Second), holds(admin, "k2", "mine", 2*time.Second)),
			[]string{"k1", "k2"}, quorum.ExtendAdd, 3 * time.Second,
			map[string]wantKey{"k1": expiring("mine", 4000), "k2": expiring("mine", 3000)}, false},
		{"add: no expiry is denied", holds(admin, "k", "mine", -1),
			[]string{"k"}, quorum.ExtendAdd, 0, map[string]wantKey{"k": noExpiry("mine")}, false},
		{"add: missing", nil, []string{"k"}, quorum.ExtendAdd, 0, map[string]wantKey{"k": missingKey()}, false},
		{"acquire: missing is set", nil, []string{"k"}, quorum.ExtendOrAcquire, time.Second,
			map[string]wantKey{"k": expiring("mine", 1000)}, false},
		{"acquire: held and missing", holds(admin, "k1", "mine", -1),
			[]string{"k1", "k2"}, quorum.ExtendOrAcquire, time.Second,
			map[string]wantKey{"k1": expiring("mine", 1000), "k2": expiring("mine", 1000)}, false},
		{"acquire: another token sets none", holds(admin, "k2", "other", -1),
			[]string{"k1", "k2"}, quorum.ExtendOrAcquire, 0,
			map[string]wantKey{"k1": missingKey(), "k2": noExpiry("other")}, false},
		{"error reply is a failure", aList(admin, "k"), []string{"k"}, quorum.ExtendSet, 0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			begin := time.Now()
			if tt.setup != nil {
				tt.setup(t)
			}
			got, err := n.Extend(t.Context(), quorum.Lock{Keys: tt.keys, Token: "mine"}, time.Second, tt.mode, 0, 0)
			if (err != nil) != tt.errRow {
				t.Fatalf("Extend(%v, 1s, %d) = %v, %v; want error %v", tt.keys, tt.mode, got, err, tt.errRow)
			}
			ok := got == tt.want
			if tt.mode == quorum.ExtendAdd && tt.want > 0 {
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
	admin, n := p.Client(t), p.node(t)
	tests := []struct {
		name    string
		setup   func(t *testing.T)
		want    quorum.Entry // TTL: the most it may be
		wantErr bool
	}{
		{"missing", nil, quorum.Entry{}, false},
		{"present", holds(admin, "k", "mine", time.Second),
			quorum.Entry{Present: true, Token: "mine", TTL: time.Second}, false},
		{"no expiry", holds(admin, "k", "mine", -1),
			quorum.Entry{Present: true, Token: "mine", TTL: -time.Millisecond}, false},
		{"another type is reported by its type", aList(admin, "k"),
			quorum.Entry{Present: true, Type: "list", TTL: -time.Millisecond}, false},
		{"a hash lock", func(t *testing.T) {
			admin.HSet(t.Context(), "k", "u:1", 1)
			admin.PExpire(t.Context(), "k", time.Second)
		}, quorum.Entry{Present: true, Type: "hash", TTL: time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
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
	admin, n := p.Client(t), p.node(t)
	redistest.SetKey(t, admin, "k1", "mine", time.Second)
	redistest.SetKey(t, admin, "k2", "other", -1)
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
	one := quorum.Lock{Keys: []string{"k"}, Token: "mine"}
	two := quorum.Lock{Keys: []string{"k1", "k2"}, Token: "mine"}
	tests := []struct {
		name string
		node func(t *testing.T) quorum.Node
		call func(ctx context.Context, n quorum.Node) error
	}{
		{"acquire on a pooled connection, SET NX", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Acquire(ctx, one, time.Second)
			return err
		}},
		{"acquire, script", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Acquire(ctx, two, time.Second)
			return err
		}},
		{"release", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Release(ctx, one, 0)
			return err
		}},
		{"extend", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Extend(ctx, one, time.Second, quorum.ExtendSet, 0, 0)
			return err
		}},
		{"inspect", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Inspect(ctx, "k")
			return err
		}},
		{"delete", func(*testing.T) quorum.Node { return warm }, func(ctx context.Context, n quorum.Node) error {
			_, err := n.Delete(ctx, []string{"k"})
			return err
		}},
		{"acquire on a new connection", func(t *testing.T) quorum.Node { return p.node(t) }, func(ctx context.Context, n quorum.Node) error {
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

// Redis refuses SET ... PX 0, so a TTL under 1ms must never leave a key
// that does not expire: a lock nobody can lose.
func TestRedisNodeAcquireNeverSetsKeyWithoutExpiry(t *testing.T) {
	p := startRedis(t)
	admin, n := p.Client(t), p.node(t)
	tests := []struct {
		name string
		lock quorum.Lock
		ttl  time.Duration
	}{
		{"SET NX, under a millisecond", quorum.Lock{Keys: []string{"k"}, Token: "mine"}, 500 * time.Microsecond},
		{"SET NX, negative", quorum.Lock{Keys: []string{"k"}, Token: "mine"}, -time.Second},
		{"script, under a millisecond", quorum.Lock{Keys: []string{"k1", "k2"}, Token: "mine"}, 500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			got, err := n.Acquire(t.Context(), tt.lock, tt.ttl)
			for _, k := range tt.lock.Keys {
				if v, pttl := redistest.KeyState(t, admin, k); pttl == -1 {
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
	admin, n := p.Client(t), p.node(t)
	tests := []struct {
		name string
		keys []string
	}{
		{"one key", []string{"k"}},
		{"two keys", []string{"k", "k2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			// Another client's token is ours plus one byte: GETRANGE k 0 -2
			// equals string.sub(token, 1, -1).
			redistest.SetKey(t, admin, "k", "mineX", -1)
			l := quorum.Lock{Keys: tt.keys, Token: "mine", PrefixLen: -1}
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
	admin, n := p.Client(t), p.node(t)
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
			redistest.Flush(t, admin)
			redistest.SetKey(t, admin, "k", "mine", time.Second)
			got, err := n.Extend(t.Context(), quorum.Lock{Keys: []string{"k"}, Token: "mine"}, time.Second, quorum.ExtendAdd, tt.limit, 0)
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
	n := NewRedisNode(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), NodeOptions{})
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
	if a, err := n.Acquire(ctx, quorum.Lock{Keys: []string{"k"}, Token: "t"}, time.Second); !a.Granted || err != nil {
		t.Fatalf("Acquire once the node is up = %+v, %v; want granted, nil", a, err)
	}
}
