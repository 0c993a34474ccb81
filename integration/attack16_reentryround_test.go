package integration

import (
	"testing"
	"time"

	"github.com/bsm/redislock"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack16 R2b: A holds K for 10s and re-obtains it with 2s through P:
// every master takes K again, keeping its 10s, and P was to cut it to
// the 2s asked in one more round once the grant stood (Engine.Settle,
// gone since). P's links hold what P sends 400ms, so that round lands
// after A's re-obtain of K with 20s through Q, which each master keeps
// and Q tells A of. The round then cut K to 2s on every master, and C
// obtained K while Q's 20s grant was valid. One Redis applies each
// obtain whole: the later one's 20s stands.
func TestAttack16ShorterReentrysSecondRoundCutsTheSameTokensLaterGrant(t *testing.T) {
	c := startNodes(t, 3)
	hold := fixedDelay(0)
	pAddrs := make([]string, len(c.addrs))
	for i, a := range c.addrs {
		pAddrs[i] = startRelay(t, a, relayOpts{sendDelay: hold})
	}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:round"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	lock, err := redislock.New(q).Obtain(ctx, key, 10*time.Second, &redislock.Options{Token: tokA})
	if err != nil {
		t.Fatalf("A's obtain through Q: %v", err)
	}
	// The masters load the extend script now, not at P's round (a second
	// trip, past node_timeout through P's links).
	if err := lock.Refresh(ctx, 10*time.Second, nil); err != nil {
		t.Fatalf("A's refresh through Q: %v", err)
	}
	const d = 400 * time.Millisecond // under node_timeout (500ms)
	hold.Store(int64(d))
	sent := time.Now()
	shorter := make(chan error, 1)
	go func() { shorter <- attack16Obtain(ctx, p, []string{key}, tokA, 2*time.Second) }()
	// P's re-obtain lands at d; anything P sends after its grant lands at
	// 2d or later. Q's re-obtain goes in between.
	time.Sleep(d + d/2 - time.Since(sent))
	start := time.Now()
	if err := attack16Obtain(ctx, q, []string{key}, tokA, 20*time.Second); err != nil {
		t.Fatalf("A's 20s re-obtain through Q: %v", err)
	}
	expires := start.Add(20 * time.Second)
	if err := <-shorter; err != nil {
		t.Fatalf("A's 2s re-obtain through P: %v; want granted", err)
	}
	hold.Store(0)
	attack16Dump(t, c, "after both re-obtains", key)
	time.Sleep(2200 * time.Millisecond) // the 2s, where they were set
	err = attack16Obtain(ctx, q, []string{key}, "tokCCCCCCCCCCCCCCCCCCC", 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's 20s re-obtain through Q is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
