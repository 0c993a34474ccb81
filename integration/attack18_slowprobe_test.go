package integration

import (
	"testing"
	"time"
)

// attack18 A3: a lock write's deadline on a master's clock (attack17
// F4's fix) must not refuse a write that lands in time. If it is read
// from the last probe's TIME less half that probe's round trip, one
// probe slowed past twice node_timeout (the proxy stalled before it
// read the reply: a loaded host, a GC pause; the probes of every
// master run at once) makes every release fail until the next probe.
//
// Three masters, the default node_timeout (50ms), probes every 2s; the
// reply to the next TIME each master is asked is held 150ms. Then a SET
// NX and its release through P, with every link fast: both must work.
func TestAttack18ReleaseWorksAfterASlowProbe(t *testing.T) {
	c := startNodes(t, 3)
	holds := make([]*attack18HoldFirst, 3)
	var addrs []string
	for i, a := range c.addrs {
		holds[i] = &attack18HoldFirst{}
		addrs = append(addrs, startHoldRelay(t, a, holds[i]))
	}
	cfg := attack16Config()
	cfg.NodeTimeout = 50 * time.Millisecond
	cfg.ProbeInterval = 2 * time.Second
	p := mustStartMonitored(t, cfg, addrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	for _, h := range holds {
		h.resetReplies("\r\ntime\r\n", 1, 150*time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, h := range holds {
		for conns, _ := h.held(); len(conns) == 0; conns, _ = h.held() {
			if time.Now().After(deadline) {
				t.Fatal("no probe asked TIME within 5s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	time.Sleep(300 * time.Millisecond) // the slow TIME answered; the next probe is 1.5s away
	const key, token = "attack18:slowprobe", "attack18-token-A"
	if ok, err := p.SetNX(ctx, key, token, 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX after a slow probe: %v, %v; want OK", ok, err)
	}
	n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int()
	if err != nil || n != 1 {
		t.Errorf("release after a slow probe: %v, %v; want 1", n, err)
	}
}
