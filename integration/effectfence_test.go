package integration

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestEffectReleaseAndExtendKeepTheFenceRecord: a hold's fencing record
// ends with the hold and lives as long as it when the release or extend
// is a script served by its effect, as with the engine's own. Spring's
// lock (a string) and Redisson's (a hash) reuse their token for the
// next hold: a record left by the release would give that hold the
// earlier hold's fencing token again. An extend past the first TTL keeps
// the hold's token.
func TestEffectReleaseAndExtendKeepTheFenceRecord(t *testing.T) {
	type family struct {
		name                string
		lock, renew, unlock func(t *testing.T, c *redis.Client, ttl time.Duration)
	}
	run := func(body string, args func(ttl time.Duration) []any) func(t *testing.T, c *redis.Client, ttl time.Duration) {
		return func(t *testing.T, c *redis.Client, ttl time.Duration) {
			t.Helper()
			if err := redis.NewScript(body).Run(t.Context(), c, []string{"fenced"}, args(ttl)...).Err(); err != nil && err != redis.Nil {
				t.Fatalf("script: %v", err)
			}
		}
	}
	const token = "client-1:thread-1"
	withTTL := func(ttl time.Duration) []any { return []any{token, ttl.Milliseconds()} }
	ttlFirst := func(ttl time.Duration) []any { return []any{ttl.Milliseconds(), token} }
	for _, f := range []family{
		{"Spring", run(springObtain, withTTL), run(springRenew, withTTL), run(springSpinUnlock, withTTL)},
		{"Redisson", run(redissonLock, ttlFirst), run(redissonRenew, ttlFirst),
			func(t *testing.T, c *redis.Client, _ time.Duration) {
				t.Helper()
				keys := []string{"fenced", "redisson_lock__channel:{fenced}", "redisson_unlock_latch:{fenced}:" + token}
				if err := redis.NewScript(redissonUnlock).Run(t.Context(), c, keys, "0", 10000, token, "PUBLISH", 1000).Err(); err != nil && err != redis.Nil {
					t.Fatalf("unlock: %v", err)
				}
			}},
	} {
		t.Run(f.name, func(t *testing.T) {
			_, p := setup(t, 3, proxy.Config{})
			ctx := t.Context()
			fence := func() int64 {
				t.Helper()
				n, err := p.Client.Do(ctx, "FENCE", "fenced", token).Int64()
				if err != nil {
					t.Fatalf("FENCE: %v", err)
				}
				return n
			}
			f.lock(t, p.Client, time.Second)
			first := fence()
			f.renew(t, p.Client, 10*time.Second)
			time.Sleep(1200 * time.Millisecond) // past the hold's first TTL
			again := fence()
			if again != first {
				t.Errorf("FENCE after the extend = %d; want %d (the same hold)", again, first)
			}
			f.unlock(t, p.Client, 0)
			f.lock(t, p.Client, 10*time.Second)
			if next := fence(); next <= again {
				t.Errorf("FENCE of the next hold by the same token = %d; want above %d", next, again)
			}
		})
	}
}
