package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 (held on main 4d8835b; a net for ab62f1d, whose key state's
// ttl now marks the fast path's change in place of w, 0 once deleted): a
// run that changes an own lock by the fast path (a take, an extend, a
// delete) and is then refused (it overwrites another token's lock on
// another key) gives the lock back as it was on every master: a take is undone, an extend and a delete are
// restored with the token and the expiry the lock had.
func TestAttack11RefusedRunRestoresWhatTheFastPathChanged(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	refuse := `redis.call('set', KEYS[2], 'constant', 'PX', 5000)`
	for i, tc := range []struct {
		name, pre, body string
	}{
		{"take", "", `redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 9000) ` + refuse},
		{"extend", "own", `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('pexpire', KEYS[1], 9000) end ` + refuse},
		{"delete", "own", `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end ` + refuse},
		{"delete then take", "own", `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) end redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 9000) ` + refuse},
		{"set over own", "own", `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('set', KEYS[1], ARGV[1], 'PX', 9000) end ` + refuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := fmt.Sprintf("attack11:restore:%d", i)
			if err := p.Client.SetNX(ctx, k+":other", "tokB", 5*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if tc.pre == "own" {
				if err := p.Client.SetNX(ctx, k, "tok", 3*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := p.Client.Eval(ctx, tc.body, []string{k, k + ":other"}, "tok").Result()
			if err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("run = %v; want a refusal (it overwrites another token's hold)", err)
			}
			for j, d := range c.direct {
				v, _ := d.Get(ctx, k).Result()
				pttl := d.PTTL(ctx, k).Val()
				switch tc.pre {
				case "":
					if v != "" {
						t.Errorf("master %d keeps the refused run's take: %q (pttl %v)", j, v, pttl)
					}
				default:
					if v != "tok" || pttl > 3*time.Second || pttl < 2*time.Second {
						t.Errorf("master %d after the refused run: %q, pttl %v; want tok with its 3s expiry", j, v, pttl)
					}
				}
				if o, _ := d.Get(ctx, k+":other").Result(); o != "tokB" {
					t.Errorf("master %d: the other token's lock reads %q after the refused run; want tokB", j, o)
				}
			}
		})
	}
}
