package integration

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Attacks on the wrapper a script served by effect runs in (issue 16):
// no write may reach a master without the wrapper judging it.

// B holds the key on every master. A script that clears the guarded
// redis table's call through a local alias reaches the real redis.call,
// whose writes the wrapper never sees: it overwrites B's lock on every
// master and is answered as a read. A later, innocent script run on the
// same masters must still be guarded.
func TestAttackWrapperGuardCannotBeRemoved(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	for i := range c.direct {
		c.direct[i].Set(ctx, "guard:k", "tokB", 10*time.Second)
	}
	cl := newClient(t, p.Addr, nil)
	for _, body := range []string{
		`local r = redis
r.call = nil
redis.call("SET", KEYS[1], ARGV[1], "PX", 10000)
return 1`,
		`local r = redis
r.pcall = nil
redis.pcall("SET", KEYS[1], ARGV[1], "PX", 10000)
return 1`,
		`local r = redis
setmetatable = nil
r.call = r.pcall
return 1`,
	} {
		v, err := cl.Eval(ctx, body, []string{"guard:k"}, "tokA").Result()
		t.Logf("%q = %v, %v", body, v, err)
		for i := range c.direct {
			if got, _ := c.value(t, i, "guard:k"); got != "tokB" {
				t.Errorf("after %q (answered %v, %v): node %d holds %q; want B's lock untouched", body, v, err, i, got)
			}
		}
	}
	// An innocent script after them: a plain overwrite must be refused.
	steal := `redis.call("SET", KEYS[1], ARGV[1], "PX", 10000) return 1`
	v, err := cl.Eval(ctx, steal, []string{"guard:k"}, "tokC").Result()
	for i := range c.direct {
		if got, _ := c.value(t, i, "guard:k"); got != "tokB" {
			t.Errorf("a plain overwrite after the attacks (answered %v, %v): node %d holds %q; want it refused", v, err, i, got)
		}
	}
}

// The wrapper's own functions read the shared library tables (math.floor
// for the node's clock in ms, string.lower for a command's name). A
// script that replaces one through a local alias makes the wrapper judge
// with the script's function: with math.floor returning a huge number,
// B's sorted-set hold looks expired and may be removed.
func TestAttackWrapperLibraryTablesCannotBePoisoned(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	exp := float64(time.Now().Add(10 * time.Second).UnixMilli())
	for i := range c.direct {
		c.direct[i].ZAdd(ctx, "poison:sem", redis.Z{Score: exp, Member: "tokB"})
		c.direct[i].PExpire(ctx, "poison:sem", 10*time.Second)
	}
	cl := newClient(t, p.Addr, nil)
	for _, body := range []string{
		`local m = math
m.floor = function(x) return 1e15 end
redis.call("ZREM", KEYS[1], "tokB")
return 1`,
		`local s = string
s.lower = function(x) return "get" end
redis.call("Zrem", KEYS[1], "tokB")
return 1`,
		`local s = string
s.lower = function(x) return "get" end
return 1`,
		`redis.call("Zrem", KEYS[1], "tokB")
return 1`,
	} {
		v, err := cl.Eval(ctx, body, []string{"poison:sem"}, "tokA").Result()
		t.Logf("%q = %v, %v", body, v, err)
		for i := range c.direct {
			if n, _ := c.direct[i].ZScore(ctx, "poison:sem", "tokB").Result(); n != exp {
				t.Errorf("after %q (answered %v, %v): node %d: B's member scored %v; want B's hold untouched", body, v, err, i, n)
			}
		}
	}
}
