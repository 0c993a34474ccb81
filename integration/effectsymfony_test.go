package integration

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// symfonySave runs Symfony's save (ARGV: microtime, token, ttl ms) on rdb:
// true when it took or kept the write lock.
func symfonySave(t *testing.T, rdb *redis.Client, body, key, token string, ttl time.Duration) (bool, error) {
	t.Helper()
	now := strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 4, 64)
	v, err := redis.NewScript(body).Run(t.Context(), rdb, []string{key}, now, token, ttl.Milliseconds()).Result()
	if err == redis.Nil {
		return false, nil
	}
	return v == int64(1), err
}

// TestSymfonySaveUndoneLeavesNoMarker: a Symfony save the proxy does not
// grant is undone on the masters that took it, its "__write__" member
// too, which would otherwise deny the key on that master until its TTL
// (one Redis that answered false keeps nothing). Denied: another client
// holds the lock on 2 of 3 masters. Refused: one master holds the key as
// a list. Then, with the other client's lock released and a master down,
// the next save is granted, as one Redis grants it.
func TestSymfonySaveUndoneLeavesNoMarker(t *testing.T) {
	scripts := symfonyScripts(t)
	if scripts == nil {
		t.Skip("php-symfony-lock not installed")
	}
	save, del := scripts[0].body, scripts[3].body
	const key, ttl = "symfony:k", 20 * time.Second
	for _, tt := range []struct {
		name   string
		other  func(t *testing.T, c *cluster) // how the other masters refuse the save
		free   func(t *testing.T, c *cluster)
		undone []int // masters that took the save and must be undone
	}{
		{"denied", func(t *testing.T, c *cluster) {
			for _, i := range []int{1, 2} {
				if ok, err := symfonySave(t, c.direct[i], save, key, "other-token", ttl); !ok || err != nil {
					t.Fatalf("master %d: the other client's save = %v, %v", i, ok, err)
				}
			}
		}, func(t *testing.T, c *cluster) {
			for _, i := range []int{1, 2} {
				if err := redis.NewScript(del).Run(t.Context(), c.direct[i], []string{key}, "other-token").Err(); err != nil && err != redis.Nil {
					t.Fatalf("master %d: the other client's delete: %v", i, err)
				}
			}
		}, []int{0}},
		{"refused", func(t *testing.T, c *cluster) {
			c.direct[2].RPush(t.Context(), key, "x")
		}, func(t *testing.T, c *cluster) {
			c.direct[2].Del(t.Context(), key)
		}, []int{0, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, p := setup(t, 3, proxy.Config{})
			tt.other(t, c)
			ok, err := symfonySave(t, p.Client, save, key, "caller-token", ttl)
			if ok {
				t.Fatalf("save through the proxy = true, %v; want false or an error", err)
			}
			t.Logf("save through the proxy = false, %v", err)
			for _, i := range tt.undone {
				if m := c.direct[i].ZRangeWithScores(t.Context(), key, 0, -1).Val(); len(m) > 0 {
					t.Errorf("master %d keeps %v after the save was undone; want no key", i, m)
				}
			}
			tt.free(t, c)
			c.kill(1)
			if ok, err := symfonySave(t, p.Client, save, key, "caller-token", ttl); !ok || err != nil {
				t.Errorf("save with the lock free and master 1 down = %v, %v; want true", ok, err)
			}
		})
	}
}
