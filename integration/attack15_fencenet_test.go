package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// attack15's net (written over c8e5595, kept after FENCE stopped writing
// records on the masters not asked): through one proxy, a hold released
// and taken again at once with its token (a plain release, and Redisson's
// unlock served by its effect) gets a higher T each time, and no record
// of a released hold is left.
func TestAttack15FenceRetakesWithOneTokenGetHigherTokens(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig()
	qcfg.MaxTTL = 10 * time.Second
	p := mustStartMonitored(t, qcfg, c.addrs...).Client
	ctx := t.Context()
	record := func(i int, key string) string {
		return c.direct[i].Get(ctx, "redlock-proxy:fence:"+key).Val()
	}
	fence := func(cl *redis.Client, key, token string) int64 {
		t.Helper()
		T, err := cl.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("FENCE %s: %v", key, err)
		}
		return T
	}
	for i := range 4 { // counters seeded; the window asked first agrees from now on
		k := fmt.Sprintf("net:warm:%d", i)
		p.SetNX(ctx, k, "w", 5*time.Second)
		fence(p, k, "w")
		p.Eval(ctx, distlockRelease, []string{k}, "w")
	}

	t.Run("a hold taken again at once with its token", func(t *testing.T) {
		lock, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock)
		const key, token = "net:retake", "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
		last := int64(0)
		for round := range 40 {
			redisson := round%2 == 1
			if redisson {
				if err := lock.Run(ctx, p, []string{key}, 5000, token).Err(); err != redis.Nil {
					t.Fatalf("round %d: Redisson lock: %v", round, err)
				}
			} else if err := p.SetNX(ctx, key, token, 5*time.Second).Err(); err != nil {
				t.Fatalf("round %d: SET NX: %v", round, err)
			}
			T := fence(p, key, token)
			if T <= last {
				t.Fatalf("round %d (Redisson %v): T %d after an earlier hold's %d", round, redisson, T, last)
			}
			last = T
			if redisson {
				keys := []string{key, "redisson_lock__channel:{" + key + "}", "redisson_unlock_latch:{" + key + "}:" + token}
				if n, err := unlock.Run(ctx, p, keys, "0", 5000, token, "PUBLISH", 1000).Int64(); err != nil || n != 1 {
					t.Fatalf("round %d: Redisson unlock = %d, %v", round, n, err)
				}
				p.Del(ctx, keys[2])
			} else if n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int64(); err != nil || n != 1 {
				t.Fatalf("round %d: release = %d, %v", round, n, err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		for i := range 3 {
			if r := record(i, key); r != "" {
				t.Errorf("master %d keeps the record %q of a released hold", i, r)
			}
		}
	})
}
