package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Lock libraries the proxy was not written around, each driven by a
// program under testdata as a user would write it, run side by side:
// against one real redis-server and through the proxy over 5 masters.
// Both sides must print the same checks, each "ok"; a check that passes
// against redis-server and fails through the proxy is the proxy's bug.

// sideBySide runs the program that run builds against one redis-server
// and through the proxy over 5 masters, at once, and wants every check
// from both; keys must be left on no master afterwards.
func sideBySide(t *testing.T, checks, keys []string, run func(ctx context.Context, host, port string) *exec.Cmd) {
	t.Helper()
	side := func(t *testing.T, addr string) {
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		runChecks(t, run(ctx, host, port), checks)
	}
	t.Run("one redis-server", func(t *testing.T) {
		t.Parallel()
		side(t, startRedis(t).Addr)
	})
	t.Run("proxy over 5 masters", func(t *testing.T) {
		t.Parallel()
		c, p := setup(t, 5, proxy.Config{})
		side(t, p.Addr)
		for _, k := range keys {
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
			sideBySide(t, []string{
				"synchronized returns the code's result", "held while the code runs",
				"pttl within timeout+1 seconds", "released after",
				"contended synchronized times out", "released after contention",
				"check false skips the code", "check true runs it under the lock", "released after check",
				"exception in the code is rethrown", "released after the exception",
				"other process holds the key", "blocking synchronized runs after the expiry", "released after waiting",
				"stale release throws LockReleaseException", "new holder keeps the key", "new holder releases",
			}, []string{"lock_mk"}, func(ctx context.Context, host, port string) *exec.Cmd {
				return exec.CommandContext(ctx, php, filepath.Join("testdata", "malkusch.php"), host, port, "mk", kind)
			})
		})
	}
}
