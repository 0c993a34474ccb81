package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// redissonNodeModules is where .ci/run installs .ci/npm-packages.
var redissonNodeModules = filepath.Join("testdata", "npm", "node_modules")

// needRedissonModules skips on a laptop without node-redisson and
// ioredis, and fails in CI.
func needRedissonModules(t *testing.T) {
	t.Helper()
	for _, m := range []string{"node-redisson", "ioredis"} {
		if _, err := os.Stat(filepath.Join(redissonNodeModules, m)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("npm package %s is not installed in %s (.ci/run installs .ci/npm-packages)", m, redissonNodeModules)
			}
			t.Skipf("npm package %s not installed in %s", m, redissonNodeModules)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("node is not installed")
		}
		t.Skip("node not on PATH")
	}
}

// TestNodeRedissonThroughTwoProxies runs node-redisson, a real Redisson
// client, through two proxies over the same 5 masters: a lock through
// proxy A; a contended tryLock through B that fails; a tryLock through B
// that waits and wakes when A unlocks (the unlock script publishes on
// every master; B's proxy delivers it once); a stale unlock; B's unlock.
// Again with 2 of 5 masters down.
func TestNodeRedissonThroughTwoProxies(t *testing.T) {
	needRedissonModules(t)
	for _, down := range []int{0, 2} {
		t.Run(map[int]string{0: "all up", 2: "2 of 5 down"}[down], func(t *testing.T) {
			c := startNodes(t, 5)
			for i := range down {
				c.kill(i)
			}
			a := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
			b := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
			cmd := exec.CommandContext(t.Context(), "node", filepath.Join("testdata", "redisson.js"), a.Addr, b.Addr, c.addrs[down])
			cmd.Env = append(os.Environ(), "NODE_PATH="+redissonNodeModules)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node redisson.js: %v\n%s%s", err, out, stderr.String())
			}
			var got struct {
				Lock, Contended, IsLocked, Waited any
				Unlock, StaleUnlock, UnlockB      string
				WokeAfterMs                       int64
				FreeAfter                         any
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("node redisson.js printed %q: %v", out, err)
			}
			t.Logf("node-redisson: %s", out)
			want := []struct {
				what      string
				got, want any
			}{
				{"lock through A", got.Lock, true},
				{"contended tryLock through B", got.Contended, false},
				{"isLocked through B", got.IsLocked, true},
				{"unlock through A", got.Unlock, "ok"},
				{"waiting tryLock through B", got.Waited, true},
				{"stale unlock through A", got.StaleUnlock, "error: attempt to unlock lock, not locked by current client"},
				{"unlock through B", got.UnlockB, "ok"},
				{"isLocked after", got.FreeAfter, false},
			}
			for _, w := range want {
				if w.got != w.want {
					t.Errorf("%s = %v; want %v", w.what, w.got, w.want)
				}
			}
			// The waiter's wait was up to its 15s wait time or the 20s lease;
			// waking within a few seconds means the unlock's message woke it.
			if got.WokeAfterMs > 5000 {
				t.Errorf("the waiting tryLock returned %dms after the unlock; want it woken by the unlock message", got.WokeAfterMs)
			}
			for _, i := range c.live() {
				if n := c.direct[i].Exists(t.Context(), "nr:lock").Val(); n != 0 {
					t.Errorf("node %d still holds nr:lock", i)
				}
				if n := c.direct[i].PubSubNumSub(t.Context(), "redisson_lock__channel:{nr:lock}").Val()["redisson_lock__channel:{nr:lock}"]; n != 0 {
					waitNoSubscribers(t, c.direct[i], "redisson_lock__channel:{nr:lock}")
				}
			}
		})
	}
}

// waitNoSubscribers waits for a node's subscriptions to channel to end.
func waitNoSubscribers(t *testing.T, d *redis.Client, channel string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for d.PubSubNumSub(t.Context(), channel).Val()[channel] != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s still has subscribers 5s after the clients left", channel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
