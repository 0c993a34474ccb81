package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2WrongTypeAsOneRedis: the quorum reads and the
// compare-and-set commands on a key of another type (a Redisson hash
// lock, a semaphore's zset, a string lock) answer as one Redis holding
// the same keys: WRONGTYPE, never nil / 0 / a NOQUORUM.
func TestAttack2WrongTypeAsOneRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	rc := newClient(t, ref.Addr, nil)
	ctx := t.Context()
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000002:1"
	lock := redis.NewScript(redissonLock)
	for _, c := range []*redis.Client{p.Client, rc} {
		if err := lock.Run(ctx, c, []string{"wt2:h"}, 30000, owner).Err(); err != redis.Nil {
			t.Fatalf("Redisson lock = %v", err)
		}
		if err := c.SetNX(ctx, "wt2:s", "tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	cmds := [][]any{
		{"STRLEN", "wt2:h"}, {"GET", "wt2:h"}, {"HGET", "wt2:s", "f"}, {"HGETALL", "wt2:s"}, {"HLEN", "wt2:s"},
		{"ZRANGE", "wt2:s", "0", "-1"}, {"ZCARD", "wt2:s"}, {"ZRANGE", "wt2:h", "0", "-1"},
	}
	for _, cmd := range cmds {
		pv, perr := p.Client.Do(ctx, cmd...).Result()
		rv, rerr := rc.Do(ctx, cmd...).Result()
		if fmt.Sprint(pv, errText(perr)) != fmt.Sprint(rv, errText(rerr)) {
			t.Errorf("%v: proxy %v %q, one Redis %v %q", cmd, pv, errText(perr), rv, errText(rerr))
		}
	}
	// Redis 8.4's compare-and-set commands on a key that holds no
	// string: WRONGTYPE (DELEX with a condition: its own ERR).
	if err := p.Client.Do(ctx, "DELEX", "wt2:h", "IFEQ", owner).Err(); errText(err) != "ERR Key should be of string type if conditions are specified" {
		t.Errorf("DELEX of a hash with IFEQ = %q", errText(err))
	}
	for _, cmd := range [][]any{
		{"DELIFEQ", "wt2:h", owner}, {"DIGEST", "wt2:h"},
		{"SET", "wt2:h", owner, "IFEQ", owner, "PX", "10000"},
	} {
		v, err := p.Client.Do(ctx, cmd...).Result()
		if err == nil || errText(err)[:9] != "WRONGTYPE" {
			t.Errorf("%v = %v, %q; want WRONGTYPE", cmd, v, errText(err))
		}
	}
}
