package integration

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Two proxies over the same masters, one master frozen for part of the
// run: clients race on each key with scripts served by effect (an
// idempotent acquire, and a take-every-free-key of two keys). Every key
// is given to at most one client, and every "held" answer is backed by a
// quorum holding that client's token.
func TestAttackTwoProxiesEffectRace(t *testing.T) {
	skipLong(t)
	c, p1 := setup(t, 5, proxy.Config{})
	p2 := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
	const takeBoth = `local n = 0
for i, k in ipairs(KEYS) do
  if redis.call("SET", k, ARGV[1], "NX", "PX", ARGV[2]) then n = n + 1 end
end
return n`
	ctx := t.Context()
	const rounds, clients = 12, 6
	for round := range rounds {
		if round == rounds/2 {
			c.procs[4].Freeze(t)
			c.killed[4] = true // not read below
		}
		k1, k2 := fmt.Sprintf("race:%d:a", round), fmt.Sprintf("race:%d:b", round)
		var mu sync.Mutex
		winners := map[string][]string{}
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				addr := map[bool]string{true: p1.Addr, false: p2.Addr}[i%2 == 0]
				cl := newClient(t, addr, nil)
				tok := fmt.Sprintf("tok-%d-%d", round, i)
				var won []string
				if i%3 == 0 {
					if n, err := cl.Eval(ctx, takeBoth, []string{k1, k2}, tok, 10000).Int64(); err == nil && n == 2 {
						won = []string{k1, k2}
					} else if err == nil && n == 1 {
						won = []string{"one"} // one of the two: the masters tell which
					}
				} else if v, err := cl.Eval(ctx, idempotentAcquire, []string{k1}, tok, 10000).Int64(); err == nil && v == 1 {
					won = []string{k1}
				}
				mu.Lock()
				defer mu.Unlock()
				for _, k := range won {
					winners[k] = append(winners[k], tok)
				}
			}()
		}
		wg.Wait()
		for _, tok := range winners["one"] {
			n := 0
			for _, k := range []string{k1, k2} {
				if len(c.holding(t, k, tok)) >= 3 {
					winners[k] = append(winners[k], tok)
					n++
				}
			}
			if n != 1 {
				t.Errorf("round %d: %s answered 1 key taken, a quorum holds %d of them", round, tok, n)
			}
		}
		for _, k := range []string{k1, k2} {
			if len(winners[k]) > 1 {
				t.Errorf("round %d: %s given to %v", round, k, winners[k])
			}
			for _, tok := range winners[k] {
				if held := c.holding(t, k, tok); len(held) < 3 {
					t.Errorf("round %d: %s answered held by %s, held on masters %v", round, k, tok, held)
				}
			}
		}
	}
}
