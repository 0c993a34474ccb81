package integration

import (
	"fmt"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Scripts served by effect called as a client library might, with one
// key named twice, a token equal to a key's name, an empty token: each
// answered as one real redis-server answers it, the masters left as it
// is left.
func TestAttackEffectDuplicateKeysAndOddTokens(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ref := direct(t, startRedis(t).Addr)
	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	const takeEvery = `local n = 0
for i, k in ipairs(KEYS) do
  if redis.call("SET", k, ARGV[1], "NX", "PX", ARGV[2]) then n = n + 1 end
end
return n`
	const release = `local n = 0
for i, k in ipairs(KEYS) do
  if redis.call("GET", k) == ARGV[1] then n = n + redis.call("DEL", k) end
end
return n`
	steps := []struct {
		script string
		keys   []string
		args   []any
	}{
		{takeEvery, []string{"dup:a", "dup:a"}, []any{"tok", 10000}},
		{takeEvery, []string{"dup:a", "dup:b", "dup:a"}, []any{"tok2", 10000}},
		{idempotentAcquire, []string{"dup:c"}, []any{"dup:c", 10000}}, // the token is the key's name
		{idempotentAcquire, []string{"dup:c", "dup:c"}, []any{"dup:c", 10000}},
		{idempotentAcquire, []string{"dup:d"}, []any{"", 10000}}, // an empty token
		{idempotentAcquire, []string{"dup:d"}, []any{"", 10000}},
		{release, []string{"dup:a", "dup:a", "dup:b"}, []any{"tok"}},
		{release, []string{"dup:b", "dup:c", "dup:d"}, []any{"tok2"}},
		{release, []string{"dup:c", "dup:c"}, []any{"dup:c"}},
		{release, []string{"dup:d", "dup:d"}, []any{""}},
	}
	for i, s := range steps {
		want, werr := ref.Eval(ctx, s.script, s.keys, s.args...).Result()
		got, gerr := cl.Eval(ctx, s.script, s.keys, s.args...).Result()
		if fmt.Sprint(got, gerr) != fmt.Sprint(want, werr) {
			t.Errorf("step %d %v %v: proxy %v, %v; one Redis %v, %v", i, s.keys, s.args, got, gerr, want, werr)
		}
		for _, k := range []string{"dup:a", "dup:b", "dup:c", "dup:d"} {
			rv, rerr := ref.Get(ctx, k).Result()
			for n := range c.direct {
				v, err := c.direct[n].Get(ctx, k).Result()
				if v != rv || (err == nil) != (rerr == nil) {
					t.Errorf("step %d: node %d %s = %q, %v; one Redis %q, %v", i, n, k, v, err, rv, rerr)
				}
			}
		}
	}
}
