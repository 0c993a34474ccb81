package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
)

// @sesamecare-oss/redlock 1.4's scripts (dist/scripts.js: node-redlock
// v5's behind a protected SELECT, as JavaScript template literals).
const sesameSelect = "\n  -- Protected call to execute SELECT command if supported\n  redis.pcall(\"SELECT\", tonumber(ARGV[1]))\n"

var (
	sesameAcquire = "\n  " + sesameSelect + "\n\n  -- Return 0 if an entry already exists.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n\n  -- Create an entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[2], \"PX\", ARGV[3])\n  end\n\n  -- Return the number of entries added.\n  return #KEYS\n"
	sesameExtend  = "\n  " + sesameSelect + "\n\n  -- Return 0 if an entry exists with a *different* lock value.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"get\", key) ~= ARGV[2] then\n      return 0\n    end\n  end\n\n  -- Update the entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[2], \"PX\", ARGV[3])\n  end\n\n  -- Return the number of entries updated.\n  return #KEYS\n"
	sesameRelease = "\n  " + sesameSelect + "\n\n  local count = 0\n  for i, key in ipairs(KEYS) do\n    -- Only remove entries for *this* lock value.\n    if redis.call(\"get\", key) == ARGV[2] then\n      redis.pcall(\"del\", key)\n      count = count + 1\n    end\n  end\n\n  -- Return the number of entries removed.\n  return count\n"
)

// diffScript is a real client's script and how the client calls it: its
// key count and its ARGV, with tok for the caller's token.
type diffScript struct {
	name   string
	body   string
	keys   int
	args   func(tok string) []any
	served bool // served by effect: admission must take it
}

func tokTTL(tok string) []any { return []any{tok, "5000"} }

// symfonyScripts reads Symfony Lock's RedisStore scripts from the
// installed php-symfony-lock, as RedisStore builds them when TIME is
// supported, and its TIME probe.
func symfonyScripts(t *testing.T) []diffScript {
	t.Helper()
	const path = "/usr/share/php/Symfony/Component/Lock/Store/RedisStore.php"
	src, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("php-symfony-lock is not installed: %v", err)
		}
		t.Logf("php-symfony-lock not installed: Symfony's scripts are not compared")
		return nil
	}
	// The scripts that read the time are concatenated around
	// getNowCode(): join them first, or each is cut at the join.
	const nowMark = "\x00now\x00"
	src = bytes.ReplaceAll(src, []byte("'.$this->getNowCode().'"), []byte(nowMark))
	quoted := regexp.MustCompile(`(?s)(?:\$script = |return )'((?:[^'\\]|\\.)*)'`).FindAllSubmatch(src, -1)
	unquote := func(b []byte) string {
		return strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(string(b))
	}
	var scripts []string
	for _, m := range quoted {
		scripts = append(scripts, unquote(m[1]))
	}
	// save, saveRead, putOffExpiration, delete, exists, the TIME probe,
	// getNowCode's TIME branch, its fallback.
	if len(scripts) != 8 {
		t.Fatalf("%s: %d quoted scripts; want 8 (did the file change?)", path, len(scripts))
	}
	now := scripts[6]
	build := func(s string) string { return strings.ReplaceAll(s, nowMark, now) }
	microtime := func(tok string) []any { return []any{"1700000000.5", tok, "5000"} }
	return []diffScript{
		{"Symfony save", build(scripts[0]), 1, microtime, true},
		{"Symfony saveRead", build(scripts[1]), 1, microtime, true},
		{"Symfony putOffExpiration", build(scripts[2]), 1, microtime, true},
		{"Symfony delete", build(scripts[3]), 1, func(tok string) []any { return []any{tok} }, true},
		{"Symfony exists", build(scripts[4]), 1, microtime, true},
		{"Symfony TIME probe", scripts[5], 1, func(string) []any { return nil }, true},
	}
}

// diffCorpus is every real client's script the tests replay.
func diffCorpus(t *testing.T) []diffScript {
	var c []diffScript
	for _, s := range lockScripts {
		args := tokTTL
		switch s.name {
		case "redislock obtain":
			args = func(tok string) []any { return []any{tok, "3", "5000"} }
		case "redis-py extend":
			args = func(tok string) []any { return []any{tok, "5000", "0"} }
		}
		c = append(c, diffScript{s.name, s.body, 2, args, false})
	}
	c = append(c,
		diffScript{"Redisson lock", redissonLock, 1, func(tok string) []any { return []any{"5000", tok} }, true},
		diffScript{"Redisson unlock", redissonUnlock, 3, func(tok string) []any { return []any{"0", "5000", tok, "PUBLISH", "3000"} }, true},
		diffScript{"Redisson renew", redissonRenew, 1, func(tok string) []any { return []any{"5000", tok} }, true},
		diffScript{"Redisson forceUnlock", redissonScripts[3].body, 2, func(string) []any { return []any{"0", "PUBLISH"} }, true},
		diffScript{"go-zero lock", goZeroLock, 1, tokTTL, true},
		diffScript{"go-zero release", goZeroRelease, 1, tokTTL, false},
		diffScript{"Spring obtain", springObtain, 1, tokTTL, true},
		diffScript{"Spring renew", springRenew, 1, tokTTL, true},
		diffScript{"Spring unlock", springSpinUnlock, 1, tokTTL, true},
		diffScript{"Spring pub/sub unlock", springPubSubUnlock, 1, func(tok string) []any { return []any{tok, "spring-channel"} }, true},
		diffScript{"ShedLock delete", shedlockDelete, 1, tokTTL, false},
		diffScript{"ShedLock update", shedlockUpdate, 1, tokTTL, false},
		diffScript{"distlock release", distlockRelease, 1, tokTTL, false},
		diffScript{"@sesamecare-oss/redlock acquire", sesameAcquire, 2, func(tok string) []any { return []any{"0", tok, "5000"} }, true},
		diffScript{"@sesamecare-oss/redlock extend", sesameExtend, 2, func(tok string) []any { return []any{"0", tok, "5000"} }, true},
		diffScript{"@sesamecare-oss/redlock release", sesameRelease, 2, func(tok string) []any { return []any{"0", tok} }, true},
		// Comments, long brackets, escapes, \r\n and \r: lines, replies and
		// states as Redis has them (without the ";;" Redis refuses).
		diffScript{"go-zero lock written the hard way", strings.Replace(goZeroLockWrittenHard, ";;", ";", 1), 1, tokTTL, true},
	)
	return append(c, symfonyScripts(t)...)
}

// keyState is how KEYS[1] is before a script runs.
type keyState struct {
	name string
	set  func(ctx context.Context, r *redis.Client, key string, nowMs int64) error
}

var keyStates = []keyState{
	{"free", func(context.Context, *redis.Client, string, int64) error { return nil }},
	{"held by the token", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		return r.SetArgs(ctx, k, "tok-a", redis.SetArgs{ExpireAt: time.UnixMilli(now + 10000)}).Err()
	}},
	{"held by another token", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		return r.SetArgs(ctx, k, "tok-b", redis.SetArgs{ExpireAt: time.UnixMilli(now + 10000)}).Err()
	}},
	{"held by the token without expiry", func(ctx context.Context, r *redis.Client, k string, _ int64) error {
		return r.Set(ctx, k, "tok-a", 0).Err()
	}},
	{"expired", func(ctx context.Context, r *redis.Client, k string, _ int64) error {
		if err := r.Set(ctx, k, "tok-a", time.Millisecond).Err(); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
		return nil
	}},
	{"a hash held by the token twice", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		if err := r.HSet(ctx, k, "tok-a", 2).Err(); err != nil {
			return err
		}
		return r.PExpireAt(ctx, k, time.UnixMilli(now+10000)).Err()
	}},
	{"a hash held by another token", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		if err := r.HSet(ctx, k, "tok-b", 1).Err(); err != nil {
			return err
		}
		return r.PExpireAt(ctx, k, time.UnixMilli(now+10000)).Err()
	}},
	{"a sorted set held by the token", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		if err := r.ZAdd(ctx, k, redis.Z{Score: float64(now + 10000), Member: "tok-a"}, redis.Z{Score: float64(now + 10000), Member: "__write__"}).Err(); err != nil {
			return err
		}
		return r.PExpireAt(ctx, k, time.UnixMilli(now+10000)).Err()
	}},
	{"a sorted set held by another token, and an expired one", func(ctx context.Context, r *redis.Client, k string, now int64) error {
		if err := r.ZAdd(ctx, k, redis.Z{Score: float64(now + 10000), Member: "tok-b"}, redis.Z{Score: float64(now - 1000), Member: "tok-c"}).Err(); err != nil {
			return err
		}
		return r.PExpireAt(ctx, k, time.UnixMilli(now+10000)).Err()
	}},
}

// TestReprintedScriptsBehaveAsTheClients compares, on a real
// redis-server, every real client script the tests replay with its Source
// (what the masters run since admission re-prints it): from each key
// state, the reply and every key's resulting state must be the same. Only
// time may differ, by the time between the two runs.
func TestReprintedScriptsBehaveAsTheClients(t *testing.T) {
	r := direct(t, startRedis(t).Addr)
	compared, reprinted := 0, 0
	for _, s := range diffCorpus(t) {
		a, err := script.Admit([]byte(s.body))
		if err != nil {
			if s.served {
				t.Errorf("%s: refused: %v", s.name, err)
			}
			continue
		}
		if a.Source != s.body {
			reprinted++ // some, such as bsm/redislock's one-liners, print as they were
		}
		keys := make([]string, s.keys)
		for i := range keys {
			keys[i] = fmt.Sprintf("{diff}:k%d", i+1)
		}
		for _, st := range keyStates {
			for _, tok := range []string{"tok-a", "tok-b"} {
				orig := runFrom(t, r, st, s.body, keys, s.args(tok))
				printed := runFrom(t, r, st, a.Source, keys, s.args(tok))
				if d := orig.diff(printed); d != "" {
					t.Errorf("%s, %s, %s: the client's body and its Source differ: %s\nSource:\n%s", s.name, st.name, tok, d, a.Source)
				}
			}
		}
		compared++
	}
	if compared < 20 || reprinted < compared/2 {
		t.Errorf("compared %d scripts, %d of them re-printed otherwise; want the whole corpus (20 or more), most of it re-printed", compared, reprinted)
	}
	t.Logf("compared %d scripts, %d of them re-printed otherwise", compared, reprinted)
}

// outcome is a script's reply and the state it left.
type outcome struct {
	reply any
	err   string
	keys  []keyDump
}

type keyDump struct {
	typ string
	at  int64    // PEXPIRETIME: the states' expiries are absolute, so untouched ones compare exactly
	val []string // a string's value, a hash's fields and values, a sorted set's members and scores
}

var scriptSHA = regexp.MustCompile(`script: [0-9a-f]{40}`)

// runFrom sets st on keys[0] of a flushed server, runs body and reads
// back every key.
func runFrom(t *testing.T, r *redis.Client, st keyState, body string, keys []string, args []any) outcome {
	t.Helper()
	ctx := t.Context()
	if err := r.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	now, err := r.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.set(ctx, r, keys[0], now.UnixMilli()); err != nil {
		t.Fatalf("set %s: %v", st.name, err)
	}
	var o outcome
	o.reply, err = r.Eval(ctx, body, keys, args...).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		// The digest differs with the text; the line must not.
		o.err = scriptSHA.ReplaceAllString(err.Error(), "script: <sha>")
	}
	// Let a hold of 1ms (Symfony's probe) expire in both runs alike.
	time.Sleep(3 * time.Millisecond)
	for _, k := range keys {
		d := keyDump{typ: r.Type(ctx, k).Val(), at: r.Do(ctx, "PEXPIRETIME", k).Val().(int64)}
		switch d.typ {
		case "string":
			d.val = []string{r.Get(ctx, k).Val()}
		case "hash":
			for f, v := range r.HGetAll(ctx, k).Val() {
				d.val = append(d.val, f+"="+v)
			}
			slices.Sort(d.val)
		case "zset":
			for _, z := range r.ZRangeWithScores(ctx, k, 0, -1).Val() {
				d.val = append(d.val, fmt.Sprintf("%v=%.0f", z.Member, z.Score))
			}
		}
		o.keys = append(o.keys, d)
	}
	return o
}

// diff says how o and p differ, or "" when they are the same but for the
// time between the runs (in expiries the scripts set, TIME-based scores
// and PTTL replies).
func (o outcome) diff(p outcome) string {
	if o.err != p.err {
		return fmt.Sprintf("error %q vs %q", o.err, p.err)
	}
	if !sameReply(o.reply, p.reply) {
		return fmt.Sprintf("reply %#v vs %#v", o.reply, p.reply)
	}
	for i := range o.keys {
		a, b := o.keys[i], p.keys[i]
		if a.typ != b.typ || !closeMs(a.at, b.at) || len(a.val) != len(b.val) {
			return fmt.Sprintf("key %d: %+v vs %+v", i+1, a, b)
		}
		for j := range a.val {
			if a.val[j] != b.val[j] && !closeScores(a.val[j], b.val[j]) {
				return fmt.Sprintf("key %d: %+v vs %+v", i+1, a, b)
			}
		}
	}
	return ""
}

func sameReply(a, b any) bool {
	switch a := a.(type) {
	case int64:
		b, ok := b.(int64)
		return ok && closeMs(a, b)
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameReply(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// closeMs: equal, or both times over 1s and at most 1s apart (the two
// runs may be that far apart on a loaded machine; an expiry left alone
// and one the script set 5s anew are further apart than that).
func closeMs(a, b int64) bool {
	return a == b || a > 1000 && b > 1000 && max(a-b, b-a) <= 1000
}

// closeScores: a sorted set's member with TIME-based scores a few
// milliseconds apart.
func closeScores(a, b string) bool {
	ma, sa, okA := strings.Cut(a, "=")
	mb, sb, okB := strings.Cut(b, "=")
	var x, y int64
	_, errA := fmt.Sscan(sa, &x)
	_, errB := fmt.Sscan(sb, &y)
	return okA && okB && ma == mb && errA == nil && errB == nil && closeMs(x, y)
}

// TestReprintedPrecedenceIsLua51s checks the printer's parentheses
// against Redis's own Lua: random expressions over every operator, written
// with a parenthesis around each operation, are evaluated on a real
// redis-server as sent and as re-printed (parentheses only where Lua
// 5.1's priorities need them), each under pcall; every value and error
// must be the same.
func TestReprintedPrecedenceIsLua51s(t *testing.T) {
	r := direct(t, startRedis(t).Addr)
	rng := rand.New(rand.NewPCG(10, 1))
	for round := range 24 { // script.MaxTokens holds 50 expressions a script
		var b strings.Builder
		b.WriteString("local r = {}\n")
		const n = 50
		for i := range n {
			fmt.Fprintf(&b, "r[%d] = tostring(select(2, pcall(function() return %s end)))\n", i+1, randomExpr(rng, 5))
		}
		b.WriteString("return r\n")
		body := b.String()
		a, err := script.Admit([]byte(body))
		if err != nil {
			t.Fatalf("round %d: refused: %v\n%s", round, err, body)
		}
		if len(a.Source) >= len(body) {
			t.Fatalf("round %d: Source is no shorter than the fully parenthesized body", round)
		}
		want, err := r.Eval(t.Context(), body, nil).StringSlice()
		if err != nil {
			t.Fatalf("round %d: EVAL of the body: %v", round, err)
		}
		got, err := r.Eval(t.Context(), a.Source, nil).StringSlice()
		if err != nil {
			t.Fatalf("round %d: EVAL of the Source: %v", round, err)
		}
		bodyLines, srcLines := strings.Split(body, "\n"), strings.Split(a.Source, "\n")
		for i := range want {
			if i >= len(got) || got[i] != want[i] {
				t.Errorf("round %d, expression %d: %q as sent, %q as re-printed\nsent:        %s\nre-printed:  %s",
					round, i+1, want[i], got[min(i, len(got)-1)], bodyLines[i+1], srcLines[min(i+1, len(srcLines)-1)])
			}
		}
	}
}

var (
	binaryOps = []string{"or", "and", "<", ">", "<=", ">=", "~=", "==", "..", "+", "-", "*", "/", "%", "^"}
	unaryOps  = []string{"- ", "not ", "#"}
	leaves    = []string{"0", "1", "2", "3", "7", "0.5", `"2"`, `"ab"`, "true", "false", "nil"}
)

// randomExpr writes an expression of at most depth levels with every
// operation in parentheses.
func randomExpr(rng *rand.Rand, depth int) string {
	switch k := rng.IntN(10); {
	case depth == 0 || k < 2:
		return leaves[rng.IntN(len(leaves))]
	case k < 4:
		return "(" + unaryOps[rng.IntN(len(unaryOps))] + randomExpr(rng, depth-1) + ")"
	default:
		return "(" + randomExpr(rng, depth-1) + " " + binaryOps[rng.IntN(len(binaryOps))] + " " + randomExpr(rng, depth-1) + ")"
	}
}
