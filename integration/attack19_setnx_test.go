package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack19PlainAcquireOnEveryKindOfKeyAsOneRedis: a plain acquire
// (SET NX, its options in any order) of a key that exists, whatever it
// holds (a Redisson hash lock, a semaphore's zset, a list, the same
// token, another token), answers as one Redis holding the same keys:
// nil, never WRONGTYPE or a NOQUORUM, and leaves the key as it was. The
// holder's repeat of its own SET NX is nil too, and its key stays.
func TestAttack19PlainAcquireOnEveryKindOfKeyAsOneRedis(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	rc := newClient(t, ref.Addr, nil)
	ctx := t.Context()
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000019:1"
	const tok = "attack19-tok"
	lock := redis.NewScript(redissonLock)
	for _, cl := range []*redis.Client{p.Client, rc} {
		if err := lock.Run(ctx, cl, []string{"a19nx:h"}, 30000, owner).Err(); err != redis.Nil {
			t.Fatalf("Redisson lock = %v", err)
		}
		if err := cl.SetNX(ctx, "a19nx:mine", tok, 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		if err := cl.SetNX(ctx, "a19nx:other", "other-tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Keys of other types, which the proxy refuses to write, are put on
	// every master and on the one Redis directly.
	for _, cl := range append(append([]*redis.Client{}, c.direct...), rc) {
		cl.ZAdd(ctx, "a19nx:z", redis.Z{Score: 1, Member: "permit"})
		cl.PExpire(ctx, "a19nx:z", 30*time.Second)
		cl.RPush(ctx, "a19nx:l", "x")
		cl.PExpire(ctx, "a19nx:l", 30*time.Second)
	}
	for _, key := range []string{"a19nx:h", "a19nx:z", "a19nx:l", "a19nx:mine", "a19nx:other"} {
		for _, cmd := range [][]any{
			{"SET", key, tok, "NX", "PX", "10000"},
			{"SET", key, tok, "PX", "10000", "NX"},
			{"set", key, tok, "nx", "ex", "10"},
		} {
			pv, perr := p.Client.Do(ctx, cmd...).Result()
			rv, rerr := rc.Do(ctx, cmd...).Result()
			if fmt.Sprint(pv, errText(perr)) != fmt.Sprint(rv, errText(rerr)) {
				t.Errorf("%v: proxy %v %q, one Redis %v %q", cmd, pv, errText(perr), rv, errText(rerr))
			}
		}
		for _, i := range c.live() {
			typ := c.direct[i].Type(ctx, key).Val()
			want := rc.Type(ctx, key).Val()
			ttl := c.direct[i].PTTL(ctx, key).Val()
			if typ != want || ttl < 20*time.Second {
				t.Errorf("master %d: %s is a %s with PTTL %v; want a %s, its 30s TTL kept", i, key, typ, ttl, want)
			}
		}
	}
	for _, i := range c.live() {
		if v := c.direct[i].Get(ctx, "a19nx:mine").Val(); v != tok {
			t.Errorf("master %d: a19nx:mine = %q after its holder's repeats; want %q", i, v, tok)
		}
	}
}
