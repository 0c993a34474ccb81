package integration

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// go-redis v9 with default options negotiates RESP3 with HELLO 3 and
// works: a lock cycle, a contended acquire and a script.
func TestGoRedisDefaultOptions(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr, PoolSize: 1})
	t.Cleanup(func() { rdb.Close() })
	if got, err := rdb.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("Ping = %q, %v; want PONG", got, err)
	}
	// In RESP3 go-redis reads HELLO's map as a Go map.
	if hello, err := rdb.Do(ctx, "HELLO").Result(); err != nil {
		t.Fatalf("HELLO: %v", err)
	} else if m, ok := hello.(map[any]any); !ok || m["proto"] != int64(3) {
		t.Fatalf("HELLO on go-redis's connection = %#v; want a map with proto 3", hello)
	}
	if ok, err := rdb.SetNX(ctx, "gr-lock", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SetNX = %v, %v; want true", ok, err)
	}
	if ok, err := rdb.SetNX(ctx, "gr-lock", "other", 1500*time.Millisecond).Result(); err != nil || ok {
		t.Errorf("second SetNX = %v, %v; want false", ok, err)
	}
	if got, err := rdb.Get(ctx, "gr-lock").Result(); err != nil || got != "tok" {
		t.Errorf("Get = %q, %v; want tok", got, err)
	}
	c.wantHeldEverywhere(t, "gr-lock", "tok", 5*time.Second)
	if n, err := rdb.Eval(ctx, distlockRelease, []string{"gr-lock"}, "tok").Int64(); err != nil || n != 1 {
		t.Errorf("Eval release = %d, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "gr-lock")
}

// redsync v4 with the proxy as its only pool: Lock, Extend, Unlock, and
// contention, as against one Redis.
func TestRedsyncMutex(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	t.Cleanup(func() { rdb.Close() })
	rs := redsync.New(goredis.NewPool(rdb))

	m := rs.NewMutex("rs-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	before := time.Now()
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if until := m.Until(); !until.After(time.Now()) || until.After(before.Add(5*time.Second)) {
		t.Errorf("Until = %v; want in the future and within the 5s expiry", until)
	}
	c.wantHeldEverywhere(t, "rs-lock", m.Value(), 5*time.Second)

	if ok, err := m.Extend(); err != nil || !ok {
		t.Errorf("Extend = %v, %v; want true", ok, err)
	}
	c.wantHeldEverywhere(t, "rs-lock", m.Value(), 5*time.Second)

	m2 := rs.NewMutex("rs-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	var taken *redsync.ErrTaken
	if err := m2.TryLock(); !errors.Is(err, redsync.ErrFailed) && !errors.As(err, &taken) {
		t.Errorf("TryLock of a held mutex = %v; want ErrFailed or ErrTaken", err)
	}
	c.wantHeldEverywhere(t, "rs-lock", m.Value(), 5*time.Second)

	if ok, err := m.Unlock(); err != nil || !ok {
		t.Errorf("Unlock = %v, %v; want true", ok, err)
	}
	c.wantFreeEverywhere(t, "rs-lock")
	// The key is gone on every node: the script's -1.
	if ok, err := m.Unlock(); ok || !errors.Is(err, redsync.ErrLockAlreadyExpired) {
		t.Errorf("second Unlock = %v, %v; want false, ErrLockAlreadyExpired", ok, err)
	}
	// The mutex is free again.
	if err := m2.TryLock(); err != nil {
		t.Errorf("TryLock after Unlock: %v", err)
	}
	if ok, err := m2.Unlock(); err != nil || !ok {
		t.Errorf("Unlock of the second mutex = %v, %v; want true", ok, err)
	}
	c.wantFreeEverywhere(t, "rs-lock")
}

// redsync's WithSetNXOnExtend: Extend re-creates a lock that is gone.
func TestRedsyncSetNXOnExtend(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	t.Cleanup(func() { rdb.Close() })
	rs := redsync.New(goredis.NewPool(rdb))
	m := rs.NewMutex("rs-setnx", redsync.WithExpiry(2*time.Second), redsync.WithTries(1), redsync.WithSetNXOnExtend())
	if err := m.Lock(); err != nil {
		t.Fatalf("Lock: %v", err)
	}
	if ok, err := m.Extend(); err != nil || !ok {
		t.Errorf("Extend = %v, %v; want true", ok, err)
	}
	if ok, err := m.Unlock(); err != nil || !ok {
		t.Errorf("Unlock = %v, %v; want true", ok, err)
	}
	c.wantFreeEverywhere(t, "rs-setnx")
	if ok, err := m.Extend(); err != nil || !ok {
		t.Errorf("Extend after Unlock = %v, %v; want true (re-created)", ok, err)
	}
	c.wantHeldEverywhere(t, "rs-setnx", m.Value(), 2*time.Second)
	if ok, err := m.Unlock(); err != nil || !ok {
		t.Errorf("final Unlock = %v, %v; want true", ok, err)
	}
	c.wantFreeEverywhere(t, "rs-setnx")
}

// bsm/redislock: Obtain with metadata, TTL, Refresh, a re-entrant Obtain
// with the same token, Release, and contention.
func TestRedislock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr})
	t.Cleanup(func() { rdb.Close() })
	locker := redislock.New(rdb)

	lock, err := locker.Obtain(ctx, "rl-lock", 5*time.Second, &redislock.Options{Token: "tokA", Metadata: "meta"})
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	c.wantHeldEverywhere(t, "rl-lock", "tokAmeta", 5*time.Second)
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 || ttl > 5*time.Second {
		t.Errorf("TTL = %v, %v; want in (0, 5s]", ttl, err)
	}
	if err := lock.Refresh(ctx, 7500*time.Millisecond, nil); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 5*time.Second || ttl > 7500*time.Millisecond {
		t.Errorf("TTL after Refresh(7.5s) = %v, %v; want in (5s, 7.5s]", ttl, err)
	}

	if _, err := locker.Obtain(ctx, "rl-lock", 5*time.Second, &redislock.Options{Token: "tokB"}); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("contended Obtain = %v; want ErrNotObtained", err)
	}
	again, err := locker.Obtain(ctx, "rl-lock", 6*time.Second, &redislock.Options{Token: "tokA", Metadata: "meta2"})
	if err != nil {
		t.Fatalf("re-entrant Obtain with the same token: %v", err)
	}
	// Each master keeps the longer TTL the key had (the refresh's 7.5s),
	// where one Redis sets the 6s asked (docs/compatibility.md).
	c.wantHeldEverywhere(t, "rl-lock", "tokAmeta2", 7500*time.Millisecond)
	if ttl, err := again.TTL(ctx); err != nil || ttl <= 6*time.Second || ttl > 7500*time.Millisecond {
		t.Errorf("TTL after the re-entrant Obtain(6s) = %v, %v; want in (6s, 7.5s]: the longer TTL kept", ttl, err)
	}
	// The first handle's value (token+meta) no longer matches.
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release with the replaced value = %v; want ErrLockNotHeld", err)
	}
	if err := again.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	c.wantFreeEverywhere(t, "rl-lock")
	if err := again.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("second Release = %v; want ErrLockNotHeld", err)
	}
	if err := again.Refresh(ctx, time.Second, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh after Release = %v; want ErrNotObtained", err)
	}
	if ttl, err := again.TTL(ctx); err != nil || ttl != 0 {
		t.Errorf("TTL after Release = %v, %v; want 0", ttl, err)
	}

	// A random token, as most callers use it.
	l, err := locker.Obtain(ctx, "rl-lock2", time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain with a random token: %v", err)
	}
	c.wantHeldEverywhere(t, "rl-lock2", l.Token(), time.Second)
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	c.wantFreeEverywhere(t, "rl-lock2")
}

// systemPython is Debian's interpreter, the one with python3-redis; the
// python3 first on PATH may be another.
const systemPython = "/usr/bin/python3"

// needTool returns the path of a client program, skipping the test on a
// laptop without it and failing it in CI.
func needTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed", name)
		}
		t.Skipf("%s not installed", name)
	}
	return path
}

// redis-py's Lock, run by a script under testdata: acquire, owned,
// locked, extend (add and replace), reacquire, contention, release, and
// a stale release.
func TestRedisPyLock(t *testing.T) {
	py := needTool(t, systemPython)
	if err := exec.Command(py, "-c", "import redis").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import redis: %v", py, err)
		}
		t.Skipf("%s cannot import redis: %v", py, err)
	}
	c, p := setup(t, 3, proxy.Config{})
	host, port, _ := net.SplitHostPort(p.Addr)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, filepath.Join("testdata", "pylock.py"), host, port, "py-lock").CombinedOutput()
	t.Logf("pylock.py:\n%s", out)
	if err != nil {
		t.Fatalf("pylock.py: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	checks := pyLockChecks
	if len(lines) != len(checks) {
		t.Errorf("pylock.py printed %d lines; want %d", len(lines), len(checks))
	}
	for i, check := range checks {
		if i >= len(lines) || lines[i] != "ok "+check {
			t.Errorf("pylock.py line %d missing or wrong; want %q", i+1, "ok "+check)
		}
	}
	for _, key := range []string{"py-lock", "py-lock:stale", "py-lock:with"} {
		c.wantFreeEverywhere(t, key)
	}
}

// pyLockChecks are what testdata/pylock.py prints, against one
// redis-server (TestFamilyScriptsAgainstOneRedis) as through the proxy.
var pyLockChecks = []string{
	"acquire", "owned", "locked", "extend add", "pttl after extend add",
	"extend replace_ttl", "pttl after extend replace_ttl", "reacquire", "pttl after reacquire",
	"contended non-blocking acquire", "contended acquire with blocking_timeout", "release",
	"acquire after release", "release of the second lock", "acquire short lock", "short lock expired",
	"stale release raises LockNotOwnedError", "with block holds the lock", "with block released the lock",
}

// runCLI runs redis-cli against addr with args, feeding it stdin, and
// returns its standard output.
func runCLI(t *testing.T, addr, stdin string, args ...string) string {
	t.Helper()
	cli := needTool(t, "redis-cli")
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"-h", host, "-p", port}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redis-cli %q: %v\nstderr: %s", args, err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("redis-cli %q stderr: %s", args, stderr.String())
	}
	return string(out)
}

// redis-cli one-shot commands: SET NX PX, GET, and EVAL of the distlock
// release. Its output is raw, as stdout is not a terminal.
func TestRedisCliOneShot(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "cli-lock", "tok", "NX", "PX", "5000"}, "OK\n"},
		{[]string{"SET", "cli-lock", "other", "NX", "PX", "5000"}, "\n"}, // nil
		{[]string{"GET", "cli-lock"}, "tok\n"},
		{[]string{"EVAL", distlockRelease, "1", "cli-lock", "tok"}, "1\n"},
		{[]string{"GET", "cli-lock"}, "\n"},
	}
	for i, s := range steps {
		if got := runCLI(t, p.Addr, "", s.args...); got != s.want {
			t.Errorf("step %d: redis-cli %q printed %q; want %q", i, s.args, got, s.want)
		}
		if i == 2 {
			c.wantHeldEverywhere(t, "cli-lock", "tok", 5*time.Second)
		}
	}
	c.wantFreeEverywhere(t, "cli-lock")
}

// redis-cli reading commands from stdin first sends COMMAND DOCS; the
// proxy's error for it does not break the session.
func TestRedisCliStdin(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	script := strings.ReplaceAll(strings.ReplaceAll(distlockRelease, `"`, `\"`), "\n", `\n`)
	stdin := strings.Join([]string{
		"SET cli-lock tok PX 5000 NX",
		"SET cli-lock other NX PX 5000",
		"GET cli-lock",
		`EVAL "` + script + `" 1 cli-lock tok`,
		"GET cli-lock",
		"PING",
	}, "\n") + "\n"
	got := runCLI(t, p.Addr, stdin)
	if want := "OK\n\ntok\n1\n\nPONG\n"; got != want {
		t.Errorf("redis-cli with commands on stdin printed %q; want %q", got, want)
	}
	c.wantFreeEverywhere(t, "cli-lock")
}

// node-redis v6 with RESP: 3 (it does not fall back to RESP2): HELLO 3,
// a lock cycle, a contended acquire and scripts, by a script under
// testdata. .ci/run installs the pinned version (.ci/npm-packages).
func TestNodeRedisRESP3(t *testing.T) {
	node := needTool(t, "node")
	if _, err := os.Stat(filepath.Join("testdata", "npm", "node_modules", "redis")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node-redis is not installed in testdata/npm: %v", err)
		}
		t.Skipf("node-redis not installed in testdata/npm (bash .ci/run installs it): %v", err)
	}
	c, p := setup(t, 3, proxy.Config{})
	host, port, _ := net.SplitHostPort(p.Addr)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, filepath.Join("testdata", "noderesp3.mjs"), host, port, "node-lock").CombinedOutput()
	t.Logf("noderesp3.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("noderesp3.mjs: %v", err)
	}
	if got := strings.Count(string(out), "ok "); got != 9 {
		t.Errorf("noderesp3.mjs passed %d checks; want 9", got)
	}
	c.wantFreeEverywhere(t, "node-lock")
}

// redis-cli -3 speaks RESP3 with the proxy and prints exactly what it
// prints against one redis-server: a lock cycle, a contended acquire, a
// script, nulls and a map.
func TestRedisCliRESP3(t *testing.T) {
	ref := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	const stdin = "SET cli3 tok NX PX 5000\nSET cli3 other NX PX 5000\nGET cli3\n" +
		"EVAL \"return redis.call('get',KEYS[1])\" 0\n" + // refused by the proxy: compared below
		"EVAL 'if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) else return 0 end' 1 cli3 tok\n" +
		"GET cli3\nEXISTS cli3 cli3\nPING\nCLIENT GETNAME\n"
	got := strings.Split(runCLI(t, p.Addr, stdin, "-3"), "\n")
	want := strings.Split(runCLI(t, ref.Addr, stdin, "-3"), "\n")
	if len(got) != len(want) {
		t.Fatalf("redis-cli -3 printed %q through the proxy, %q against redis-server", got, want)
	}
	for i := range want {
		if i == 3 { // the refused script
			if !strings.Contains(got[i], "unsupported script") && !strings.Contains(got[i], "script refused") {
				t.Errorf("line %d through the proxy = %q; want the script refused", i, got[i])
			}
			continue
		}
		if got[i] != want[i] {
			t.Errorf("line %d: redis-cli -3 printed %q through the proxy, %q against redis-server", i, got[i], want[i])
		}
	}
}
