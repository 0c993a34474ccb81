package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestEffectSplitReentryIsNotTriedTwice: one client command changes each
// master at most once. A Redisson re-entry that finds the masters split
// (the caller's hold on 2, another client's on 1, 2 of 5 down) fails
// undecided; its re-entries are not undone (that would drop the hold the
// client still relies on), so the proxy must not send it again: the
// masters would count the re-entry twice, and the client's two unlocks
// would leave the lock held there until its TTL.
func TestEffectSplitReentryIsNotTriedTwice(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(3)
	c.kill(4)
	ctx := t.Context()
	for i, holder := range []string{"caller:1", "caller:1", "other:1"} {
		c.direct[i].HSet(ctx, "k", holder, 1)
		c.direct[i].PExpire(ctx, "k", 30*time.Second)
	}
	err := redis.NewScript(redissonLock).Run(ctx, p.Client, []string{"k"}, "30000", "caller:1").Err()
	if err == nil || !strings.Contains(err.Error(), "NOQUORUM") {
		t.Fatalf("re-entry against a split = %v; want NOQUORUM", err)
	}
	for i := range 2 {
		if n := c.direct[i].HGet(ctx, "k", "caller:1").Val(); n != "2" {
			t.Errorf("master %d counts the caller's hold %s times; want 2 (the re-entry once)", i, n)
		}
	}
}
