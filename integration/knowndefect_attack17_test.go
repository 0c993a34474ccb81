//go:build knowndefect

package integration

import (
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// A known defect (docs/guarantees.md, "Known defects"; attack17 F4): a
// write given up on by one proxy lands after the same token's later
// grant through another proxy, which no connection of the first can
// order. It fails until the fix (a deadline on the master's clock in
// each lock write).

// A failed refresh's writes landing late: A holds K for 30s; A refreshes
// it to 2s through P, whose links to masters 1 and 2 hold what P sends
// for 700ms (past node_timeout): only master 0 answers, the refresh
// fails (a failed extend is not undone). A then obtains K again with 20s
// through Q, told OK. P's refresh lands on masters 1 and 2 after that and
// cuts them to 2s; C must not get K while Q's 20s run.
func TestAttack17FailedRefreshLandingLateDoesNotCutTheSameTokensLaterGrant(t *testing.T) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{sendDelay: slow}), startRelay(t, c.addrs[2], relayOpts{sendDelay: slow})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack17:refresh"
	if err := attack16Obtain(ctx, q, []string{key}, attack17TokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain through Q (30s): %v", err)
	}
	// A's lock as P knows it: the same token, taken again (it keeps 30s).
	lock, err := redislock.New(p).Obtain(ctx, key, 30*time.Second, &redislock.Options{Token: attack17TokA})
	if err != nil {
		t.Fatalf("A's obtain through P: %v", err)
	}
	// The masters know the refresh script (else a late EVALSHA of it
	// meets NOSCRIPT there and does nothing).
	if err := lock.Refresh(ctx, 30*time.Second, nil); err != nil {
		t.Fatalf("A's refresh through P (30s), all links fast: %v", err)
	}
	slow.Store(int64(700 * time.Millisecond)) // past node_timeout (500ms)
	if err := lock.Refresh(ctx, 2*time.Second, nil); err == nil {
		t.Fatal("A's refresh through P with two links slow: refreshed; want it failed")
	} else {
		t.Logf("A's refresh through P: %v", err)
	}
	attack16Dump(t, c, "after P's refresh failed", key)
	start := time.Now()
	if err := attack16Obtain(ctx, q, []string{key}, attack17TokA, 20*time.Second); err != nil {
		t.Fatalf("A's obtain through Q (20s): %v", err)
	}
	expires := start.Add(20 * time.Second)
	time.Sleep(time.Second) // P's refresh lands on masters 1 and 2
	slow.Store(0)
	attack16Dump(t, c, "after P's refresh landed", key)
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	err = attack16Obtain(ctx, q, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain through Q is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
