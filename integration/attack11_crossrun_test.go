package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 (held on main b190dd3; a net for the wrapper's state kept
// between runs): runs of one body by different clients, where an earlier
// run saw a key holding its own token, must not let a later run of
// another token take that key as if it had seen it too. B holds the
// lock; B's read run primes the wrapper's per-key state (what the run saw,
// its place among the own tokens, the one-string reply cache); A's write
// run of the same body, with its own token in the same ARGV place, must
// be refused (it would overwrite B's hold), and B must still hold the key
// on every master. Variants: one key, a key beside another, a run of
// more than 64 arguments between, and the take's cached reply.
func TestAttack11WrapperStateDoesNotLeakBetweenRuns(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	const body = `if ARGV[2] == 'r' then return redis.call('get', KEYS[1]) end
if ARGV[2] == 'g' then redis.call('get', KEYS[1]) end
return redis.call('set', KEYS[1], ARGV[1], 'PX', 10000)`
	const take = `return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000)`
	ctx := t.Context()
	eval := func(src string, keys []string, args ...any) (any, error) {
		return p.Client.Eval(ctx, src, keys, args...).Result()
	}
	for i, prime := range []func(k string){
		func(k string) { eval(body, []string{k}, "tokB", "r") },
		func(k string) { eval(body, []string{k, k + ":other"}, "tokB", "r") },
		func(k string) {
			eval(body, []string{k}, "tokB", "r")
			big := []any{"tokB", "r"}
			for j := range 70 {
				big = append(big, j)
			}
			eval(body, []string{k}, big...)
		},
		func(k string) { eval(take, []string{k + ":x"}, "tokB"); eval(body, []string{k}, "tokB", "g") },
	} {
		k := fmt.Sprintf("attack11:leak:%d", i)
		if v, err := eval(take, []string{k}, "tokB"); err != nil || v != "OK" {
			t.Fatalf("B's take = %v, %v", v, err)
		}
		prime(k)
		for _, mode := range []string{"w", "g"} {
			v, err := eval(body, []string{k}, "tokA", mode)
			if err != nil && !strings.Contains(err.Error(), "another token's hold") {
				t.Errorf("variant %d: A's %s run answered %v; want the refusal of a run that overwrites another token's hold", i, mode, err)
			}
			if err == nil {
				t.Errorf("variant %d: A's %s run over B's lock answered %v; want a refusal (it overwrites another token's hold)", i, mode, v)
			}
			if held := c.holding(t, k, "tokB"); len(held) != 3 {
				t.Errorf("variant %d: after A's %s run B holds %s on masters %v, want all 3", i, mode, k, held)
			}
		}
	}
}
