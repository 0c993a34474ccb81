package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Lock libraries the proxy was not written around, each driven by a
// program under testdata as a user would write it, run side by side:
// against one real redis-server and through the proxy over 5 masters.
// Both sides must print the same checks, each "ok"; a check that passes
// against redis-server and fails through the proxy is the proxy's bug.

// library is one client program and what it must print.
type library struct {
	checks []string // printed as "ok <check>", in order, on both sides
	// proxyChecks, when set, are printed through the proxy instead: a
	// documented difference from one Redis, which the checks name.
	proxyChecks []string
	keys        []string // left on no master afterwards
	idle        int      // seconds after which both servers close an idle client; 0: never
	// nodeTimeout, when set, is the proxy's node_timeout instead of the
	// tests' (config.toml's default, 50ms: a script reply's PTTLs agree
	// across masters only from node_timeout plus the run's time on).
	nodeTimeout time.Duration
	run         func(ctx context.Context, host, port string) *exec.Cmd
}

// sideBySide runs l's program against one redis-server and through the
// proxy over 5 masters, at once, and wants every check from both.
func sideBySide(t *testing.T, l library) {
	t.Helper()
	side := func(t *testing.T, addr string, checks []string) {
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		runChecks(t, l.run(ctx, host, port), checks)
	}
	proxyChecks := l.checks
	if l.proxyChecks != nil {
		proxyChecks = l.proxyChecks
	}
	t.Run("one redis-server", func(t *testing.T) {
		t.Parallel()
		side(t, startRedis(t, "--timeout", strconv.Itoa(l.idle)).Addr, l.checks)
	})
	t.Run("proxy over 5 masters", func(t *testing.T) {
		t.Parallel()
		cfg := proxy.Config{IdleTimeout: time.Duration(l.idle) * time.Second}
		c, p := (*cluster)(nil), (*proxyProc)(nil)
		if l.nodeTimeout > 0 {
			cfg.CommandTimeout = commandTimeout
			c = startNodes(t, 5)
			p = startProxy(t, cfg, quorum.Config{NodeTimeout: l.nodeTimeout}, c.addrs...)
		} else {
			c, p = setup(t, 5, cfg)
		}
		side(t, p.Addr, proxyChecks)
		for _, k := range l.keys {
			c.wantFreeEverywhere(t, k)
		}
	})
}

// needFile skips on a laptop without a Debian package's file, and fails
// in CI.
func needFile(t *testing.T, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed: %v", pkg, err)
		}
		t.Skipf("%s not installed", pkg)
	}
}

// malkusch/lock 2.2 (Debian php-malkusch-lock): PHPRedisMutex and
// PredisMutex, its Redlock over one Redis: synchronized, a contender's
// TimeoutException, check()->then(), a blocking acquire, and the
// LockReleaseException of a lock lost while the code ran.
func TestMalkuschLockSideBySide(t *testing.T) {
	php := needTool(t, "php")
	needFile(t, "/usr/share/php/Malkusch/Lock/autoload.php", "php-malkusch-lock")
	for _, kind := range []string{"phpredis", "predis"} {
		t.Run(kind, func(t *testing.T) {
			sideBySide(t, library{checks: []string{
				"synchronized returns the code's result", "held while the code runs",
				"pttl within timeout+1 seconds", "released after",
				"contended synchronized times out", "released after contention",
				"check false skips the code", "check true runs it under the lock", "released after check",
				"exception in the code is rethrown", "released after the exception",
				"other process holds the key", "blocking synchronized runs after the expiry", "released after waiting",
				"stale release throws LockReleaseException", "new holder keeps the key", "new holder releases",
			}, keys: []string{"lock_mk"}, run: func(ctx context.Context, host, port string) *exec.Cmd {
				return exec.CommandContext(ctx, php, filepath.Join("testdata", "malkusch.php"), host, port, "mk", kind)
			}})
		})
	}
}

// redis-rb 4.8 (Debian ruby-redis), the lock code a Ruby user writes:
// SET NX PX/EX, compare-and-delete by EVAL and by EVALSHA after SCRIPT
// LOAD, a compare-and-pexpire extend, the WATCH/MULTI release and extend,
// a polling blocking acquire; its handshake (:id as CLIENT SETNAME) and
// its reconnect after a close and after the server closed an idle
// connection. With redis-rb's own reader and with ruby-hiredis's.
func TestRedisRbLockSideBySide(t *testing.T) {
	ruby := needTool(t, "ruby")
	for _, driver := range []struct{ name, lib, pkg string }{
		{"ruby", "redis", "ruby-redis"},
		{"hiredis", "redis/connection/hiredis", "ruby-hiredis"},
	} {
		t.Run(driver.name, func(t *testing.T) {
			if err := exec.Command(ruby, "-e", "require '"+driver.lib+"'").Run(); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("ruby cannot require %s (%s): %v", driver.lib, driver.pkg, err)
				}
				t.Skipf("ruby cannot require %s: %v", driver.lib, err)
			}
			sideBySide(t, library{checks: []string{
				"driver " + driver.name,
				"ping", "client setname from :id", "acquire", "get shows the token", "pttl within the ttl", "exists?",
				"contended acquire is false", "contended acquire with ex is false",
				"extend", "extend by a non-owner is 0", "release by a non-owner is 0",
				"script load returns the sha1", "script exists", "release with evalsha", "free after release",
				"stale release is 0", "stale extend is 0",
				"acquire again", "watch/multi pexpire extends", "watch/multi release by a non-owner does nothing", "watch/multi release",
				"other holds a short lock", "blocking acquire gets the key after the expiry",
				"command after close reconnects", "name set again on reconnect",
				"server closes the idle connection", "command after the server closed reconnects", "release after reconnect",
			}, keys: []string{"rb-lock"}, idle: 1, run: func(ctx context.Context, host, port string) *exec.Cmd {
				return exec.CommandContext(ctx, ruby, filepath.Join("testdata", "rblock.rb"), host, port, "rb-lock", "1", driver.name)
			}})
		})
	}
}

// Redis.pm 2.000 (Debian libredis-perl) and Redis::Fast 0.34
// (libredis-fast-perl), the lock code a Perl user writes: SET NX PX/EX,
// compare-and-delete by EVAL and by EVALSHA after SCRIPT LOAD, a
// compare-and-pexpire extend, pipelined commands with callbacks, the
// WATCH/MULTI release, a polling blocking acquire; name as CLIENT
// SETNAME, and the reconnect after the server closed an idle connection.
func TestPerlRedisLockSideBySide(t *testing.T) {
	perl := needTool(t, "perl")
	for _, kind := range []string{"Redis", "Redis::Fast"} {
		t.Run(kind, func(t *testing.T) {
			if err := exec.Command(perl, "-M"+kind, "-e", "1").Run(); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("perl cannot load %s: %v", kind, err)
				}
				t.Skipf("perl cannot load %s: %v", kind, err)
			}
			sideBySide(t, library{checks: []string{
				"ping", "client setname from name", "acquire", "get shows the token", "pttl within the ttl", "exists",
				"contended acquire is undef", "contended acquire with EX is undef",
				"extend", "extend by a non-owner is 0", "release by a non-owner is 0",
				"script load returns the sha1", "script exists", "release with evalsha", "free after release",
				"stale release is 0", "stale extend is 0",
				"pipelined acquire, contended acquire, get and stale release",
				"watch/multi release by a non-owner does nothing", "watch/multi release",
				"other holds a short lock", "blocking acquire gets the key after the expiry",
				"server closes the idle connection", "command after the server closed reconnects",
				"name set again on reconnect", "release after reconnect",
			}, keys: []string{"pl-lock"}, idle: 1, run: func(ctx context.Context, host, port string) *exec.Cmd {
				return exec.CommandContext(ctx, perl, filepath.Join("testdata", "pllock.pl"), host, port, "pl-lock", kind, "1")
			}})
		})
	}
}

// AnyEvent::Redis 0.24 (Debian libanyevent-redis-perl), a non-blocking
// Perl client, and the lock code its users write: SET NX PX, EVAL and
// EVALSHA extend and release, 16 acquires in flight on one connection,
// the WATCH/MULTI/EXEC release, INFO as it parses it, and a waiter on a
// subscribed connection woken by the release script's PUBLISH.
func TestAnyEventRedisLockSideBySide(t *testing.T) {
	perl := needTool(t, "perl")
	if err := exec.Command(perl, "-MAnyEvent::Redis", "-e", "1").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("perl cannot load AnyEvent::Redis (libanyevent-redis-perl): %v", err)
		}
		t.Skipf("perl cannot load AnyEvent::Redis: %v", err)
	}
	sideBySide(t, library{checks: []string{
		"ping", "acquire", "get shows the token", "pttl within the ttl", "contended acquire is undef",
		"extend", "extend by a non-owner is 0", "release by a non-owner is 0",
		"script load returns the sha1", "release with evalsha", "free after release", "stale release is 0",
		"16 acquires in flight, one winner", "watch/multi/exec release", "info parses, redis_version",
		"waiter woken by the release", "one message", "released",
	}, keys: []string{"ae-lock"}, run: func(ctx context.Context, host, port string) *exec.Cmd {
		return exec.CommandContext(ctx, perl, filepath.Join("testdata", "aelock.pl"), host, port, "ae-lock")
	}})
}

// Python's asyncio clients (Debian's /usr/bin/python3): redis-py 4.3's
// redis.asyncio Lock (python3-redis), and the lock code an aioredis 1.3
// user writes (python3-aioredis, which has no Redis lock of its own),
// with 16 tasks racing over its pool and WATCH/MULTI on one of its
// connections.
func TestPythonAsyncioLockSideBySide(t *testing.T) {
	py := needTool(t, systemPython)
	for _, kind := range []struct {
		module string
		checks []string
	}{
		{"redis.asyncio", []string{
			"acquire", "owned", "locked", "pttl within the timeout",
			"extend add", "pttl after extend add", "extend replace_ttl", "pttl after extend replace_ttl",
			"reacquire", "pttl after reacquire",
			"contended non-blocking acquire", "contender does not own", "contended acquire with blocking_timeout",
			"blocking acquire wins after the release", "release",
			"acquire short lock", "short lock expired",
			"stale extend raises LockNotOwnedError", "stale release raises LockNotOwnedError",
			"release of an unacquired lock raises LockError",
			"async with holds the lock", "async with released the lock",
		}},
		{"aioredis", []string{
			"acquire", "get shows the token", "pttl within the ttl", "contended acquire is false",
			"extend", "extend by a non-owner is 0", "release by a non-owner is 0",
			"script load returns the sha1", "script exists", "release with evalsha", "free after release",
			"stale release is 0", "16 racing acquires, one winner",
			"watch/multi_exec pexpire extends", "watch/multi_exec release by a non-owner does nothing",
			"watch/multi_exec release", "other holds a short lock",
			"blocking acquire gets the key after the expiry", "release",
		}},
	} {
		t.Run(kind.module, func(t *testing.T) {
			if err := exec.Command(py, "-c", "import "+kind.module).Run(); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s cannot import %s: %v", py, kind.module, err)
				}
				t.Skipf("%s cannot import %s: %v", py, kind.module, err)
			}
			sideBySide(t, library{checks: kind.checks, keys: []string{"pa-lock", "pa-lock:stale", "pa-lock:with"},
				run: func(ctx context.Context, host, port string) *exec.Cmd {
					return exec.CommandContext(ctx, py, filepath.Join("testdata", "pyasync.py"), host, port, "pa-lock", kind.module)
				}})
		})
	}
}

// django-redis 5.2 (Debian python3-django-redis, over python3-redis
// 4.3): cache.lock(), redis-py's Lock on the cache's pool, and the
// cache.add() mutex of Celery's "one task at a time" recipe. Its
// cache.delete() is a plain DEL and cache.add(timeout=None) a SET NX
// without a TTL: both refused through the proxy (docs/compatibility.md),
// so the add mutex lasts until its timeout.
func TestDjangoRedisLockSideBySide(t *testing.T) {
	py := needTool(t, systemPython)
	if err := exec.Command(py, "-c", "import django_redis").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s cannot import django_redis (python3-django-redis): %v", py, err)
		}
		t.Skipf("%s cannot import django_redis: %v", py, err)
	}
	lock := []string{
		"lock acquire", "owned and locked", "cache.ttl within the timeout",
		"contended acquire with blocking_timeout is false", "contender does not own",
		"extend", "reacquire", "release", "acquire a short lock", "stale release raises LockNotOwnedError",
		"blocking acquire wins after the release", "with block holds the lock", "with block released the lock",
		"add", "contended add is false", "get shows the value",
	}
	sideBySide(t, library{
		checks: append(slices.Clip(lock), "delete releases", "add without a timeout never expires"),
		// redis-py's ResponseError leaves out the error code ERR.
		proxyChecks: append(slices.Clip(lock), "delete refused: "+strings.TrimPrefix(delRefused, "ERR "), "the add mutex expires",
			"add without a timeout refused: "+strings.TrimPrefix(noTTLRefused, "ERR ")),
		keys: []string{":1:dj-lock", ":1:dj-lock:add", ":1:dj-lock:forever"},
		run: func(ctx context.Context, host, port string) *exec.Cmd {
			return exec.CommandContext(ctx, py, filepath.Join("testdata", "djlock.py"), host, port, "dj-lock")
		}})
}

// noTTLRefused is the proxy's answer to SET NX without an expiry when
// default_ttl is not set (docs/compatibility.md).
const noTTLRefused = "ERR a lock needs a TTL: SET key token NX PX milliseconds (or set default_ttl)"

// delRefused is the proxy's answer to DEL (docs/compatibility.md, "Differences from one
// Redis": DEL).
const delRefused = "ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use"

// Lock libraries from npm (pinned in .ci/npm-packages): redis-semaphore
// 5.8 (Mutex and Semaphore over ioredis), redlock 4.2 and 5.0.0-beta.2
// (node-redlock v4 and v5, with using(), over ioredis), redlock-universal
// 0.8 (over ioredis and over node-redis), node-redis-warlock 1.0 (over
// ioredis), redis-lock 1.0 (over node-redis v4) and
// simple-redis-mutex 3.0 (over node-redis v6); and ioredis's reconnect
// after the server closed an idle connection.
// Semaphore's ZREM release and simple-redis-mutex's INCR fencing counter
// are refused through the proxy (docs/compatibility.md, "Differences from one Redis":
// other Redis commands), and so is redis-lock's DEL release.
func TestNpmLockLibrariesSideBySide(t *testing.T) {
	// redlock-universal's using() extends by a script whose reply carries
	// the PTTL it read first (a fifth of the TTL): under the tests'
	// node_timeout of 1s those PTTLs, a few ms apart on the masters, are
	// below the slack within which integers agree, and the extend is
	// NOQUORUM (docs/compatibility.md); so its proxy runs with the
	// default node_timeout.
	nodeTimeouts := map[string]time.Duration{
		"redlock-universal-ioredis": 50 * time.Millisecond, "redlock-universal-node-redis": 50 * time.Millisecond,
	}
	for _, lib := range []struct {
		name, module string
		checks       []string
		proxyChecks  []string
		idle         int
	}{
		{"redis-semaphore", "redis-semaphore", []string{
			"acquire", "key holds the identifier", "pttl within lockTimeout",
			"contended tryAcquire is false", "contended acquire throws TimeoutError", "refresh extends",
			"release by a non-holder leaves the key", "release", "blocking acquire wins after the release",
			"lost lock reported by the refresh", "the new holder keeps the key",
			"semaphore grants 2 of limit 2", "semaphore release frees a slot", "semaphore released",
		}, []string{
			"acquire", "key holds the identifier", "pttl within lockTimeout",
			"contended tryAcquire is false", "contended acquire throws TimeoutError", "refresh extends",
			"release by a non-holder leaves the key", "release", "blocking acquire wins after the release",
			"lost lock reported by the refresh", "the new holder keeps the key",
			"semaphore acquire refused: ERR script refused: it scores a sorted-set member by what is not its expiry (a time in ms in the future, within max_ttl)",
			"semaphore refused acquire keeps nothing",
		}, 0},
		{"redlock4", "redlock", []string{
			"lock", "pttl within the ttl", "contended lock fails with LockError", "extend", "unlock",
			"extend after unlock fails with LockError", "stale unlock fails with LockError",
			"retrying lock wins after the unlock", "multi-resource lock", "multi-resource unlock",
		}, nil, 0},
		{"redlock5", "redlock5", redlock5Checks, nil, 0},
		{"redlock-universal-ioredis", "redlock-universal", []string{
			"acquire", "pttl within the ttl", "contended acquire fails with LockAcquisitionError", "extend", "isLocked",
			"inspect shows the value and ttl", "release", "stale release is false", "stale extend is false",
			"isLocked after release", "inspect of a free key is null",
			"using extends the lock past its ttl", "using returns the result and releases",
			"acquireBatch", "overlapping acquireBatch fails and takes none", "releaseBatch",
		}, nil, 0},
		{"redlock-universal-node-redis", "redlock-universal", []string{
			"acquire", "pttl within the ttl", "contended acquire fails with LockAcquisitionError", "extend", "isLocked",
			"inspect shows the value and ttl", "release", "stale release is false", "stale extend is false",
			"isLocked after release", "inspect of a free key is null",
			"using extends the lock past its ttl", "using returns the result and releases",
			"acquireBatch", "overlapping acquireBatch fails and takes none", "releaseBatch",
		}, nil, 0},
		{"warlock", "node-redis-warlock", []string{
			"lock", "pttl within the ttl", "contended lock gets no unlock", "touch extends", "touch by a non-owner is 0",
			"unlock", "stale unlock is 0", "optimistic lock wins after the expiry", "released",
		}, nil, 0},
		{"ioredis-reconnect", "ioredis", []string{
			"acquire", "client setname from connectionName", "server closes the idle connection",
			"reconnected", "command after the reconnect", "name set again on reconnect", "release",
		}, nil, 1},
		{"redis-lock", "redis-lock", []string{
			"lock", "pttl within the timeout", "contended lock waits", "done releases",
			"the waiting lock gets it", "second done releases",
		}, []string{
			"lock", "pttl within the timeout", "contended lock waits",
			"done refused: " + delRefused, "the waiting lock gets it",
			"second done refused: " + delRefused, "the lock expires",
		}, 0},
		{"simple-redis-mutex", "simple-redis-mutex", []string{
			"tryLock", "contended tryLock is false", "refreshTimeout", "waiting lock woken by the release", "released",
		}, []string{
			"tryLock refused: ERR 'incr' is not supported: redlock-proxy serves lock commands only (a counter over independent masters is not monotonic; INCR and INCRBY of a key matching fence_keys are served as quorum counters)", "the lock taken expires",
		}, 0},
	} {
		t.Run(lib.name, func(t *testing.T) {
			needNodeModule(t, lib.module)
			if lib.name == "redis-lock" {
				needNodeModule(t, "redis4") // node-redis v4, which it requires
			}
			sideBySide(t, library{checks: lib.checks, proxyChecks: lib.proxyChecks, idle: lib.idle, nodeTimeout: nodeTimeouts[lib.name],
				keys: []string{"mutex:nl-lock", "semaphore:nl-lock", "nl-lock", "nl-lock:a", "nl-lock:b", "nl-lock:c", "nl-lock:lock", "lock.nl-lock", "@simple-redis-mutex:lock-nl-lock"},
				run: func(ctx context.Context, host, port string) *exec.Cmd {
					cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "npmlocks.js"), host, port, "nl-lock", lib.name)
					cmd.Env = append(os.Environ(), "NODE_PATH="+npmDir)
					return cmd
				}})
		})
	}
}

// node-redlock v5 (redlock@5.0.0-beta.2) through the proxy with every
// master up and with 2 of 5 down: the same checks as side by side.
func TestRedlock5WithTwoMastersDown(t *testing.T) {
	needNodeModule(t, "redlock5")
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		host, port, _ := net.SplitHostPort(p.Addr)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "npmlocks.js"), host, port, "r5-lock", "redlock5")
		cmd.Env = append(os.Environ(), "NODE_PATH="+npmDir)
		runChecks(t, cmd, redlock5Checks)
		for _, k := range []string{"r5-lock", "r5-lock:a", "r5-lock:b", "r5-lock:c"} {
			c.wantFreeEverywhere(t, k)
		}
	})
}

// redlock5Checks are what npmlocks.js prints for node-redlock v5.
var redlock5Checks = []string{
	"acquire", "pttl within the duration", "contended acquire fails with ExecutionError", "holder unchanged",
	"extend", "release", "stale release fails with ExecutionError", "extend after release fails with ExecutionError",
	"retrying acquire wins after the release", "multi-resource acquire",
	"overlapping multi-resource acquire fails and takes none", "multi-resource extend", "multi-resource release",
	"using extends the lock past its duration", "using returns the routine result and releases",
	"aborted signal is not set before the extension", "lost lock aborts the routine with ExecutionError",
	"using with a lost lock rejects with ExecutionError", "the new holder keeps the key",
}

// Laravel's cache locks (Debian php-illuminate-cache 8.83 over
// php-illuminate-redis): PhpRedisLock over php-redis and RedisLock over
// Predis, as Cache::lock() builds them: get, get with a callback, a
// restored owner's release, block and its LockTimeoutException; and the
// Redis funnel. forceRelease (a plain DEL) and the funnel's MGET script
// are refused through the proxy (docs/compatibility.md, "Differences from one Redis":
// DEL; EVAL of a script that is not a recognised lock script).
func TestLaravelCacheLockSideBySide(t *testing.T) {
	php := needTool(t, "php")
	needFile(t, "/usr/share/php/Illuminate/Cache/RedisLock.php", "php-illuminate-cache")
	needFile(t, "/usr/share/php/Illuminate/Redis/Connections/PredisConnection.php", "php-illuminate-redis")
	common := []string{
		"get acquires", "the key holds the owner", "ttl within the seconds", "contended get is false",
		"release by a non-owner is false", "a restored lock releases", "stale release is false",
		"get with a callback runs it under the lock", "released after the callback",
		"block(0) of a held lock times out", "block waits for the expiry", "released after block",
	}
	funnelRefused := map[string]string{
		"phpredis": `funnel refused: Illuminate\Contracts\Redis\LimiterTimeoutException after ERR unsupported script: MGET is not a lock command (line 1)`,
		"predis":   "funnel refused: ERR unsupported script: MGET is not a lock command (line 1)",
	}
	for _, kind := range []string{"phpredis", "predis"} {
		t.Run(kind, func(t *testing.T) {
			sideBySide(t, library{
				checks: append(slices.Clip(common), "forceRelease deletes", "funnel runs the callback in a slot", "funnel slot released"),
				proxyChecks: append(slices.Clip(common),
					"forceRelease refused: ERR DEL is refused: release a lock with its token through the compare-and-delete script",
					"the owner still releases", funnelRefused[kind]),
				keys: []string{"lv-lock", "lv-lock:funnel1", "lv-lock:funnel2"},
				run: func(ctx context.Context, host, port string) *exec.Cmd {
					return exec.CommandContext(ctx, php, filepath.Join("testdata", "laravel.php"), host, port, "lv-lock", kind)
				}})
		})
	}
}

// The family scripts that the proxy tests run (TestRedisPyLock,
// TestSymfonyRedisStoreThroughProxy) print the same checks against one
// redis-server: what they expect of the proxy is what one Redis does.
// sesame.js and noderesp3.mjs are not run here: each also checks
// something only the proxy does (db 1 refused; EVALSHA of a catalogue
// digest never loaded, docs/compatibility.md "Differences from one Redis").
func TestFamilyScriptsAgainstOneRedis(t *testing.T) {
	t.Run("redis-py Lock", func(t *testing.T) {
		t.Parallel()
		py := needTool(t, systemPython)
		host, port, _ := net.SplitHostPort(startRedis(t).Addr)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		runChecks(t, exec.CommandContext(ctx, py, filepath.Join("testdata", "pylock.py"), host, port, "py-lock"), pyLockChecks)
	})
	for _, kind := range []string{"phpredis", "predis"} {
		t.Run("Symfony Lock, "+kind, func(t *testing.T) {
			t.Parallel()
			php := needTool(t, "php")
			needFile(t, "/usr/share/php/Symfony/Component/Lock/Store/RedisStore.php", "php-symfony-lock")
			host, port, _ := net.SplitHostPort(startRedis(t).Addr)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			runChecks(t, exec.CommandContext(ctx, php, filepath.Join("testdata", "symfony.php"), host, port, "symfony-lock", kind), symfonyChecks)
		})
	}
}
