package integration

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// A hand-off releases the lock the caller holds (k1) and takes the next
// (k2) in one script. With one master frozen the run lasts the node
// timeout, longer than k2's TTL: k2 has no validity left at the reply.
// The proxy must not answer that k2 was taken (another client could take
// it at once): the run is answered as expired and k2 given back.
func TestEffectTakeBesideAReleaseNeedsValidity(t *testing.T) {
	const handOff = `if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("DEL", KEYS[1]) end
if redis.call("SET", KEYS[2], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
return 0`
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	for i := range c.direct {
		c.direct[i].Set(ctx, "handoff:1", "tokA", 10*time.Second)
	}
	c.procs[4].Freeze(t)
	a := newClient(t, p.Addr, nil)
	v, err := a.Eval(ctx, handOff, []string{"handoff:1", "handoff:2"}, "tokA", 300).Result()
	if err == nil || err == redis.Nil {
		t.Fatalf("hand-off with no validity left for the key it took = %v, %v; want an error reply", v, err)
	}
	t.Logf("expired hand-off answered: %v", err)
	for i := range 4 {
		if got, _ := c.direct[i].Get(ctx, "handoff:2").Result(); got != "" {
			t.Errorf("node %d holds handoff:2 = %q after the expired hand-off; want it given back", i, got)
		}
		if got, _ := c.direct[i].Get(ctx, "handoff:1").Result(); got != "" {
			t.Errorf("node %d holds handoff:1 = %q; the release was done and stays done", i, got)
		}
	}
	b := newClient(t, p.Addr, nil)
	if ok, err := b.SetNX(ctx, "handoff:2", "tokB", 10*time.Second).Result(); !ok || err != nil {
		t.Errorf("B's SET NX of handoff:2 after the expired hand-off = %v, %v; want OK", ok, err)
	}
}
