package quorum

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/clientlua"
	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// Scripts real clients send (internal/clientlua).
const (
	semaphoreAcquire   = clientlua.SemaphoreAcquire
	redissonUnlockBody = clientlua.RedissonUnlock
	symfonySave        = clientlua.SymfonySave
)

// wrapRow is one run of a wrapped script on one node, from a state the
// row sets up: refused (a substring of the reason) or served as op.
type wrapRow struct {
	name    string
	setup   func(ctx context.Context, admin *redis.Client)
	body    string
	lits    []string
	keys    []string // nil: just "k"
	args    []string
	refused string
	op      EffectOp
	check   func(t *testing.T, ctx context.Context, admin *redis.Client)
}

func runWrapRows(t *testing.T, form wrapperForm, rows []wrapRow) {
	admin, n, e := formEngine(t, form)
	for _, tt := range rows {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			redistest.Flush(t, admin)
			if tt.setup != nil {
				tt.setup(ctx, admin)
			}
			keys := tt.keys
			if keys == nil {
				keys = []string{"k"}
			}
			eff := e.Wrap(tt.body, tt.lits)
			ne, err := n.RunEffect(ctx, eff, newEffectCall(keys, tt.args, 1), nil)
			if err != nil {
				t.Fatalf("runEffect: %v", err)
			}
			switch {
			case tt.refused != "" && !strings.Contains(ne.Refused, tt.refused):
				t.Errorf("refused = %q; want it to say %q", ne.Refused, tt.refused)
			case tt.refused == "" && ne.Refused != "":
				t.Errorf("refused: %s", ne.Refused)
			case tt.refused == "":
				if op, _ := classifyEffect(ne.Keys, 0.01); op != tt.op {
					t.Errorf("classified as %v; want %v (keys %+v)", op, tt.op, ne.Keys)
				}
			}
			if tt.check != nil {
				tt.check(t, ctx, admin)
			}
		})
	}
}

// wantHash checks that key is a hash of n fields, with field f = v, and
// expires within (ttl-1s, ttl].
func wantHash(t *testing.T, ctx context.Context, admin *redis.Client, key string, n int64, f, v string, ttl time.Duration) {
	t.Helper()
	if got := admin.HLen(ctx, key).Val(); got != n {
		t.Errorf("HLEN %s = %d; want %d", key, got, n)
	}
	if got := admin.HGet(ctx, key, f).Val(); got != v {
		t.Errorf("HGET %s %s = %q; want %q", key, f, got, v)
	}
	if pttl := admin.PTTL(ctx, key).Val(); pttl > ttl || pttl < ttl-time.Second {
		t.Errorf("PTTL %s = %v; want %v", key, pttl, ttl)
	}
}

func wantNoKey(t *testing.T, ctx context.Context, admin *redis.Client, key string) {
	t.Helper()
	if n := admin.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("%s exists (%s); want no key", key, admin.Type(ctx, key).Val())
	}
}

// bigHash makes key a hash of n fields, "tok-owner" among them, that
// expires in 10s.
func bigHash(key string, n int) func(ctx context.Context, admin *redis.Client) {
	return func(ctx context.Context, admin *redis.Client) {
		args := make([]any, 0, 2*n)
		args = append(args, "tok-owner", 1)
		for i := 1; i < n; i++ {
			args = append(args, "f"+strconv.Itoa(i), i)
		}
		admin.HSet(ctx, key, args...)
		admin.PExpire(ctx, key, 10*time.Second)
	}
}

// TestEffectUnclassifiedWriteIsRefused: a write the wrapper cannot read
// as a take, extend or release of a hold in its hold table is refused
// and rolled back, never served as a read (issue 16, finding 3).
func TestEffectUnclassifiedWriteIsRefused(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		nowMillis := func() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
		runWrapRows(t, form, []wrapRow{
			{name: "redis-semaphore scores a member by its acquisition time", body: semaphoreAcquire,
				args: []string{"1", "tok-a", "10000", nowMillis()}, refused: "not its expiry",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
			{name: "redis-semaphore beside another's member: both kept as they were", body: semaphoreAcquire,
				setup: func(ctx context.Context, admin *redis.Client) {
					admin.ZAdd(ctx, "k", redisZ(float64(time.Now().UnixMilli()), "tok-b"))
					admin.PExpire(ctx, "k", 10*time.Second)
				},
				args: []string{"2", "tok-a", "10000", nowMillis()}, refused: "not its expiry",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					if m := admin.ZRange(ctx, "k", 0, -1).Val(); len(m) != 1 || m[0] != "tok-b" {
						t.Errorf("ZRANGE k = %q; want only tok-b", m)
					}
				}},
			{name: "a member scored past max_ttl", body: `redis.call("zadd", KEYS[1], ARGV[2], ARGV[1]) redis.call("pexpire", KEYS[1], 5000) return 1`,
				args: []string{"tok", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)}, refused: "not its expiry",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
			{name: "a member scored by its expiry is a hold",
				body: `local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zadd", KEYS[1], now + 5000, ARGV[1]) redis.call("pexpireat", KEYS[1], now + 5000) return 1`,
				args: []string{"tok"}, op: EffectHold},
		})
	})
}

// TestEffectConstantIsNotAToken: a holder equal to a constant of the
// script is no one's token, whatever the script; constants are written
// only as markers: a string that expires at once (Symfony's probe), a
// latch beside a change to an own hold (Redisson's unlock), a member or
// field beside an own holder (Symfony's "__write__").
func TestEffectConstantIsNotAToken(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		heldBy := func(v string) func(context.Context, *redis.Client) {
			return func(ctx context.Context, admin *redis.Client) { admin.Set(ctx, "k", v, 10*time.Second) }
		}
		keeps := func(v string) func(*testing.T, context.Context, *redis.Client) {
			return func(t *testing.T, ctx context.Context, admin *redis.Client) {
				if got := admin.Get(ctx, "k").Val(); got != v {
					t.Errorf("GET k = %q; want %q", got, v)
				}
			}
		}
		runWrapRows(t, form, []wrapRow{
			{name: `a lock holding "1" is not released by a script containing 1`, setup: heldBy("1"),
				body: `if redis.call("get", KEYS[1]) == "1" then return redis.call("del", KEYS[1]) end return 0`, lits: []string{"1"},
				refused: "another token's hold", check: keeps("1")},
			{name: "nor re-timed", setup: heldBy("1"),
				body: `if redis.call("get", KEYS[1]) == "1" then return redis.call("pexpire", KEYS[1], 50000) end return 0`, lits: []string{"1"},
				refused: "another token's hold", check: keeps("1")},
			{name: "a constant taken as a lock", body: `return redis.call("set", KEYS[1], "locked", "NX", "PX", 30000)`, lits: []string{"locked"},
				refused: "a constant is not a token",
				check:   func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
			{name: "Symfony's probe: a constant that expires at once", body: `local now = redis.call("TIME") redis.call("SET", KEYS[1], "1", "PX", 1) return 1`,
				lits: []string{"1"}, op: EffectRead},
			{name: "Redisson's unlock: a release and its latch", keys: []string{"k", "ch", "latch"},
				setup: func(ctx context.Context, admin *redis.Client) {
					admin.HSet(ctx, "k", "owner:1", 1)
					admin.PExpire(ctx, "k", 10*time.Second)
				},
				body: redissonUnlockBody, lits: []string{"0", "1"}, args: []string{"0", "30000", "owner:1", "PUBLISH", "3000"}, op: EffectRelease,
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantNoKey(t, ctx, admin, "k")
					if v := admin.Get(ctx, "latch").Val(); v != "1" {
						t.Errorf("latch = %q; want 1", v)
					}
				}},
			{name: "a latch with no own hold changed beside it", keys: []string{"k", "ch", "latch"}, setup: heldBy("other"),
				body: `redis.call("set", KEYS[3], 1, "px", ARGV[1]) return 1`, lits: []string{"1"}, args: []string{"3000"},
				refused: "a constant is not a token",
				check:   func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "latch") }},
			{name: "Symfony's write lock: a marker member beside the own one", body: symfonySave, lits: []string{"__write__"},
				args: []string{"0", "tok", "5000"}, op: EffectHold,
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					if n := admin.ZCard(ctx, "k").Val(); n != 2 {
						t.Errorf("ZCARD k = %d; want the token and __write__", n)
					}
				}},
			{name: "a marker member where no own member holds",
				body: `local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zadd", KEYS[1], now + 5000, "__write__") redis.call("pexpireat", KEYS[1], now + 5000) return 1`,
				lits: []string{"__write__"}, refused: "a constant is not a token",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
		})
	})
}

// TestEffectForeignFieldIsRefused: a field added to a hash that another
// token holds changes that hold (its fields share the key's expiry), so
// it is refused like any other change to it; the owner's renewal beside
// marker fields is its own (issue 16, finding 6).
func TestEffectForeignFieldIsRefused(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		ownerHash := func(extra ...any) func(context.Context, *redis.Client) {
			return func(ctx context.Context, admin *redis.Client) {
				admin.HSet(ctx, "k", append([]any{"owner:1", 1}, extra...)...)
				admin.PExpire(ctx, "k", 10*time.Second)
			}
		}
		untouched := func(t *testing.T, ctx context.Context, admin *redis.Client) {
			wantHash(t, ctx, admin, "k", 1, "owner:1", "1", 10*time.Second)
		}
		runWrapRows(t, form, []wrapRow{
			{name: "HSET of an own field into another's hash", setup: ownerHash(),
				body: `redis.call("hset", KEYS[1], ARGV[1], 1) return 1`, args: []string{"thief:1"},
				refused: "adds to a key another token holds", check: untouched},
			{name: "Redisson's lock shape with the field forced in", setup: ownerHash(),
				body: `redis.call('hincrby', KEYS[1], ARGV[2], 1) return nil`, args: []string{"30000", "thief:1"},
				refused: "adds to a key another token holds", check: untouched},
			{name: "the owner's renewal is its own", setup: ownerHash(),
				body: redissonRenewBody, args: []string{"30000", "owner:1"}, op: EffectHold,
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantHash(t, ctx, admin, "k", 1, "owner:1", "1", 30*time.Second)
				}},
			{name: "the owner's renewal beside a marker field", setup: ownerHash("mode", "write"),
				body: redissonRenewBody, lits: []string{"mode"}, args: []string{"30000", "owner:1"}, op: EffectHold,
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantHash(t, ctx, admin, "k", 2, "owner:1", "1", 30*time.Second)
				}},
			{name: "a marker field added to another's hash", setup: ownerHash(),
				body: `redis.call("hset", KEYS[1], "mode", "read") return 1`, lits: []string{"mode"},
				refused: "another token holds", check: untouched},
		})
	})
}

const redissonRenewBody = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"

// maxSnapshotEntries is the wrapper's bound on a key's entries
// (quorum/redisnode's): a row below fails if the two differ.
const maxSnapshotEntries = 10000

// TestEffectRollbackIsAllOrNothing: a refused run's keys go back whole,
// whatever their size up to the snapshot bound, and a write to a key
// over the bound is refused before it runs (issue 16, finding 5).
func TestEffectRollbackIsAllOrNothing(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		keeps := func(n int64) func(*testing.T, context.Context, *redis.Client) {
			return func(t *testing.T, ctx context.Context, admin *redis.Client) {
				wantHash(t, ctx, admin, "k", n, "tok-owner", "1", 10*time.Second)
				if v := admin.HGet(ctx, "k", "f4999").Val(); n > 4999 && v != "4999" {
					t.Errorf("HGET k f4999 = %q; want 4999", v)
				}
			}
		}
		const maxed = maxSnapshotEntries + 1
		runWrapRows(t, form, []wrapRow{
			{name: "HDEL of another's field in a hash of 5000", setup: bigHash("k", 5000),
				body: `redis.call("hdel", KEYS[1], "tok-owner") return 1`, refused: "another token's hold", check: keeps(5000)},
			{name: "DEL of a hash of 5000", setup: bigHash("k", 5000),
				body: `return redis.call("del", KEYS[1])`, refused: "another token's hold", check: keeps(5000)},
			{name: "fields added and changed in a hash of 5000", setup: bigHash("k", 5000),
				body:    `for i = 1, 600 do redis.call("hset", KEYS[1], "f" .. i, "x", "n" .. i, "y") end return 1`,
				refused: "another token", check: keeps(5000)},
			{name: "a write to a hash over the bound is refused before it runs", setup: bigHash("k", maxed),
				body: `redis.call("hdel", KEYS[1], "tok-owner") return 1`, refused: fmt.Sprintf("at most %d", maxSnapshotEntries), check: keeps(maxed)},
			{name: "a run that leaves a hash over the bound", args: manyTokens(maxed),
				body:    `for i = 1, #ARGV do redis.call("hset", KEYS[1], ARGV[i], 1) end redis.call("pexpire", KEYS[1], 5000) return 1`,
				refused: fmt.Sprintf("at most %d", maxSnapshotEntries),
				check:   func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
			{name: "a list key is refused before the write", setup: func(ctx context.Context, admin *redis.Client) { admin.RPush(ctx, "k", "a") },
				body: `return redis.call("del", KEYS[1])`, refused: "changes a list key",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					if n := admin.LLen(ctx, "k").Val(); n != 1 {
						t.Errorf("LLEN k = %d; want 1", n)
					}
				}},
		})
	})
}

func manyTokens(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "tok" + strconv.Itoa(i)
	}
	return out
}

// TestEffectPublishOnlyWhatRan: a refused run's PUBLISH reaches no
// subscriber; a served run's does, once, after the run; the body's
// PUBLISH answers 0.
func TestEffectPublishOnlyWhatRan(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		ctx := t.Context()
		sub := subscribe(t, admin, "ch")
		run := func(body string, args ...string) NodeEffect {
			t.Helper()
			ne, err := n.RunEffect(ctx, e.Wrap(body, nil), newEffectCall([]string{"k", "ch"}, args, 1), nil)
			if err != nil {
				t.Fatalf("runEffect: %v", err)
			}
			return ne
		}
		admin.Set(ctx, "k", "other", 10*time.Second)
		ne := run(`redis.call("publish", KEYS[2], ARGV[1]) return redis.call("del", KEYS[1])`, "refused-msg")
		if !strings.Contains(ne.Refused, "another token's hold") {
			t.Fatalf("refused = %q; want another token's hold", ne.Refused)
		}
		ne = run(`local n = redis.call(ARGV[2], KEYS[2], ARGV[1]) return n`, "served-msg", "PUBLISH")
		if ne.Refused != "" || ne.Reply.Kind != ValueInt || ne.Reply.Int != 0 {
			t.Fatalf("served run = %+v; want the integer 0", ne)
		}
		if got := nextPayload(t, sub); got != "served-msg" {
			t.Fatalf("first message = %q; want served-msg (the refused run's is never sent)", got)
		}
	})
}

// TestEffectTagsWhatItPublishes: each message a run publishes starts
// with the call's tag (internal/pubid), which the body does not see in
// ARGV, with the publish's place in the run in its last two bytes, so
// that two publishes of one message in one run are two; a number is
// tagged when Redis writes it as Lua's tostring does, else sent as it
// is. Through the engine, each run has a tag of its own.
func TestEffectTagsWhatItPublishes(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		ctx := t.Context()
		sub := subscribe(t, admin, "ch")
		next := func() string {
			t.Helper()
			return nextPayload(t, sub)
		}
		// The run's messages, for its tag: the j-th publish's tag has j
		// in its last two bytes.
		want := func(tag string) []string {
			nth := func(j byte) string { return tag[:len(tag)-2] + string([]byte{0, j}) }
			return []string{tag + "msg", nth(1) + "msg", nth(2) + "5", "1.5"}
		}
		w := e.Wrap(`redis.call("publish", KEYS[1], ARGV[1]) redis.call("publish", KEYS[1], ARGV[1])
redis.call("publish", KEYS[1], 5) redis.call("publish", KEYS[1], 1.5) return #ARGV`, nil)
		for range 2 { // a library compiles the body on its first run
			call := newEffectCall([]string{"ch"}, []string{"msg"}, 1)
			call.Tag = pubid.New()
			ne, err := n.RunEffect(ctx, w, call, nil)
			if err != nil || ne.Refused != "" || ne.Reply.Kind != ValueInt || ne.Reply.Int != 1 {
				t.Fatalf("run = %+v, %v; want the integer 1 (#ARGV without the tag)", ne, err)
			}
			for _, m := range want(call.Tag) {
				if got := next(); got != m {
					t.Fatalf("message %q; want %q", got, m)
				}
			}
		}
		var tags []string
		for range 2 {
			if _, err := e.RunEffect(ctx, w, []string{"ch"}, []string{"msg"}); err != nil {
				t.Fatalf("RunEffect: %v", err)
			}
			first := next()
			tag, rest, ok := pubid.Split(first)
			if !ok || rest != "msg" {
				t.Fatalf("the engine's run published %q; want a tag, then msg", first)
			}
			for _, m := range want(tag)[1:] {
				if got := next(); got != m {
					t.Fatalf("message %q; want %q", got, m)
				}
			}
			tags = append(tags, tag)
		}
		if tags[0] == tags[1] {
			t.Errorf("two runs published with one tag %q", tags[0])
		}
	})
}

// TestEffectReportsOtherHolders: a key the run changed reports how many
// other tokens' holders it kept through the run (KeyEffect.Others).
func TestEffectReportsOtherHolders(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		ctx := t.Context()
		later := float64(time.Now().Add(10 * time.Second).UnixMilli())
		admin.ZAdd(ctx, "k", redisZ(later, "reader-b"), redisZ(1, "expired-c"))
		admin.PExpire(ctx, "k", 10*time.Second)
		body := `local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zadd", KEYS[1], now + 5000, ARGV[1]) return 1`
		ne, err := n.RunEffect(ctx, e.Wrap(body, nil), newEffectCall([]string{"k"}, []string{"reader-a"}, 1), nil)
		if err != nil || ne.Refused != "" || len(ne.Keys) != 1 {
			t.Fatalf("runEffect = %+v, %v", ne, err)
		}
		if k := ne.Keys[0]; k.Others != 1 || !k.Changed || len(k.AfterOwn) != 1 || k.AfterOwn[0] != "reader-a" {
			t.Errorf("key effect = %+v; want reader-a taken beside 1 other holder", k)
		}
	})
}

// TestEffectRedissonModeIsAMarker: the "mode" field of Redisson's
// read-write lock hash ("write" or "read") is a marker of the hold table,
// whatever the script: the holder's watchdog, which names no "mode",
// renews the lock (it was refused as another token's hold, and the lock
// lapsed), and "mode" never holds the key for anyone, even named by ARGV.
func TestEffectRedissonModeIsAMarker(t *testing.T) {
	renew := "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
	writeLocked := func(fields ...any) func(context.Context, *redis.Client) {
		return func(ctx context.Context, admin *redis.Client) {
			admin.HSet(ctx, "k", fields...)
			admin.PExpire(ctx, "k", 10*time.Second)
		}
	}
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		runWrapRows(t, form, []wrapRow{
			{name: "the write lock's holder renews it", setup: writeLocked("mode", "write", "owner:1:write", 1),
				body: renew, args: []string{"30000", "owner:1:write"}, op: EffectHold,
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantHash(t, ctx, admin, "k", 2, "mode", "write", 30*time.Second)
				}},
			{name: `"mode" named by ARGV is still no holder`, setup: writeLocked("mode", "write", "owner:1:write", 1),
				body: renew, args: []string{"30000", "mode"}, refused: "another token's hold",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantHash(t, ctx, admin, "k", 2, "owner:1:write", "1", 10*time.Second)
				}},
			{name: "a mode alone holds for no one", setup: writeLocked("mode", "write"),
				body: `redis.call("hset", KEYS[1], ARGV[2], 1) return redis.call("pexpire", KEYS[1], ARGV[1])`,
				args: []string{"30000", "intruder:1:write"}, refused: "another token's hold",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) {
					wantHash(t, ctx, admin, "k", 1, "mode", "write", 10*time.Second)
				}},
			{name: "a mode written by ARGV where no own holder holds",
				body: `redis.call("hset", KEYS[1], ARGV[1], ARGV[2]) return redis.call("pexpire", KEYS[1], ARGV[3])`,
				args: []string{"mode", "write", "30000"}, refused: "a constant is not a token",
				check: func(t *testing.T, ctx context.Context, admin *redis.Client) { wantNoKey(t, ctx, admin, "k") }},
			{name: "another token's field beside the write lock", setup: writeLocked("mode", "write", "owner:1:write", 1),
				body: `redis.call("hset", KEYS[1], ARGV[2], 1) return redis.call("pexpire", KEYS[1], ARGV[1])`,
				args: []string{"30000", "other:2:write"}, refused: "another token's hold"},
		})
	})
}

// TestEffectReportsMarkersItAdded: a run that takes a key new reports the
// markers it wrote beside its holders, with their values (what an undo
// removes); a run on a key it already held, or a marker it left as it
// was, reports none.
func TestEffectReportsMarkersItAdded(t *testing.T) {
	const save = `local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("zadd", KEYS[1], now + 5000, ARGV[1])
redis.call("zadd", KEYS[1], now + 5000, "__write__")
redis.call("pexpireat", KEYS[1], now + 5000) return 1`
	const rwlock = `redis.call("hset", KEYS[1], "mode", "write") redis.call("hincrby", KEYS[1], ARGV[1], 1)
return redis.call("pexpire", KEYS[1], 5000)`
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		ctx := t.Context()
		run := func(body, key string, lits []string) KeyEffect {
			t.Helper()
			ne, err := n.RunEffect(ctx, e.Wrap(body, lits), newEffectCall([]string{key}, []string{"tok"}, 1), nil)
			if err != nil || ne.Refused != "" || len(ne.Keys) != 1 {
				t.Fatalf("runEffect = %+v, %v", ne, err)
			}
			return ne.Keys[0]
		}
		k := run(save, "z", []string{"__write__"})
		score := admin.ZScore(ctx, "z", "tok").Val()
		want := []Marker{{Entry: "__write__", Value: strconv.FormatFloat(score, 'f', -1, 64)}}
		if !slices.Equal(k.Markers, want) || !slices.Equal(k.AfterOwn, []string{"tok"}) {
			t.Errorf("a save on a free key reports %+v; want tok taken with markers %v", k, want)
		}
		if k := run(save, "z", []string{"__write__"}); k.Markers != nil || len(k.BeforeOwn) != 1 {
			t.Errorf("a save on the caller's own hold reports %+v; want no markers", k)
		}
		if k := run(rwlock, "h", nil); !slices.Equal(k.Markers, []Marker{{Entry: "mode", Value: "write"}}) {
			t.Errorf("a write lock on a free key reports %+v; want the marker mode=write", k)
		}
	})
}
