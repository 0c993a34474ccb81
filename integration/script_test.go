package integration

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// EVALSHA of a digest the proxy does not know gets Redis's own NOSCRIPT
// text, which every client's fallback to EVAL or SCRIPT LOAD matches.
func TestEvalshaUnknownDigestRepliesNoscript(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	sha := sha1Hex("return 'never seen'")
	_, err := p.Client.EvalSha(t.Context(), sha, []string{"lock"}, "tok").Result()
	if got, want := errText(err), "NOSCRIPT No matching script. Please use EVAL."; got != want {
		t.Errorf("EVALSHA %s = %q; want %q", sha, got, want)
	}
}

// EVALSHA of a catalogue script works although the client never sent its
// body.
func TestEvalshaOfCatalogueScriptWithoutBody(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if err := p.Client.Do(ctx, "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	const redislockRelease = "cf0e94b2e9ffc7e04395cf88f7583fc309985910"
	if n, err := p.Client.EvalSha(ctx, redislockRelease, []string{"lock"}, "tok").Int64(); err != nil || n != 1 {
		t.Errorf("EVALSHA redislock release = %d, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "lock")
}

// A script that admission refuses gets an error and never reaches a
// node: no node runs a command, and no node has its SHA.
func TestRefusedScriptNeverReachesANode(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	var mons []*monitor
	for i := range c.addrs {
		mons = append(mons, c.startMonitor(t, i))
	}
	scripts := []string{
		`redis.call("flushall") return 1`,
		`return redis.call("incr", KEYS[1])`,
		`return redis.call("lpush", KEYS[1], ARGV[1])`,
		`return redis.call("set", "lock:" .. ARGV[1], ARGV[1], "PX", ARGV[2])`,
	}
	for _, body := range scripts {
		got, err := p.Client.Eval(t.Context(), body, []string{"lock"}, "tok", "5000").Result()
		if err == nil || errors.Is(err, redis.Nil) || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Errorf("EVAL %.40q = %v, %v; want an ERR reply", body, got, err)
		}
		if got, err := p.Client.ScriptLoad(t.Context(), body).Result(); err == nil {
			t.Errorf("SCRIPT LOAD %.40q = %q; want an error reply", body, got)
		}
		if found, err := p.Client.ScriptExists(t.Context(), sha1Hex(body)).Result(); err != nil || found[0] {
			t.Errorf("proxy SCRIPT EXISTS of the refused script = %v, %v; want [false]", found, err)
		}
	}
	wantNoCommands(t, mons, "EVAL of unknown scripts")
	for i, d := range c.direct {
		for _, body := range scripts {
			found, err := d.ScriptExists(t.Context(), sha1Hex(body)).Result()
			if err != nil || found[0] {
				t.Errorf("node %d SCRIPT EXISTS %.40q = %v, %v; want [false]", i, body, found, err)
			}
		}
	}
	c.wantFreeEverywhere(t, "lock")
}

// Write commands outside the lock surface (INCR, HSET, FLUSHALL, …) are
// refused and never reach a node.
func TestUnsupportedCommandsNeverReachANode(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	for i, d := range c.direct {
		if err := d.Set(t.Context(), "kept", "v", 0).Err(); err != nil {
			t.Fatalf("node %d SET kept: %v", i, err)
		}
	}
	var mons []*monitor
	for i := range c.addrs {
		mons = append(mons, c.startMonitor(t, i))
	}
	conn := p.Client.Conn()
	t.Cleanup(func() { conn.Close() })
	commands := [][]any{
		{"INCR", "kept"},
		{"HSET", "h", "f", "v"},
		{"FLUSHALL"},
		{"FLUSHDB"},
		{"EXPIRE", "kept", "1"},
		{"PEXPIRE", "kept", "1"},
		{"PERSIST", "kept"},
		{"SETEX", "kept", "10", "v"},
		{"SETNX", "n", "v"},
		{"GETSET", "kept", "w"},
		{"MSET", "a", "1", "b", "2"},
		{"UNLINK", "kept"},
		{"RENAME", "kept", "other"},
		{"LPUSH", "l", "v"},
		{"PUBLISH", "ch", "m"},
		{"RPUSH", "l", "v"},
		{"KEYS", "*"},
		{"CONFIG", "SET", "maxmemory", "1"},
		{"SHUTDOWN"},
		{"DEBUG", "SLEEP", "1"},
		{"NOSUCHCOMMAND", "arg"},
	}
	for _, args := range commands {
		got, err := conn.Do(t.Context(), args...).Result()
		if err == nil || errors.Is(err, redis.Nil) || !strings.HasPrefix(err.Error(), "ERR ") {
			t.Errorf("%v = %v, %v; want an ERR reply", args, got, err)
		}
	}
	if pong, err := conn.Ping(t.Context()).Result(); err != nil || pong != "PONG" {
		t.Errorf("PING after the refused commands = %v, %v; want PONG", pong, err)
	}
	wantNoCommands(t, mons, "unsupported commands")
	c.wantHeldEverywhere(t, "kept", "v", -1) // no TTL: PTTL -1
}

// SCRIPT LOAD of every catalogue script returns the SHA1 a real Redis's
// SCRIPT LOAD returns for the same body, and the one clients hard-code;
// Redisson's scripts are refused.
func TestScriptLoadDigestsMatchRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := direct(t, startRedis(t).Addr) // a plain Redis, outside the proxy
	for _, s := range lockScripts {
		t.Run(s.name, func(t *testing.T) {
			want, err := ref.ScriptLoad(t.Context(), s.body).Result()
			if err != nil {
				t.Fatalf("redis-server SCRIPT LOAD: %v", err)
			}
			if want != s.sha {
				t.Fatalf("redis-server SCRIPT LOAD = %s; CLIENTS.md records %s", want, s.sha)
			}
			got, err := p.Client.ScriptLoad(t.Context(), s.body).Result()
			if err != nil || got != want {
				t.Errorf("proxy SCRIPT LOAD = %q, %v; want %s as redis-server", got, err, want)
			}
			if found, err := p.Client.ScriptExists(t.Context(), want).Result(); err != nil || !found[0] {
				t.Errorf("proxy SCRIPT EXISTS %s = %v, %v; want [true]", want, found, err)
			}
		})
	}
	// Redisson's scripts are served by what they do (effect_test.go).
	for _, s := range redissonScripts {
		t.Run(s.name, func(t *testing.T) {
			want := ref.ScriptLoad(t.Context(), s.body).Val()
			got, err := p.Client.ScriptLoad(t.Context(), s.body).Result()
			if err != nil || got != want {
				t.Errorf("proxy SCRIPT LOAD = %q, %v; want %s as redis-server", got, err, want)
			}
		})
	}
}

// SCRIPT EXISTS reports catalogue and learned scripts; SCRIPT FLUSH
// forgets the learned ones only, as its reply and EVALSHA then show.
func TestScriptExistsAndFlush(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	catalogue := lockScripts[0].sha
	unknown := sha1Hex("return 'unknown'")
	// A hand-written compare-and-delete: recognised by shape, not by
	// digest, so the proxy learns it.
	const variant = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`
	learned := sha1Hex(variant)

	if got, err := p.Client.ScriptExists(ctx, catalogue, unknown, learned).Result(); err != nil || !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("SCRIPT EXISTS catalogue unknown variant = %v, %v; want [true false false]", got, err)
	}
	if got, err := p.Client.ScriptLoad(ctx, variant).Result(); err != nil || got != learned {
		t.Fatalf("SCRIPT LOAD of a hand-written release = %q, %v; want %s", got, err, learned)
	}
	if got, err := p.Client.ScriptExists(ctx, strings.ToUpper(learned)).Result(); err != nil || !got[0] {
		t.Errorf("SCRIPT EXISTS of the learned script, upper-case = %v, %v; want [true]", got, err)
	}
	if err := p.Client.Do(ctx, "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := p.Client.EvalSha(ctx, learned, []string{"lock"}, "tok").Int64(); err != nil || n != 1 {
		t.Errorf("EVALSHA of the learned release = %d, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "lock")

	for _, args := range [][]any{{"SCRIPT", "FLUSH"}, {"script", "flush", "async"}, {"SCRIPT", "FLUSH", "SYNC"}} {
		if got, err := p.Client.Do(ctx, args...).Result(); err != nil || got != "OK" {
			t.Errorf("%v = %v, %v; want OK", args, got, err)
		}
	}
	if got, err := p.Client.Do(ctx, "SCRIPT", "FLUSH", "SOMETIME").Result(); err == nil {
		t.Errorf("SCRIPT FLUSH SOMETIME = %v; want an error reply", got)
	}
	if got, err := p.Client.ScriptExists(ctx, catalogue, learned).Result(); err != nil || !slices.Equal(got, []bool{true, false}) {
		t.Errorf("SCRIPT EXISTS catalogue learned after FLUSH = %v, %v; want [true false]", got, err)
	}
	_, err := p.Client.EvalSha(ctx, learned, []string{"lock"}, "tok").Result()
	if got, want := errText(err), "NOSCRIPT No matching script. Please use EVAL."; got != want {
		t.Errorf("EVALSHA of the flushed script = %q; want %q", got, want)
	}
	// EVAL teaches it again, as Redis's script cache does.
	if n, err := p.Client.Eval(ctx, variant, []string{"lock"}, "tok").Int64(); err != nil || n != 0 {
		t.Errorf("EVAL of the hand-written release on a free key = %d, %v; want 0", n, err)
	}
	if got, err := p.Client.ScriptExists(ctx, learned).Result(); err != nil || !got[0] {
		t.Errorf("SCRIPT EXISTS after EVAL = %v, %v; want [true]", got, err)
	}
}

// node-redlock's scripts take several keys at once, all or nothing.
func TestNodeRedlockScriptsOverSeveralKeys(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	acquire, extend, release := scriptNamed(t, "node-redlock v5 acquire"), scriptNamed(t, "node-redlock v5 extend"), scriptNamed(t, "node-redlock v5 release")
	keys := []string{"rl-x", "rl-y"}

	// The first call sends the body, as node-redlock does after NOSCRIPT.
	if n, err := p.Client.Eval(ctx, acquire.body, keys, "value-a", "5000").Int64(); err != nil || n != 2 {
		t.Fatalf("acquire [rl-x rl-y] = %d, %v; want 2", n, err)
	}
	for _, k := range keys {
		c.wantHeldEverywhere(t, k, "value-a", 5*time.Second)
	}
	// One key of the set is held: nothing is taken.
	if n, err := p.Client.EvalSha(ctx, acquire.sha, []string{"rl-z", "rl-y"}, "value-b", "5000").Int64(); err != nil || n != 0 {
		t.Errorf("acquire [rl-z rl-y] while rl-y is held = %d, %v; want 0", n, err)
	}
	c.wantFreeEverywhere(t, "rl-z")
	if n, err := p.Client.EvalSha(ctx, extend.sha, keys, "value-a", "8000").Int64(); err != nil || n != 2 {
		t.Errorf("extend [rl-x rl-y] = %d, %v; want 2", n, err)
	}
	for _, k := range keys {
		c.wantHeldEverywhere(t, k, "value-a", 8*time.Second)
	}
	if n, err := p.Client.EvalSha(ctx, release.sha, keys, "value-b").Int64(); err != nil || n != 0 {
		t.Errorf("release [rl-x rl-y] with another value = %d, %v; want 0", n, err)
	}
	if n, err := p.Client.EvalSha(ctx, release.sha, keys, "value-a").Int64(); err != nil || n != 2 {
		t.Errorf("release [rl-x rl-y] = %d, %v; want 2", n, err)
	}
	for _, k := range keys {
		c.wantFreeEverywhere(t, k)
	}
}

// An extend that adds to what is left (redis-py's extend, ARGV[3] "0")
// never takes a lock past max_ttl, however often it is repeated: max_ttl
// is the longest a lock may live, and what a restarted node's delay is
// sized by.
func TestExtendByNeverExceedsMaxTTL(t *testing.T) {
	const maxTTL = 10 * time.Second
	c := startNodes(t, 3)
	qcfg := engineConfig()
	qcfg.MaxTTL = maxTTL
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, c.addrs...)
	ctx := t.Context()
	if err := p.Client.Do(ctx, "SET", "lock", "tok", "NX", "PX", "8000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	extend := scriptNamed(t, "redis-py extend")
	for i := range 3 {
		// 1 with the TTL capped, or a refusal, are both fine; a lock
		// that outlives max_ttl is not.
		n, err := p.Client.EvalSha(ctx, extend.sha, []string{"lock"}, "tok", "8000", "0").Result()
		t.Logf("extend %d: add 8000ms = %v, %v", i+1, n, err)
		for j, d := range c.direct {
			if pttl, err := d.PTTL(ctx, "lock").Result(); err != nil || pttl > maxTTL {
				t.Errorf("after extend %d, node %d PTTL lock = %v, %v; want at most max_ttl %v", i+1, j, pttl, err, maxTTL)
			}
		}
		if ms, err := p.Client.PTTL(ctx, "lock").Result(); err != nil || ms > maxTTL {
			t.Errorf("after extend %d, PTTL lock = %v, %v; want at most max_ttl %v", i+1, ms, err, maxTTL)
		}
	}
}
