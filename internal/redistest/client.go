package redistest

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client returns a plain client of s for setting up and checking keys,
// closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	tb.Cleanup(func() { c.Close() })
	return c
}

// Flush empties c's server, between table rows.
func Flush(tb testing.TB, c *redis.Client) {
	tb.Helper()
	if err := c.FlushAll(tb.Context()).Err(); err != nil {
		tb.Fatalf("FLUSHALL: %v", err)
	}
}

// SetKey stores key = token with ttl (negative: no expiry).
func SetKey(tb testing.TB, c *redis.Client, key, token string, ttl time.Duration) {
	tb.Helper()
	if ttl < 0 {
		ttl = 0
	}
	if err := c.Set(tb.Context(), key, token, ttl).Err(); err != nil {
		tb.Fatalf("SET %s: %v", key, err)
	}
}

// KeyState is a key's value and PTTL in milliseconds (-2: missing, -1:
// no expiry).
func KeyState(tb testing.TB, c *redis.Client, key string) (string, int64) {
	tb.Helper()
	pttl, err := c.Do(tb.Context(), "pttl", key).Int64()
	if err != nil {
		tb.Fatalf("PTTL %s: %v", key, err)
	}
	if pttl == -2 {
		return "", pttl
	}
	v, err := c.Get(tb.Context(), key).Result()
	if err != nil {
		tb.Fatalf("GET %s: %v", key, err)
	}
	return v, pttl
}
