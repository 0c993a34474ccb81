package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Lock libraries in other languages, served by effect (issue 10), each
// run by a script under testdata that prints "ok <check>" per check.

// npmDir is where .ci/run installs .ci/npm-packages.
var npmDir = filepath.Join("testdata", "npm", "node_modules")

// needNodeModule skips on a laptop without the npm package, and fails in CI.
func needNodeModule(t *testing.T, name string) {
	t.Helper()
	needTool(t, "node")
	if _, err := os.Stat(filepath.Join(npmDir, name)); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("npm package %s is not installed in %s (.ci/run installs .ci/npm-packages)", name, npmDir)
		}
		t.Skipf("npm package %s not installed in %s", name, npmDir)
	}
}

// runChecks runs cmd and wants exactly checks, each printed as "ok".
func runChecks(t *testing.T, cmd *exec.Cmd, checks []string) {
	t.Helper()
	out, err := cmd.CombinedOutput()
	t.Logf("%s:\n%s", filepath.Base(cmd.Args[1]), out)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(cmd.Args[1]), err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "FAIL ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(checks) {
		t.Errorf("printed %d checks; want %d", len(lines), len(checks))
	}
	for i, check := range checks {
		if i >= len(lines) || lines[i] != "ok "+check {
			t.Errorf("check %d missing or wrong; want %q", i+1, "ok "+check)
		}
	}
}

// @sesamecare-oss/redlock (node-redlock v5 behind SELECT) over ioredis.
func TestSesamecareRedlockThroughProxy(t *testing.T) {
	needNodeModule(t, "@sesamecare-oss/redlock")
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		host, port, _ := net.SplitHostPort(p.Addr)
		ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "sesame.js"), host, port, "sesame-lock")
		cmd.Env = append(os.Environ(), "NODE_PATH="+npmDir)
		runChecks(t, cmd, []string{
			"acquire", "owner holds the key", "pttl within the duration",
			"contended acquire fails with ExecutionError", "holder unchanged",
			"extend", "pttl after extend", "release", "stale release fails with ExecutionError",
			"multi-key acquire", "overlapping multi-key acquire fails", "multi-key release",
			"db 1 is refused", "waiting acquire wakes after the release",
			"using holds the lock", "using released the lock",
		})
		for _, k := range []string{"sesame-lock", "sesame-lock:a", "sesame-lock:b", "sesame-lock:c", "sesame-lock:wait", "sesame-lock:using"} {
			c.wantFreeEverywhere(t, k)
		}
	})
}

// Symfony Lock 5.4's RedisStore: sorted-set scripts that read TIME, and
// its SET … PX 1 probe of TIME support, with php-redis and with Predis.
func TestSymfonyRedisStoreThroughProxy(t *testing.T) {
	php := needTool(t, "php")
	if _, err := os.Stat("/usr/share/php/Symfony/Component/Lock/Store/RedisStore.php"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("php-symfony-lock is not installed: %v", err)
		}
		t.Skipf("php-symfony-lock not installed")
	}
	for _, kind := range []string{"phpredis", "predis"} {
		withTwoDown(t, kind+", ", func(t *testing.T, c *cluster, p *proxyProc, down int) {
			host, port, _ := net.SplitHostPort(p.Addr)
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			runChecks(t, exec.CommandContext(ctx, php, filepath.Join("testdata", "symfony.php"), host, port, "symfony-lock", kind), symfonyChecks)
			c.wantFreeEverywhere(t, "symfony-lock")
		})
	}
}

// symfonyChecks are what testdata/symfony.php prints, against one
// redis-server (TestFamilyScriptsAgainstOneRedis) as through the proxy.
var symfonyChecks = []string{
	"acquire", "isAcquired", "remaining lifetime", "pttl of the sorted set",
	"contended acquire is false", "contender does not hold", "refresh",
	"refresh by a non-owner conflicts", "stale release leaves the owner", "release",
	"blocking acquire wakes after expiry", "released after waiting",
}
