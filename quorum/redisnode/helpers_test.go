package redisnode

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// redisProc is a redis-server started for one test, with this package's
// node over it (node); Client gives a plain client for setting up and
// checking keys.
type redisProc struct{ *redistest.Server }

// startRedis runs a redis-server with no persistence on a free loopback
// port and stops it when the test ends.
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	return &redisProc{redistest.Start(t)}
}

// node returns the redisNode for p, closed when the test ends.
func (p *redisProc) node(t *testing.T) *redisNode {
	t.Helper()
	n := NewRedisNode(p.Addr, NodeOptions{}).(*redisNode)
	t.Cleanup(func() { n.Close() })
	return n
}

// holds returns a table row's setup that sets key to token on admin's
// node, with ttl (-1: no expiry).
func holds(admin *redis.Client, key, token string, ttl time.Duration) func(*testing.T) {
	return func(t *testing.T) { redistest.SetKey(t, admin, key, token, ttl) }
}

// aList returns a row's setup that makes key a list on admin's node: a
// lock command on it gets an error reply.
func aList(admin *redis.Client, key string) func(*testing.T) {
	return func(t *testing.T) { admin.RPush(t.Context(), key, "x") }
}

// all returns a row's setup that runs each of setups.
func all(setups ...func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		for _, f := range setups {
			f(t)
		}
	}
}

// wantKey is what a key should hold after a call: a value ("" for
// missing) and a PTTL range in milliseconds.
type wantKey struct {
	value    string
	min, max int64
}

func missingKey() wantKey { return wantKey{"", -2, -2} }

func noExpiry(v string) wantKey { return wantKey{v, -1, -1} }

func expiring(v string, ms int64) wantKey { return wantKey{v, ms - 500, ms} }

func checkKeys(t *testing.T, admin *redis.Client, want map[string]wantKey) {
	t.Helper()
	for k, w := range want {
		v, pttl := redistest.KeyState(t, admin, k)
		if v != w.value || pttl < w.min || pttl > w.max {
			t.Errorf("key %s = %q, PTTL %dms; want %q, PTTL in [%d, %d]ms", k, v, pttl, w.value, w.min, w.max)
		}
	}
}

// checkKeysSince is checkKeys with an expiring key's PTTL allowed to have
// run down by the time since begin (when the row started writing keys),
// and by no more: a loaded machine makes that time long, not the check
// loose.
func checkKeysSince(t *testing.T, admin *redis.Client, want map[string]wantKey, begin time.Time) {
	t.Helper()
	for k, w := range want {
		v, pttl := redistest.KeyState(t, admin, k)
		if w.min != w.max {
			w.min = w.max - sinceMillis(begin)
		}
		if v != w.value || pttl < w.min || pttl > w.max {
			t.Errorf("key %s = %q, PTTL %dms; want %q, PTTL in [%d, %d]ms", k, v, pttl, w.value, w.min, w.max)
		}
	}
}

// sinceMillis is the time since begin in whole milliseconds, plus the 2ms
// that Redis's own millisecond clock may round off at each end.
func sinceMillis(begin time.Time) int64 {
	return time.Since(begin).Milliseconds() + 2
}
