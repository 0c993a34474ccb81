package integration

import (
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack17 F4, F4b through one proxy: a write the proxy gave up on (its
// reply overdue, its connection dropped) must not land on a master after
// a later command of the same token sent on the next connection: that
// connection has the master kill the dropped one first (quorum's
// pipeline.settle; the engine started, as the proxy's main starts it,
// so a connection learns its ID in the handshake it makes anyway). Both
// failed before it: C was granted while A's 20s grant ran. Across two
// proxies the lock write's deadline on the master's clock does it
// (quorum's lateCheck).

// A failed refresh's writes landing late: A holds K for 30s; A refreshes
// it to 2s through P, whose links to masters 1 and 2 hold what P sends
// for 700ms (past node_timeout): only master 0 answers, the refresh
// fails (a failed extend is not undone). A then obtains K again with 20s,
// told OK. P's refresh lands on masters 1 and 2 after that and would cut
// them to 2s; C must not get K while A's 20s run.
//
// Through Q no connection of P's can order P's write after Q's: the
// refresh carries a deadline on each master's clock (P's probes read
// it), and does nothing past it.
func TestAttack17FailedRefreshLandingLateDoesNotCutTheSameTokensLaterGrant(t *testing.T) {
	attack17FailedRefreshThenObtain(t, false, commandTimeout, attack16Config())
}

// As above, A obtaining again through P itself once its links are fast:
// P dials the masters again after the refresh's timeout, and the new
// connections kill the dropped ones before their first command.
func TestAttack17FailedRefreshLandingLateDoesNotCutALaterGrantThroughTheSameProxy(t *testing.T) {
	attack17FailedRefreshThenObtain(t, true, commandTimeout, attack16Config())
}

// attack17FailedRefreshThenObtain runs the scenario above, A's second
// obtain through P if sameProxy, else through Q; P serves with
// command_timeout pTimeout, both proxies with qcfg.
func attack17FailedRefreshThenObtain(t *testing.T, sameProxy bool, pTimeout time.Duration, qcfg quorum.Config) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{sendDelay: slow}), startRelay(t, c.addrs[2], relayOpts{sendDelay: slow})}
	pp, err := startMonitoredWith(t, proxy.Config{CommandTimeout: pTimeout}, qcfg, pAddrs...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	p := pp.Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, c.addrs...).Client
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
	again, via := q, "Q"
	if sameProxy {
		slow.Store(0)                     // P's links are fast again; the refresh is still on its way
		time.Sleep(20 * time.Millisecond) // the overdue connections dropped
		again, via = p, "P"
	}
	start := time.Now()
	if err := attack16Obtain(ctx, again, []string{key}, attack17TokA, 20*time.Second); err != nil {
		t.Fatalf("A's obtain through %s (20s): %v", via, err)
	}
	expires := start.Add(20*time.Second - time.Duration(qcfg.DriftFactor*float64(20*time.Second)))
	time.Sleep(time.Second) // P's refresh lands on masters 1 and 2
	slow.Store(0)
	attack16Dump(t, c, "after P's refresh landed", key)
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	err = attack16Obtain(ctx, q, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain through %s is valid for %v more", key, via, time.Until(expires).Round(time.Millisecond))
	}
}

// F4 by a release: A's release through P fails (masters 1 and 2 time
// out, their links holding sends past node_timeout); A obtains K again with the same
// token through P once its links are fast (P dialed them again) and is
// told OK; the old release then lands on masters 1 and 2 and deletes
// that grant there. C must not get K while A's 20s run.
func TestAttack17FailedReleaseLandingLateDoesNotDeleteALaterGrant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodeTimeout time.Duration
		hold        time.Duration
	}{
		{"node_timeout 500ms, sends held 700ms", 500 * time.Millisecond, 700 * time.Millisecond},
		{"node_timeout 50ms (the default), sends held 200ms (a TCP retransmission)", 50 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { attack17LateRelease(t, tc.nodeTimeout, tc.hold) })
	}
}

func attack17LateRelease(t *testing.T, nodeTimeout, hold time.Duration) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{sendDelay: slow}), startRelay(t, c.addrs[2], relayOpts{sendDelay: slow})}
	cfg := attack16Config()
	cfg.NodeTimeout = nodeTimeout
	p := mustStartMonitored(t, cfg, pAddrs...).Client
	attack16Warm(t, p) // the masters know the release script
	ctx := t.Context()
	const key = "attack17:release"
	lock, err := redislock.New(p).Obtain(ctx, key, 30*time.Second, &redislock.Options{Token: attack17TokA})
	if err != nil {
		t.Fatalf("A's obtain (30s): %v", err)
	}
	slow.Store(int64(hold)) // past node_timeout
	if err := lock.Release(ctx); err == nil {
		t.Fatal("A's release with two links slow: released; want it failed")
	} else {
		t.Logf("A's release: %v", err)
	}
	slow.Store(0)
	// The pipeline drops the connections whose replies are overdue a
	// moment after the release's deadline; the obtain goes on new ones
	// (on an old one it would queue behind the release).
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, attack17TokA, 20*time.Second); err != nil {
		t.Fatalf("A's obtain again (20s): %v", err)
	}
	expires := start.Add(20 * time.Second)
	time.Sleep(hold + 300*time.Millisecond) // the old release lands on masters 1 and 2
	attack16Dump(t, c, "after the old release landed", key)
	err = attack16Obtain(ctx, p, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
