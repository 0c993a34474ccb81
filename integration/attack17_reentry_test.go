package integration

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack17: a re-entrant acquire (bsm/redislock's obtain with a token of
// its own, ObtainMulti) with a shorter TTL than the key has left keeps
// the longer TTL on each master (the re-entry's shortening round is
// gone). No other client may get the key while any grant it was told of
// runs: the first one's included.

// attack17TokA is A's token, attack17TokC another client's.
const (
	attack17TokA = "tok17AAAAAAAAAAAAAAAAA" // redislock tokens: 22 bytes
	attack17TokC = "tok17CCCCCCCCCCCCCCCCC"
)

// A holds K for 30s; A obtains K again with 2s (granted). Every master
// keeps K for the first grant's 30s, and C, 2.5s later, is denied K.
func TestAttack17ShorterReobtainKeepsTheFirstGrantOnEveryMaster(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key = "attack17:shorter"
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, attack17TokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain (30s): %v", err)
	}
	expires := start.Add(30 * time.Second)
	if err := attack16Obtain(ctx, p, []string{key}, attack17TokA, 2*time.Second); err != nil {
		t.Fatalf("A's re-obtain (2s): %v", err)
	}
	for i := range c.direct {
		if pttl := c.direct[i].PTTL(ctx, key).Val(); pttl < 25*time.Second {
			t.Errorf("master %d PTTL %s after the 2s re-obtain = %v; want the first grant's (about 30s)", i, key, pttl)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	err := attack16Obtain(ctx, p, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's first grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

// ObtainMulti with 2s over k1 (A's for 30s) and k2 (free): k1 keeps 30s
// on every master, k2 gets 2s. 2.5s later C gets k2 (free again) and is
// denied k1.
func TestAttack17ShorterObtainMultiKeepsTheHeldKeyAndGivesTheFreeKeyItsTTL(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const k1, k2 = "attack17:multi1", "attack17:multi2"
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{k1}, attack17TokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain of k1 (30s): %v", err)
	}
	expires := start.Add(30 * time.Second)
	if err := attack16Obtain(ctx, p, []string{k1, k2}, attack17TokA, 2*time.Second); err != nil {
		t.Fatalf("A's ObtainMulti(k1, k2) (2s): %v", err)
	}
	for i := range c.direct {
		if pttl := c.direct[i].PTTL(ctx, k1).Val(); pttl < 25*time.Second {
			t.Errorf("master %d PTTL k1 = %v; want the first grant's (about 30s)", i, pttl)
		}
		if pttl := c.direct[i].PTTL(ctx, k2).Val(); pttl <= 0 || pttl > 2*time.Second {
			t.Errorf("master %d PTTL k2 = %v; want in (0, 2s]", i, pttl)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	if err := attack16Obtain(ctx, p, []string{k2}, attack17TokC, 10*time.Second); err != nil {
		t.Errorf("C's obtain of k2 after its 2s: %v; want granted", err)
	}
	err := attack16Obtain(ctx, p, []string{k1}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", k1)
		t.Errorf("C obtained k1 while A's first grant is valid for %v more", time.Until(expires).Round(time.Millisecond))
	}
}

// attack16 R2b with two proxies and no hook: A obtains K again with 4s
// through P, whose links to every master hold what P sends for 300ms,
// and at once with 20s through Q (fast links), which lands between P's
// re-entry and anything P sends after it. Q told A 20s: C must not get
// K while that runs, whatever P sent last.
func TestAttack17TwoProxiesReobtainsWithDifferentTTLsKeepTheLongerGrant(t *testing.T) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	var pAddrs []string
	for _, a := range c.addrs {
		pAddrs = append(pAddrs, startRelay(t, a, relayOpts{sendDelay: slow}))
	}
	cfg := attack16Config()
	cfg.NodeTimeout = time.Second
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, cfg, pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, cfg, c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack17:twoproxies"
	if err := attack16Obtain(ctx, q, []string{key}, attack17TokA, 10*time.Second); err != nil {
		t.Fatalf("A's first obtain through Q: %v", err)
	}
	slow.Store(int64(300 * time.Millisecond))
	pDone := make(chan error, 1)
	go func() { pDone <- attack16Obtain(ctx, p, []string{key}, attack17TokA, 4*time.Second) }()
	time.Sleep(450 * time.Millisecond) // P's re-entry landed at 300ms; what P sends next lands after 600ms
	start := time.Now()
	if err := attack16Obtain(ctx, q, []string{key}, attack17TokA, 20*time.Second); err != nil {
		t.Fatalf("A's obtain through Q (20s): %v", err)
	}
	expires := start.Add(20 * time.Second)
	if err := <-pDone; err != nil {
		t.Logf("A's obtain through P (4s): %v", err)
	}
	slow.Store(0)
	attack16Dump(t, c, "after both obtains", key)
	time.Sleep(time.Until(start.Add(4500 * time.Millisecond)))
	err := attack16Obtain(ctx, q, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain through Q is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

// A holds K for 30s; master 0 restarts empty; A obtains K again with 2s:
// master 0 takes K fresh (2s), masters 1 and 2 take it again and keep
// 30s. 2.5s later C gets master 0 only, and is denied K.
func TestAttack17ShorterReobtainAfterAMasterRestartedEmpty(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key = "attack17:restarted"
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, attack17TokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain (30s): %v", err)
	}
	expires := start.Add(30 * time.Second)
	c.procs[0] = restartRedis(t, c.procs[0])
	// The proxy's connection to master 0 broke with the restart; the
	// re-obtain may meet that, and is tried again.
	var err error
	for try := 0; try < 5; try++ {
		if err = attack16Obtain(ctx, p, []string{key}, attack17TokA, 2*time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("A's re-obtain (2s) after the restart: %v", err)
	}
	attack16Dump(t, c, "after the re-obtain", key)
	time.Sleep(2500 * time.Millisecond)
	err = attack16Obtain(ctx, p, []string{key}, attack17TokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's first grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
