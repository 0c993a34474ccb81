package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack16 R2 (fixed by 9d1de9e): a failed re-entry through P (master 2
// does not answer P, master 1 holds another client's leftover) races a
// successful re-entry of the same token through Q: Q's obtain re-enters
// masters 0 and 2 and tells the client it holds K for 20s. P's undo then "gives back" master 0's
// earlier grant (its old PTTL, 2s) over Q's grant, whose value is the
// same. Once that runs out, and the leftover on master 1 with it,
// another client gets masters 0 and 1 while Q's grant is valid. One
// Redis: both obtains succeed; nothing is shortened.
func TestAttack16FailedReentryUndoShortensTheSameTokensConcurrentGrant(t *testing.T) {
	c := startNodes(t, 3)
	var drop atomic.Bool
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{drop: &drop})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:same"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA" // a redislock token: 22 bytes
	if err := c.direct[1].Set(ctx, key, "leftover-of-another", 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := attack16Obtain(ctx, q, []string{key}, tokA, 2*time.Second); err != nil {
		t.Fatalf("A's first obtain through Q (masters 0 and 2): %v", err)
	}
	drop.Store(true)
	failed := make(chan error, 1)
	go func() { failed <- attack16Obtain(ctx, p, []string{key}, tokA, 20*time.Second) }()
	time.Sleep(150 * time.Millisecond) // P's re-entry is on master 0; P waits for master 2
	start := time.Now()
	if err := attack16Obtain(ctx, q, []string{key}, tokA, 20*time.Second); err != nil {
		t.Fatalf("A's second obtain through Q: %v", err)
	}
	expires := start.Add(20 * time.Second)
	if err := <-failed; err == nil {
		t.Fatal("P's obtain: granted; want no quorum (master 1 another's, master 2 silent)")
	}
	attack16Dump(t, c, "after P's undo", key)
	time.Sleep(3100*time.Millisecond - time.Since(start)) // the leftover and the given-back PTTL run out
	err := attack16Obtain(ctx, q, []string{key}, "tokCCCCCCCCCCCCCCCCCCC", 20*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain through Q is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
