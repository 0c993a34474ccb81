package integration

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2EffectTakeBesideAnExtendNeedsValidity: 251db2d's rule in
// the shapes its test does not run: a take beside an EXTEND of the
// caller's other lock (a string lock, and a Redisson-style hash lock),
// one master frozen so the run outlasts the taken key's 300ms. The
// proxy must not answer that it took the key: B's SET NX right after
// must get it.
func TestAttack2EffectTakeBesideAnExtendNeedsValidity(t *testing.T) {
	bodies := map[string]string{
		"string": `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("PEXPIRE", KEYS[1], 10000) end
if redis.call("SET", KEYS[2], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
return 0`,
		"hash": `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("PEXPIRE", KEYS[1], 10000) end
if redis.call("EXISTS", KEYS[2]) == 0 then redis.call("HINCRBY", KEYS[2], ARGV[1], 1) redis.call("PEXPIRE", KEYS[2], ARGV[2]) return 1 end
return 0`,
	}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			c, p := setup(t, 5, proxy.Config{})
			ctx := t.Context()
			for i := range c.direct {
				c.direct[i].Set(ctx, "ext2:1", "tokA", 10*time.Second)
			}
			c.procs[4].Freeze(t)
			a := newClient(t, p.Addr, nil)
			v, err := a.Eval(ctx, body, []string{"ext2:1", "ext2:2"}, "tokA", 300).Result()
			t.Logf("take beside an extend answered %v, %v", v, err)
			b := newClient(t, p.Addr, nil)
			ok, berr := b.SetNX(ctx, "ext2:2", "tokB", 10*time.Second).Result()
			switch {
			case err == nil && v == int64(1) && ok:
				t.Errorf("A was told it took ext2:2, and B's SET NX right after = OK: two holders")
			case (err != nil || v != int64(1)) && (!ok || berr != nil):
				t.Errorf("A was not told it took ext2:2 (%v, %v), but B's SET NX = %v, %v: not given back", v, err, ok, berr)
			}
		})
	}
}
