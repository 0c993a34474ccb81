package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2ReservedKeysInOtherShapes: the proxies' own keys (the
// membership record, the fencing counters and hold records) are not
// readable nor writable in shapes beside the first key: a second key of
// EXISTS or WATCH, a script's second key, a key a script builds from a
// constant, SCAN's MATCH.
func TestAttack2ReservedKeysInOtherShapes(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if err := p.Client.SetNX(ctx, "res2:k", "tok", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Client.Do(ctx, "FENCE", "res2:k", "tok").Result(); err != nil {
		t.Fatalf("FENCE = %v, %v", v, err)
	}
	for _, cmd := range [][]any{
		{"EXISTS", "res2:k", "redlock-proxy:members"},
		{"EVAL", `return redis.call("hgetall", KEYS[2])`, "2", "res2:k", "redlock-proxy:fence"},
		{"EVAL", `return redis.call("get", "redlock-proxy:fence:" .. KEYS[1])`, "1", "res2:k"},
		{"EVAL", `return redis.call("hgetall", "redlock-proxy:members")`, "0"},
		{"EVAL", `return redis.call("get", "redlock-proxy:fence:res2:k")`, "1", "res2:k"},
		{"EVAL", `redis.call("del", "redlock-proxy:fence:" .. KEYS[1]) return 1`, "1", "res2:k"},
	} {
		v, err := p.Client.Do(ctx, cmd...).Result()
		if err == nil {
			t.Errorf("%v = %v; want refused", cmd, fmt.Sprint(v))
		}
	}
	keys, _, err := p.Client.Scan(ctx, 0, "redlock-proxy:*", 1000).Result()
	for _, k := range keys {
		if strings.HasPrefix(k, "redlock-proxy:") {
			t.Errorf("SCAN listed %q (err %v)", k, err)
		}
	}
	if v, err := p.Client.Do(ctx, "FENCE", "res2:k", "tok").Result(); err != nil || fmt.Sprint(v) != "1" {
		t.Errorf("FENCE again = %v, %v; want 1", v, err)
	}
}
