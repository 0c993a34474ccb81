package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack6 A6. A SCAN cursor names the node being walked, and the nodes
// walked to the end, by their index in the proxy's nodes list. Two
// proxies over the same masters listed in another order (config.toml
// allows it; the membership records are by address) read each other's
// cursors as other nodes: a client whose SCAN calls go to either proxy
// (a load balancer, a pool) ends its scan with keys a quorum holds
// missing, and no error.
func TestAttack6ScanCursorThroughProxiesWithAnotherNodeOrder(t *testing.T) {
	c := startNodes(t, 3)
	cfg := proxy.Config{CommandTimeout: commandTimeout}
	p1 := startProxy(t, cfg, engineConfig(), c.addrs[0], c.addrs[1], c.addrs[2])
	p2 := startProxy(t, cfg, engineConfig(), c.addrs[2], c.addrs[1], c.addrs[0])
	ctx := t.Context()
	const n = 60
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		if err := p1.Client.SetNX(ctx, k, "t", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.direct[2].Del(ctx, k).Err(); err != nil { // held on masters 0 and 1
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	var cur uint64
	for call := 0; ; call++ {
		cl := []*redis.Client{p1.Client, p2.Client}[call%2]
		keys, next, err := cl.Scan(ctx, cur, "", 5).Result()
		if err != nil {
			t.Fatalf("SCAN %d (call %d): %v", cur, call, err)
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cur = next; cur == 0 || call > 1000 {
			break
		}
	}
	if len(seen) != n {
		t.Errorf("a SCAN through two proxies (nodes listed in another order) found %d of the %d keys a quorum holds, with no error", len(seen), n)
	}
}
