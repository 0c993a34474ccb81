package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/clientlua"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// goZeroLock is go-zero's RedisLock acquire (internal/clientlua).
const goZeroLock = clientlua.GoZeroLock

// wrapperForm is how a test's node runs wrapped scripts: as a library
// (FUNCTION LOAD, FCALL) or as scripts (EVALSHA), as a node whose ACL has
// no functions does.
type wrapperForm bool

const (
	asLibrary wrapperForm = false
	asScript  wrapperForm = true
)

// check checks at the end of the test that a node made in this form ran
// wrapped scripts in it: the library form leaves the node a library.
func (f wrapperForm) check(t *testing.T, admin *redis.Client) {
	t.Cleanup(func() {
		libs, err := admin.Do(context.Background(), "FUNCTION", "LIST").Slice()
		if err != nil || (len(libs) > 0) == bool(f) {
			t.Errorf("as %v: FUNCTION LIST = %d libraries, %v", f, len(libs), err)
		}
	})
}

func (f wrapperForm) String() string {
	if f == asScript {
		return "script"
	}
	return "library"
}

// formEngine starts a redis-server and an engine over it alone that runs
// wrapped scripts in form.
func formEngine(t *testing.T, form wrapperForm) (*redis.Client, Node, *Engine) {
	t.Helper()
	p := startRedis(t)
	admin, n := p.Client(t), p.nodeIn(t, form)
	form.check(t, admin)
	return admin, n, New(Config{MaxTTL: time.Minute}, n)
}

// inBothForms runs test with wrapped scripts run as libraries, then as
// scripts.
func inBothForms(t *testing.T, test func(*testing.T, wrapperForm)) {
	for _, f := range []wrapperForm{asLibrary, asScript} {
		t.Run(f.String(), func(t *testing.T) { test(t, f) })
	}
}

// TestEffectWrapperBranches runs the wrapper on a real redis-server, one
// row per branch: what the node holds after, the reply, and what the
// run is classified as.
func TestEffectWrapperBranches(t *testing.T) { inBothForms(t, testEffectWrapperBranches) }

func testEffectWrapperBranches(t *testing.T, form wrapperForm) {
	admin, n, e := formEngine(t, form)
	type setup func()
	none := func() {}
	held := func(v string) setup {
		return func() { admin.Set(t.Context(), "k", v, 10*time.Second) }
	}
	tests := []struct {
		name     string
		setup    setup
		body     string
		lits     []string
		keys     []string // KEYS; nil is just "k"
		args     []string
		refused  string // a substring of the reason, if refused
		reply    Value
		op       EffectOp
		want     string // the key's value after ("" = missing)
		wantHash map[string]string
	}{
		{name: "take a free key", setup: none,
			body: `return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, args: []string{"tok", "5000"},
			reply: Value{Kind: ValueStatus, Str: "OK"}, op: EffectHold, want: "tok"},
		{name: "refresh own: bulk OK", setup: held("tok"),
			body: `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return "OK" end return false`,
			args: []string{"tok", "5000"}, reply: Value{Kind: ValueBulk, Str: "OK"}, op: EffectHold, want: "tok"},
		{name: "held by another: false is nil", setup: held("other"),
			body: `if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return true end return false`,
			args: []string{"tok", "5000"}, reply: Value{Kind: ValueNil}, op: EffectRead, want: "other"},
		{name: "true is 1", setup: none,
			body: `redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return true`, args: []string{"tok", "5000"},
			reply: Value{Kind: ValueInt, Int: 1}, op: EffectHold, want: "tok"},
		{name: "release own", setup: held("tok"),
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`,
			args: []string{"tok"}, reply: Value{Kind: ValueInt, Int: 1}, op: EffectRelease},
		{name: "overwrite another's hold: refused, restored", setup: held("other"),
			body: `return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])`, args: []string{"tok", "5000"},
			refused: "another token's hold", want: "other"},
		{name: "delete another's hold: refused, restored", setup: held("other"),
			body: `return redis.call("del", KEYS[1])`, refused: "another token's hold", want: "other"},
		{name: "ARGV rewritten by the body: another's hold is not its own", setup: held("other"),
			body: `local a = ARGV a[1] = redis.call("get", KEYS[1]) return redis.call("del", KEYS[1])`, args: []string{"tok"},
			refused: "another token's hold", want: "other"},
		{name: "a token appended to ARGV by the body is not its own", setup: held("other"),
			body: `table.insert(ARGV, redis.call("get", KEYS[1])) return redis.call("del", KEYS[1])`, args: []string{"tok"},
			refused: "another token's hold", want: "other"},
		{name: "extend another's hold: refused", setup: held("other"),
			body: `return redis.call("pexpire", KEYS[1], 50000)`, refused: "expiry of another token's hold", want: "other"},
		{name: "no expiry: refused, nothing left", setup: none,
			body: `return redis.call("set", KEYS[1], ARGV[1])`, args: []string{"tok"}, refused: "without an expiry"},
		{name: "over max_ttl: refused", setup: none,
			body: `return redis.call("set", KEYS[1], ARGV[1], "PX", 3600000)`, args: []string{"tok"}, refused: "over max_ttl"},
		{name: "a value not among the arguments: refused", setup: none,
			body: `return redis.call("set", KEYS[1], tostring(math.random()), "PX", 1000)`, refused: "none of its arguments"},
		{name: "command from ARGV outside the allow-list: refused", setup: none,
			body: `redis.call("set", KEYS[1], ARGV[1], "PX", 5000) return redis.call(ARGV[2], KEYS[1])`, args: []string{"tok", "INCR"},
			refused: "INCR is not a lock command"},
		{name: "refusal survives redis.pcall", setup: none,
			body: `redis.call("set", KEYS[1], ARGV[1], "PX", 5000) redis.pcall(ARGV[2], "x") return 1`, args: []string{"tok", "lpush"},
			refused: "LPUSH is not a lock command"},
		{name: "SELECT 1 from ARGV: refused", setup: none,
			body: `redis.pcall("SELECT", ARGV[1]) return 1`, args: []string{"1"}, refused: "SELECT"},
		{name: "SELECT 0 from ARGV", setup: none,
			body: `redis.pcall("SELECT", ARGV[1]) return redis.call("set", KEYS[1], ARGV[2], "PX", 5000)`, args: []string{"0", "tok"},
			reply: Value{Kind: ValueStatus, Str: "OK"}, op: EffectHold, want: "tok"},
		{name: "a key not among KEYS, by a command from ARGV: refused", setup: none,
			body: `return redis.call(ARGV[1], ARGV[2], "v", "PX", 1000)`, args: []string{"set", "elsewhere"},
			refused: "not one of KEYS"},
		{name: "error reply as a value", setup: none,
			body: `return redis.error_reply("MYERR no")`, reply: Value{Kind: ValueError, Str: "MYERR no"}, op: EffectRead},
		{name: "runtime error as a value", setup: held("tok"),
			body: `return redis.call("hget", KEYS[1], "f")`, reply: Value{Kind: ValueError}, op: EffectRead, want: "tok"},
		{name: "array with nested values", setup: none,
			body:  `return {1, "b", {ok = "S"}, false}`,
			reply: Value{Kind: ValueArray, Items: []Value{{Kind: ValueInt, Int: 1}, {Kind: ValueBulk, Str: "b"}, {Kind: ValueStatus, Str: "S"}, {Kind: ValueNil}}},
			op:    EffectRead},
		{name: "Redisson re-entrant hash", setup: func() {
			admin.HSet(t.Context(), "k", "u:1", 1)
			admin.PExpire(t.Context(), "k", 10*time.Second)
		},
			body: `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);`,
			args: []string{"30000", "u:1"}, reply: Value{Kind: ValueNil}, op: EffectHold, wantHash: map[string]string{"u:1": "2"}},
		{name: "hash field of another: refused", setup: func() {
			admin.HSet(t.Context(), "k", "u:1", 1)
			admin.PExpire(t.Context(), "k", 10*time.Second)
		},
			body: `redis.call('hdel', KEYS[1], 'u:1') return 1`, args: []string{"u:2"},
			refused: "another token's hold", wantHash: map[string]string{"u:1": "1"}},
		{name: "sorted set: dropping another's expired entry, taking", setup: func() {
			admin.ZAdd(t.Context(), "k", redisZ(1, "old")) // expired at 1ms after the epoch
			admin.PExpire(t.Context(), "k", 10*time.Second)
		},
			body: `local t = redis.call("TIME") local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
redis.call("ZADD", KEYS[1], now + 5000, ARGV[1])
redis.call("PEXPIREAT", KEYS[1], now + 5000) return true`,
			args: []string{"tok"}, reply: Value{Kind: ValueInt, Int: 1}, op: EffectHold},
		{name: "a token shown among KEYS is its own (node-redis-warlock's touch)", setup: held("tok"),
			body: `local key = KEYS[1] local ttl = KEYS[2] local id = KEYS[3]
if redis.call('GET', key) == id then return redis.call('SET', key, id, 'PX', ttl, 'XX') else return 0 end`,
			keys: []string{"k", "5000", "tok"}, reply: Value{Kind: ValueStatus, Str: "OK"}, op: EffectHold, want: "tok"},
		{name: "a token among KEYS that is not the holder's: refused", setup: held("other"),
			body: `return redis.call('SET', KEYS[1], KEYS[3], 'PX', KEYS[2])`, keys: []string{"k", "5000", "tok"},
			refused: "another token's hold", want: "other"},
		{name: "a key set to expire at once is no hold (Symfony's probe)", setup: none,
			body: `local now = redis.call("TIME") redis.call("SET", KEYS[1], "1", "PX", 1) return 1`, lits: []string{"1"},
			reply: Value{Kind: ValueInt, Int: 1}, op: EffectRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			tt.setup()
			eff := e.Wrap(tt.body, tt.lits)
			keys := tt.keys
			if keys == nil {
				keys = []string{"k"}
			}
			ne, err := n.RunEffect(t.Context(), eff, newEffectCall(keys, tt.args, 1), nil)
			if err != nil {
				t.Fatalf("runEffect: %v", err)
			}
			if tt.refused != "" {
				if !strings.Contains(ne.Refused, tt.refused) {
					t.Fatalf("refused = %q; want it to say %q", ne.Refused, tt.refused)
				}
			} else {
				if ne.Refused != "" {
					t.Fatalf("refused: %s", ne.Refused)
				}
				if tt.reply.Kind == ValueError && tt.reply.Str == "" && ne.Reply.Kind == ValueError {
					ne.Reply.Str = ""
				}
				if !ne.Reply.equal(tt.reply) {
					t.Errorf("reply = %+v; want %+v", ne.Reply, tt.reply)
				}
				if op, _ := classifyEffect(ne.Keys, 0.01); op != tt.op {
					t.Errorf("classified as %v; want %v (keys %+v)", op, tt.op, ne.Keys)
				}
			}
			if tt.wantHash != nil {
				got := admin.HGetAll(t.Context(), "k").Val()
				if len(got) != len(tt.wantHash) {
					t.Errorf("hash after = %v; want %v", got, tt.wantHash)
				}
				for f, v := range tt.wantHash {
					if got[f] != v {
						t.Errorf("hash after = %v; want %v", got, tt.wantHash)
					}
				}
				return
			}
			if tt.op == EffectHold && tt.want == "" || tt.lits != nil {
				return // a sorted set, or a key gone within a millisecond
			}
			got, _ := admin.Get(t.Context(), "k").Result()
			if got != tt.want {
				t.Errorf("after: GET k = %q; want %q", got, tt.want)
			}
			if tt.want != "" {
				if pttl := admin.PTTL(t.Context(), "k").Val(); pttl <= 0 || pttl > time.Minute {
					t.Errorf("after: PTTL k = %v; want an expiry", pttl)
				}
			}
		})
	}
}

// TestUndoEffectRemovesOnlyOwnHolders checks the compare-and-delete that
// undoes an effect-served acquire, for strings, hashes and sorted sets: a
// marker goes only with an own holder, and only with the value the run
// gave it (else it may be another client's, who wrote the same constant).
func TestUndoEffectRemovesOnlyOwnHolders(t *testing.T) {
	p := startRedis(t)
	admin, n := p.Client(t), p.node(t)
	ctx := t.Context()
	write := []Marker{{Entry: "__write__", Value: "5"}}
	tests := []struct {
		name  string
		setup func(key string)
		u     KeyUndo
		want  string // what the key holds after, as dump prints it
	}{
		{"a string holding the token", func(k string) { admin.Set(ctx, k, "tok", time.Minute) },
			KeyUndo{Tokens: []string{"tok"}}, "none"},
		{"a string holding another's", func(k string) { admin.Set(ctx, k, "other", time.Minute) },
			KeyUndo{Tokens: []string{"tok"}}, "other"},
		{"a hash field", func(k string) { admin.HSet(ctx, k, "tok", 1, "other", 1) },
			KeyUndo{Tokens: []string{"tok"}}, "other=1"},
		{"a hash marker the run added", func(k string) { admin.HSet(ctx, k, "tok", 1, "mode", "write") },
			KeyUndo{Tokens: []string{"tok"}, Markers: []Marker{{Entry: "mode", Value: "write"}}}, "none"},
		{"the last member", func(k string) { admin.ZAdd(ctx, k, redisZ(1, "tok")) },
			KeyUndo{Tokens: []string{"tok"}}, "none"},
		{"Symfony's save: the token and __write__", func(k string) { admin.ZAdd(ctx, k, redisZ(5, "tok"), redisZ(5, "__write__")) },
			KeyUndo{Tokens: []string{"tok"}, Markers: write}, "none"},
		{"__write__ since given another value", func(k string) { admin.ZAdd(ctx, k, redisZ(5, "tok"), redisZ(6, "__write__")) },
			KeyUndo{Tokens: []string{"tok"}, Markers: write}, "__write__=6"},
		{"__write__ without the token: another client's", func(k string) { admin.ZAdd(ctx, k, redisZ(5, "other"), redisZ(5, "__write__")) },
			KeyUndo{Tokens: []string{"tok"}, Markers: write}, "__write__=5,other=5"},
		{"a marker the run did not add", func(k string) { admin.ZAdd(ctx, k, redisZ(5, "tok"), redisZ(5, "__write__")) },
			KeyUndo{Tokens: []string{"tok"}}, "__write__=5"},
	}
	for i, tt := range tests {
		key := fmt.Sprintf("k%d", i)
		tt.setup(key)
		if err := n.UndoEffect(ctx, key, tt.u, 0); err != nil {
			t.Fatalf("%s: undoEffect: %v", tt.name, err)
		}
		if got := dumpKey(t, admin, key); got != tt.want {
			t.Errorf("%s: after the undo the key holds %s; want %s", tt.name, got, tt.want)
		}
	}
}

// dumpKey prints what key holds: "none", a string's value, or a hash's
// fields or a sorted set's members as entry=value, sorted.
func dumpKey(t *testing.T, admin *redis.Client, key string) string {
	t.Helper()
	ctx := t.Context()
	var out []string
	switch typ := admin.Type(ctx, key).Val(); typ {
	case "none":
		return "none"
	case "string":
		return admin.Get(ctx, key).Val()
	case "hash":
		for f, v := range admin.HGetAll(ctx, key).Val() {
			out = append(out, f+"="+v)
		}
	case "zset":
		for _, z := range admin.ZRangeWithScores(ctx, key, 0, -1).Val() {
			out = append(out, fmt.Sprintf("%v=%v", z.Member, z.Score))
		}
	default:
		t.Fatalf("%s is a %s", key, typ)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

func TestClassifyEffect(t *testing.T) {
	s := time.Second
	tests := []struct {
		name string
		keys []KeyEffect
		op   EffectOp
		hold time.Duration
	}{
		{"nothing changed", []KeyEffect{{BeforeOwn: []string{"t"}, AfterOwn: []string{"t"}, Hold: s}}, EffectRead, 0},
		{"taken", []KeyEffect{{AfterOwn: []string{"t"}, Changed: true, Hold: s}}, EffectHold, s},
		{"released", []KeyEffect{{BeforeOwn: []string{"t"}, Changed: true}}, EffectRelease, 0},
		{"release wins over a latch taken", []KeyEffect{
			{BeforeOwn: []string{"t"}, Changed: true},
			{AfterOwn: []string{"1"}, Changed: true, Hold: 3 * s},
		}, EffectRelease, 0},
		{"a hold within the drift allowance is none", []KeyEffect{{AfterOwn: []string{"1"}, Changed: true, Hold: time.Millisecond}}, EffectRead, 0},
		{"the shortest hold of several", []KeyEffect{
			{AfterOwn: []string{"t"}, Changed: true, Hold: 2 * s},
			{AfterOwn: []string{"t"}, Changed: true, Hold: s},
		}, EffectHold, s},
	}
	for _, tt := range tests {
		op, hold := classifyEffect(tt.keys, 0.01)
		if op != tt.op || hold != tt.hold {
			t.Errorf("%s: classifyEffect = %v, %v; want %v, %v", tt.name, op, hold, tt.op, tt.hold)
		}
	}
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// TestEffectWrapperFastPath runs, on a real redis-server, the writes the
// wrapper proves without a snapshot (effectlua.go) and the ones next to
// them that it must not: each row says what every key holds after the
// run, with which expiry, and what the run is classified as. A refused
// row's keys are back to what they held, expiry included. Keys k and k2
// start free unless the row's setup holds them (hold: value -> key,
// 10s).
func TestEffectWrapperFastPath(t *testing.T) { inBothForms(t, testEffectWrapperFastPath) }

func testEffectWrapperFastPath(t *testing.T, form wrapperForm) {
	admin, n, e := formEngine(t, form)
	type held struct {
		v   string
		ttl time.Duration // 0: no expiry
	}
	tests := []struct {
		name    string
		hold    map[string]held // key -> what it holds before
		hash    bool            // k is another's hash lock (Redisson's shape)
		hashK2  bool            // k2 is the caller's hash lock after the run
		body    string
		args    []string
		lits    []string
		refused string // a substring of the reason, if refused
		op      EffectOp
		before  []string // the first key's own holders before, as reported
		hold1   time.Duration
		want    map[string]held // key -> what it holds after (missing: no key)
	}{
		// Proved: no snapshot, the reply says what happened.
		{name: "go-zero take of a free key", body: goZeroLock, args: []string{"tok", "20000"},
			op: EffectHold, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "go-zero re-entry extends", hold: map[string]held{"k": {"tok", 10 * time.Second}}, body: goZeroLock, args: []string{"tok", "20000"},
			op: EffectHold, before: []string{"tok"}, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "go-zero against another's hold does nothing", hold: map[string]held{"k": {"other", 10 * time.Second}}, body: goZeroLock, args: []string{"tok", "20000"},
			op: EffectRead, want: map[string]held{"k": {"other", 10 * time.Second}}},
		{name: "SET PX NX in that order, no GET", body: `return redis.call("set", KEYS[1], ARGV[1], "px", ARGV[2], "nx")`, args: []string{"tok", "20000"},
			op: EffectHold, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "Spring's obtain: GET free, then SET PX", body: `if not redis.call("GET", KEYS[1]) then redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return true end return false`,
			args: []string{"tok", "20000"}, op: EffectHold, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "GET own, PEXPIRE", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`, args: []string{"tok", "20000"},
			op: EffectHold, before: []string{"tok"}, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "GET own, EXPIRE in seconds", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("expire", KEYS[1], 20) end return 0`, args: []string{"tok"},
			op: EffectHold, before: []string{"tok"}, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "GET own, UNLINK", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("unlink", KEYS[1]) end return 0`, args: []string{"tok"},
			op: EffectRelease, before: []string{"tok"}},
		{name: "a take, then a GET of it", body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) return redis.call("get", KEYS[1])`,
			args: []string{"tok", "20000"}, op: EffectHold, hold1: 20 * time.Second, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "a proved key beside a judged one: the reply's field form", body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
redis.call("hset", KEYS[2], ARGV[1], 1) redis.call("pexpire", KEYS[2], ARGV[2]) return 1`,
			args: []string{"tok", "20000"}, op: EffectHold, hold1: 20 * time.Second, hashK2: true, want: map[string]held{"k": {"tok", 20 * time.Second}}},
		{name: "a token past the 1023rd own token, then a large run's tables dropped", body: `return redis.call("set", KEYS[1], ARGV[1100], "NX", "PX", 5000)`,
			args: append(make([]string, 1099), "tok"), op: EffectHold, hold1: 5 * time.Second, want: map[string]held{"k": {"tok", 5 * time.Second}}},
		{name: "a constant is not a token", body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], "__w__", "NX", "PX", 5000)`, lits: []string{"__w__"},
			refused: "a constant is not a token"},

		// Not proved: the slow path judges, and refuses.
		{name: "GET own, then a value that is none of its arguments", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("set", KEYS[1], ARGV[1] .. "x", "PX", 5000) end`, args: []string{"tok"},
			refused: "none of its arguments", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "GET another's, then SET without NX over it", hold: map[string]held{"k": {"other", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "PX", 5000)`, args: []string{"tok"},
			refused: "another token's hold", want: map[string]held{"k": {"other", 10 * time.Second}}},
		{name: "GET another's, then DEL", hold: map[string]held{"k": {"other", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("del", KEYS[1])`, args: []string{"tok"},
			refused: "another token's hold", want: map[string]held{"k": {"other", 10 * time.Second}}},
		{name: "GET another's, then PEXPIRE", hold: map[string]held{"k": {"other", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("pexpire", KEYS[1], 50000)`, args: []string{"tok"},
			refused: "expiry of another token's hold", want: map[string]held{"k": {"other", 10 * time.Second}}},
		{name: "a GET before another's hold was set is no proof: DEL without a GET", hold: map[string]held{"k": {"other", 10 * time.Second}},
			body: `return redis.call("del", KEYS[1])`, args: []string{"other2"},
			refused: "another token's hold", want: map[string]held{"k": {"other", 10 * time.Second}}},
		{name: "SET NX PX over max_ttl", body: `return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 3600000)`, args: []string{"tok"},
			refused: "over max_ttl"},
		{name: "SET NX of a value that is none of its arguments", body: `return redis.call("set", KEYS[1], "x" .. ARGV[1], "NX", "PX", 5000)`, args: []string{"tok"},
			refused: "none of its arguments"},
		{name: "GET free, SET without expiry", body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1])`, args: []string{"tok"},
			refused: "without an expiry"},
		{name: "GET free, SET KEEPTTL", body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "KEEPTTL")`, args: []string{"tok"},
			refused: "without an expiry"},
		{name: "GET own, SET KEEPTTL keeps the hold", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "KEEPTTL")`, args: []string{"tok"},
			op: EffectRead, before: []string{"tok"}, want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "GET own, PEXPIRE over max_ttl", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("pexpire", KEYS[1], 3600000)`, args: []string{"tok"},
			refused: "over max_ttl", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "GET own, PERSIST by SET without PX", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1])`, args: []string{"tok"},
			refused: "without an expiry", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "writes twice: a take, then over max_ttl", body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("pexpire", KEYS[1], 3600000)`,
			args: []string{"tok"}, refused: "over max_ttl"},
		{name: "writes twice: a take, then a value none of its arguments", body: `redis.call("get", KEYS[1]) redis.call("set", KEYS[1], ARGV[1], "PX", 5000) return redis.call("set", KEYS[1], "x", "PX", 5000)`,
			args: []string{"tok"}, refused: "none of its arguments"},
		{name: "release, then a value none of its arguments: the hold comes back with its expiry", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) redis.call("del", KEYS[1]) return redis.call("set", KEYS[1], "x", "PX", 5000)`, args: []string{"tok"},
			refused: "none of its arguments", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "extend, then a refused command: the old expiry comes back", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `redis.call("get", KEYS[1]) redis.call("pexpire", KEYS[1], 50000) return redis.call(ARGV[2], KEYS[1])`, args: []string{"tok", "incr"},
			refused: "INCR is not a lock command", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "an extend by SET PX, then a refused command: the old expiry comes back", hold: map[string]held{"k": {"tok", 10 * time.Second}},
			body: `if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("set", KEYS[1], ARGV[1], "PX", 50000) end return redis.call(ARGV[2], KEYS[1])`,
			args: []string{"tok", "incr"}, refused: "INCR is not a lock command", want: map[string]held{"k": {"tok", 10 * time.Second}}},
		{name: "a take, then a refused command", body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call(ARGV[2], KEYS[1])`, args: []string{"tok", "incr"},
			refused: "INCR is not a lock command"},
		{name: "a take, then a refused command caught by pcall", body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) redis.pcall(ARGV[2], KEYS[1]) return 1`, args: []string{"tok", "lpush"},
			refused: "LPUSH is not a lock command"},
		{name: "a take of k, another's hold of k2 overwritten: both back", hold: map[string]held{"k2": {"other", 10 * time.Second}},
			body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("set", KEYS[2], ARGV[1], "PX", 5000)`, args: []string{"tok"},
			refused: "another token's hold", want: map[string]held{"k2": {"other", 10 * time.Second}}},
		{name: "a take, then DEL of it and another's hold together", hold: map[string]held{"k2": {"other", 10 * time.Second}},
			body: `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("del", KEYS[1], KEYS[2])`, args: []string{"tok"},
			refused: "another token's hold", want: map[string]held{"k2": {"other", 10 * time.Second}}},
		{name: "a hash is never proved", body: `redis.call("get", KEYS[1]) return redis.call("hset", KEYS[1], "f", ARGV[1])`, args: []string{"tok"},
			refused: "without an expiry"},
		{name: "a GET that failed is no proof the key is free", hash: true,
			body: `redis.pcall("get", KEYS[1]) return redis.call("set", KEYS[1], ARGV[1], "PX", 5000)`, args: []string{"tok"},
			refused: "a hash key into a string"},
		{name: "a nil key is not one of KEYS", body: `return redis.call("get", KEYS[3])`, refused: "not one of KEYS"},
		{name: "a key given as a number is not one of KEYS", body: `return redis.call("set", 1e15, ARGV[1], "NX", "PX", 5000)`, args: []string{"tok"},
			refused: "not one of KEYS"},
	}
	keys := []string{"k", "k2"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			redistest.Flush(t, admin)
			for k, h := range tt.hold {
				admin.Set(ctx, k, h.v, h.ttl)
			}
			if tt.hash {
				admin.HSet(ctx, "k", "other", 1)
				admin.PExpire(ctx, "k", 10*time.Second)
			}
			eff := e.Wrap(tt.body, tt.lits)
			runKeys := keys
			if strings.Contains(tt.body, "1e15") {
				runKeys = []string{"1e+15"}
			}
			ne, err := n.RunEffect(ctx, eff, newEffectCall(runKeys, tt.args, 1), nil)
			if err != nil {
				t.Fatalf("runEffect: %v", err)
			}
			if tt.refused != "" {
				if !strings.Contains(ne.Refused, tt.refused) {
					t.Errorf("refused = %q; want it to say %q", ne.Refused, tt.refused)
				}
			} else if ne.Refused != "" {
				t.Errorf("refused: %s", ne.Refused)
			} else {
				op, hold := classifyEffect(ne.Keys, 0.01)
				if op != tt.op {
					t.Errorf("classified as %v; want %v (keys %+v)", op, tt.op, ne.Keys)
				}
				if op == EffectHold && (hold > tt.hold1 || hold < tt.hold1-time.Second) {
					t.Errorf("hold = %v; want %v", hold, tt.hold1)
				}
				if got := ne.Keys[0].BeforeOwn; !slices.Equal(got, tt.before) {
					t.Errorf("own holders before = %q; want %q", got, tt.before)
				}
				// A key left held by one of the caller's tokens reports
				// that token as its own holder after.
				if w, ok := tt.want["k"]; ok && w.v != "other" && !slices.Equal(ne.Keys[0].AfterOwn, []string{w.v}) {
					t.Errorf("own holders after = %q; want %q", ne.Keys[0].AfterOwn, w.v)
				}
			}
			if tt.hash {
				if h := admin.HGetAll(ctx, "k").Val(); len(h) != 1 || h["other"] != "1" {
					t.Errorf("after: HGETALL k = %v; want the other's field", h)
				}
				if pttl := admin.PTTL(ctx, "k").Val(); pttl > 10*time.Second || pttl < 9*time.Second {
					t.Errorf("after: PTTL k = %v; want 10s", pttl)
				}
				return
			}
			if tt.hashK2 {
				if h := admin.HGetAll(ctx, "k2").Val(); len(h) != 1 || h["tok"] != "1" {
					t.Errorf("after: HGETALL k2 = %v; want the caller's field", h)
				}
				if op, _ := classifyEffect(ne.Keys, 0.01); op != EffectHold || len(ne.Keys) != 2 || !slices.Equal(ne.Keys[1].AfterOwn, []string{"tok"}) {
					t.Errorf("keys = %+v; want k2 held by tok too", ne.Keys)
				}
			}
			for _, k := range append([]string{"1000000000000000"}, keys...) {
				want, ok := tt.want[k]
				if k == "k2" && tt.hashK2 {
					continue
				}
				v, err := admin.Get(ctx, k).Result()
				switch {
				case !ok && err != redis.Nil:
					t.Errorf("after: GET %s = %q, %v; want no key", k, v, err)
				case ok && v != want.v:
					t.Errorf("after: GET %s = %q, %v; want %q", k, v, err, want.v)
				case ok:
					// The expiry is the one the row wants: a rollback puts
					// back the one from before, not a new one.
					if pttl := admin.PTTL(ctx, k).Val(); pttl > want.ttl || pttl < want.ttl-time.Second {
						t.Errorf("after: PTTL %s = %v; want %v", k, pttl, want.ttl)
					}
				}
			}
		})
	}
}

// uniqueKeys drops repeats and keeps the order; with none, it is keys.
func TestUniqueKeys(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{}, []string{}},
		{[]string{"a"}, []string{"a"}},
		{[]string{"a", "b"}, []string{"a", "b"}},
		{[]string{"a", "a"}, []string{"a"}},
		{[]string{"a", "b", "a", "c", "b", "d"}, []string{"a", "b", "c", "d"}},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.in)
		got := uniqueKeys(in)
		if !slices.Equal(got, tt.want) || !slices.Equal(in, tt.in) {
			t.Errorf("uniqueKeys(%q) = %q (input now %q); want %q", tt.in, got, in, tt.want)
		}
	}
}

// lostReplyNode runs wrapped scripts on a real node but loses the reply:
// the write lands, and the caller sees its deadline pass.
type lostReplyNode struct{ Node }

func (n lostReplyNode) RunEffect(ctx context.Context, eff *Effect, c EffectCall, out []KeyEffect) (NodeEffect, error) {
	n.Node.RunEffect(context.WithoutCancel(ctx), eff, c, out)
	<-ctx.Done()
	return NodeEffect{}, ctx.Err()
}

// A take served by effect that is undone (here: as the proxy undoes a
// grant whose validity ran out before the reply) is undone on every node
// it may have landed on, also those the breaker marked down during the
// run (their third timeout in a row), as Acquire's undo is: enough nodes
// took the key new that no quorum can have held the token before.
func TestEffectUndoReachesNodesMarkedDownMeanwhile(t *testing.T) {
	ps := []*redisProc{startRedis(t), startRedis(t), startRedis(t), startRedis(t), startRedis(t)}
	nodes := []Node{lostReplyNode{ps[0].node(t)}, lostReplyNode{ps[1].node(t)}, ps[2].node(t), ps[3].node(t), ps[4].node(t)}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: 200 * time.Millisecond}, nodes...)
	e.monitored.Store(true)
	for i := range 2 {
		e.health[i].stalls.Store(stallLimit - 1) // two timeouts in a row already
	}
	eff := e.Wrap(`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, nil)
	res, err := e.RunEffect(t.Context(), eff, []string{"k"}, []string{"tok", "30000"})
	if err != nil || !res.Granted || !res.Took {
		t.Fatalf("RunEffect = %+v, %v; want a new lock granted by 3 of 5", res, err)
	}
	for i := range 2 {
		if !e.health[i].down.Load() {
			t.Fatalf("node %d is not down after its third timeout in a row", i)
		}
	}
	e.UndoEffect(t.Context(), res)
	for i, p := range ps {
		if v, err := p.Client(t).Get(t.Context(), "k").Result(); err != redis.Nil {
			t.Errorf("node %d holds k = %q (%v) after the undo; want nothing", i, v, err)
		}
	}
}

// A refresh whose own earlier hold sits on the nodes that failed, while
// the one node that answered had lost it and took the key new, looks like
// a new lock whose replies were lost. The failed nodes may hold the
// client's earlier hold, within its validity: they are not undone (too
// few nodes took the key new to rule that out); the node that took it new
// is.
func TestEffectFailedRefreshKeepsTheHoldOnFailedNodes(t *testing.T) {
	ps := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	for _, p := range ps[1:] {
		p.Client(t).Set(t.Context(), "k", "tok", 30*time.Second)
	}
	e := New(Config{MaxTTL: time.Minute}, ps[0].node(t), failedEffectNode{ps[1].node(t)}, failedEffectNode{ps[2].node(t)})
	if _, err := e.RunEffect(t.Context(), e.Wrap(goZeroLock, nil), []string{"k"}, []string{"tok", "20000"}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("RunEffect = %v; want ErrUnavailable", err)
	}
	for i, p := range ps {
		v, _ := p.Client(t).Get(t.Context(), "k").Result()
		if want := map[bool]string{true: "", false: "tok"}[i == 0]; v != want {
			t.Errorf("node %d: k = %q; want %q", i, v, want)
		}
	}
}

// A node made with NoFunctions (the embedded demo nodes) runs wrapped
// scripts as scripts from the first call: no FCALL is sent to it.
func TestNodeWithoutFunctionsIsNotAsked(t *testing.T) {
	p := startRedis(t)
	admin := p.Client(t)
	n := p.nodeIn(t, asScript)
	e := New(Config{MaxTTL: time.Minute}, n)
	ne, err := n.RunEffect(t.Context(), e.Wrap(goZeroLock, nil), newEffectCall([]string{"k"}, []string{"tok", "5000"}, 1), nil)
	if err != nil || ne.Reply.Str != "OK" {
		t.Fatalf("runEffect = %+v, %v; want OK", ne, err)
	}
	stats := admin.Info(t.Context(), "commandstats").Val()
	if strings.Contains(stats, "cmdstat_fcall") || !strings.Contains(stats, "cmdstat_eval") {
		t.Errorf("commandstats:\n%s\nwant EVALSHA/EVAL and no FCALL", stats)
	}
}

// failedEffectNode fails every wrapped script at once, unsent, as a
// node whose connection is gone.
type failedEffectNode struct{ Node }

func (n failedEffectNode) RunEffect(context.Context, *Effect, EffectCall, []KeyEffect) (NodeEffect, error) {
	return NodeEffect{}, errors.New("connection reset by peer")
}

// A hold that fails its quorum is undone only where it took a key new:
// a re-entry or an extend of a hold the token already had is left (as a
// failed extend of the catalogue is), on the nodes that did it and on
// those that failed. Undoing it would delete the earlier hold the client
// still relies on, within its validity.
func TestEffectFailedReentryKeepsTheEarlierHold(t *testing.T) {
	const redissonLike = `if redis.call("exists", KEYS[1]) == 0 or redis.call("hexists", KEYS[1], ARGV[2]) == 1 then
  redis.call("hincrby", KEYS[1], ARGV[2], 1)
  redis.call("pexpire", KEYS[1], ARGV[1])
  return nil
end
return redis.call("pttl", KEYS[1])`
	tests := []struct {
		name, body string
		args       []string
		hold       func(*redis.Client)
		check      func(*redis.Client) bool
	}{
		{"Redisson's re-entry (1 to 2)", redissonLike, []string{"30000", "owner"},
			func(c *redis.Client) {
				c.HSet(context.Background(), "k", "owner", 1)
				c.PExpire(context.Background(), "k", 30*time.Second)
			},
			func(c *redis.Client) bool { return c.HGet(context.Background(), "k", "owner").Val() != "" }},
		{"go-zero's refresh", goZeroLock, []string{"tok", "20000"},
			func(c *redis.Client) { c.Set(context.Background(), "k", "tok", 30*time.Second) },
			func(c *redis.Client) bool { return c.Get(context.Background(), "k").Val() == "tok" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
			for _, p := range ps {
				tt.hold(p.Client(t))
			}
			e := New(Config{MaxTTL: time.Minute}, ps[0].node(t), failedEffectNode{ps[1].node(t)}, failedEffectNode{ps[2].node(t)})
			eff := e.Wrap(tt.body, nil)
			if _, err := e.RunEffect(t.Context(), eff, []string{"k"}, tt.args); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("RunEffect = %v; want ErrUnavailable", err)
			}
			for i, p := range ps {
				if !tt.check(p.Client(t)) {
					t.Errorf("node %d lost the earlier hold after a failed re-entry", i)
				}
			}
		})
	}
}

// A wrapped script Redis's Lua refuses to compile (a Lua 5.1 limit that
// admission does not check) is bad input: refused with Redis's reason,
// not answered as if every node had failed.
func TestEffectThatDoesNotCompileIsRefused(t *testing.T) {
	inBothForms(t, testEffectThatDoesNotCompileIsRefused)
}

func testEffectThatDoesNotCompileIsRefused(t *testing.T, form wrapperForm) {
	ps := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	for _, p := range ps {
		nodes = append(nodes, p.nodeIn(t, form)) // a library that does not load runs as a script
	}
	e := New(Config{MaxTTL: time.Minute}, nodes...)
	admin := ps[0].Client(t)
	var locals, upvalues strings.Builder
	for i := range 201 {
		fmt.Fprintf(&locals, "local v%d = %d\n", i, i)
	}
	// A function in the body with more than 60 upvalues, on its line 62.
	for i := range 61 {
		fmt.Fprintf(&upvalues, "local u%d = %d\n", i, i)
	}
	upvalues.WriteString("local function f()\n  return u0")
	for i := 1; i < 61; i++ {
		fmt.Fprintf(&upvalues, " + u%d", i)
	}
	upvalues.WriteString("\nend\n")
	take := `return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`
	for _, body := range []string{locals.String() + take, upvalues.String() + take} {
		// The refusal gives one Redis's own words.
		err := admin.Eval(t.Context(), body, []string{"k"}, "tok", "5000").Err()
		one, ok := strings.CutPrefix(fmt.Sprint(err), "ERR ")
		if !ok || !strings.HasPrefix(one, "Error compiling script") {
			t.Fatalf("one Redis: %v; want a compile error", err)
		}
		_, err = e.RunEffect(t.Context(), e.Wrap(body, nil), []string{"k"}, []string{"tok", "5000"})
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Reason != "it does not compile as Redis's Lua: "+one {
			t.Errorf("RunEffect = %v; want the refusal %q", err, "it does not compile as Redis's Lua: "+one)
		}
		for i, p := range ps {
			if n, _ := p.Client(t).Exists(t.Context(), "k").Result(); n != 0 {
				t.Errorf("node %d holds k; want nothing", i)
			}
		}
	}
}

// A body of 200 locals, Redis's limit, is served: the wrapper's function
// has no local of its own beside the body's.
func TestEffectBodyOfTwoHundredLocals(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		admin, n, e := formEngine(t, form)
		var b strings.Builder
		for i := range 200 {
			fmt.Fprintf(&b, "local v%d = %d\n", i, i)
		}
		b.WriteString(`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`)
		if err := admin.Eval(t.Context(), b.String(), []string{"one"}, "tok", "5000").Err(); err != nil {
			t.Fatalf("one Redis: %v", err)
		}
		ne, err := n.RunEffect(t.Context(), e.Wrap(b.String(), nil), newEffectCall([]string{"k"}, []string{"tok", "5000"}, 1), nil)
		if err != nil || ne.Refused != "" || ne.Reply.Kind != ValueStatus || ne.Reply.Str != "OK" {
			t.Errorf("wrapped = %+v, %v; want OK", ne, err)
		}
	})
}

// An error from inside a wrapped script names the client's line, as one
// Redis's does, and a failed redis.call keeps its own code.
func TestEffectErrorsNameTheClientsLines(t *testing.T) {
	inBothForms(t, testEffectErrorsNameTheClientsLines)
}

func testEffectErrorsNameTheClientsLines(t *testing.T, form wrapperForm) {
	admin, n, e := formEngine(t, form)
	tests := []struct{ body, want string }{
		{"local t = nil\nreturn t.x", "ERR user_script:2: attempt to index local 't' (a nil value)"},
		{"redis.call(\"GET\", KEYS[1])\nlocal a = 1\nreturn redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", \"x\")", "ERR value is not an integer or out of range"},
	}
	for _, tt := range tests {
		// One Redis's text starts with the same, then names the script.
		one, err := admin.Eval(t.Context(), tt.body, []string{"k"}, "v").Result()
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Fatalf("one Redis: %q = %v, %v; want an error starting %q", tt.body, one, err, tt.want)
		}
		ne, err := n.RunEffect(t.Context(), e.Wrap(tt.body, nil), newEffectCall([]string{"k"}, []string{"v"}, 1), nil)
		if err != nil || ne.Reply.Kind != ValueError || ne.Reply.Str != tt.want {
			t.Errorf("wrapped %q = %+v, %v; want the error %q", tt.body, ne.Reply, err, tt.want)
		}
	}
}

// A master over maxmemory runs a release or an extend as one Redis runs
// the script: only a write that adds memory is refused (FCALL of a
// function without flags is refused whole, so that call runs as a script).
func TestEffectOverMaxmemoryReleasesAsOneRedis(t *testing.T) {
	inBothForms(t, testEffectOverMaxmemoryReleasesAsOneRedis)
}

func testEffectOverMaxmemoryReleasesAsOneRedis(t *testing.T, form wrapperForm) {
	admin, n, e := formEngine(t, form)
	run := func(body string, args ...string) (NodeEffect, error) {
		return n.RunEffect(t.Context(), e.Wrap(body, nil), newEffectCall([]string{"k"}, args, 1), nil)
	}
	// The extend's library is loaded before memory runs out (FCALL is
	// refused), the release's is not (FUNCTION LOAD is refused).
	extend := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`
	if _, err := run(extend, "tok", "30000"); err != nil {
		t.Fatalf("runEffect: %v", err)
	}
	redistest.SetKey(t, admin, "k", "tok", time.Minute)
	if err := admin.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
		t.Fatalf("CONFIG SET maxmemory: %v", err)
	}
	t.Cleanup(func() { admin.ConfigSet(context.Background(), "maxmemory", "0") })

	ne, err := run(extend, "tok", "30000")
	if err != nil || ne.Reply.Kind != ValueInt || ne.Reply.Int != 1 {
		t.Errorf("extend over maxmemory = %+v, %v; want 1, as one Redis", ne.Reply, err)
	}
	ne, err = run(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`, "tok")
	if err != nil || ne.Reply.Kind != ValueInt || ne.Reply.Int != 1 {
		t.Errorf("release over maxmemory = %+v, %v; want 1, as one Redis", ne.Reply, err)
	}
	if v, _ := redistest.KeyState(t, admin, "k"); v != "" {
		t.Errorf("after the release: k = %q; want it gone", v)
	}
	// A take is refused by Redis's own OOM error, from inside the script.
	ne, err = run(`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, "tok", "5000")
	if err != nil || ne.Reply.Kind != ValueError || !strings.HasPrefix(ne.Reply.Str, "OOM ") {
		t.Errorf("take over maxmemory = %+v, %v; want the OOM error reply", ne.Reply, err)
	}
}
