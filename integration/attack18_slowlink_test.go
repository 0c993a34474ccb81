package integration

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// attack18: after F4b's fix a connection dropped with a lock operation
// unanswered has the next connection kill it before any command: one
// more round trip before that connection's first operation. On a link
// whose round trip is over a third of node_timeout, the handshake, the
// kill and the operation no longer fit in it where the handshake and the
// operation did, so that first operation is overdue and its connection
// dropped in turn. Locking must still resume after one hiccup (it does,
// in about 2s on main, when a connection gets through).
//
// Three masters, P's links to each holding every chunk each way for
// 100ms (a 200ms round trip), node_timeout 500ms: a fresh proxy locks
// (handshake and SET, 400ms). One SET NX while the links hold 600ms
// each way drops every connection; then, the links at 100ms again,
// locking must resume within 10s.
func TestAttack18LockingResumesAfterOneHiccupOnASlowLink(t *testing.T) {
	p, d := slowLinkProxy(t)
	ctx := t.Context()
	lock := func(key string) error {
		ok, err := p.SetNX(ctx, key, "attack18-slow", 10*time.Second).Result()
		if err == nil && !ok {
			err = fmt.Errorf("denied")
		}
		return err
	}
	// Fresh: within a few tries (the first dial's handshake, a loaded machine).
	var err error
	for try := range 5 {
		if err = lock(fmt.Sprintf("attack18:slow:before:%d", try)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("a fresh proxy over 200ms round trips, node_timeout 500ms: %v", err)
	}
	d.Store(int64(600 * time.Millisecond))
	if err := lock("attack18:slow:hiccup"); err == nil {
		t.Fatal("SET NX over 1.2s round trips: granted; want it failed")
	}
	d.Store(int64(100 * time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	var n int
	for ; time.Now().Before(deadline); n++ {
		if err = lock(fmt.Sprintf("attack18:slow:after:%d", n)); err == nil {
			t.Logf("locking resumed after %d tries", n+1)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("after one hiccup, %d SET NX over 10s all failed, the last: %v", n, err)
}

// slowLinkProxy is a monitored proxy (attack16Config, probes every
// second) over three masters whose links hold every chunk each way for
// d, 100ms to begin with (a 200ms round trip). It skips under -short.
func slowLinkProxy(t *testing.T) (*redis.Client, *atomic.Int64) {
	t.Helper()
	if testing.Short() {
		t.Skip("slow links: seconds")
	}
	c := startNodes(t, 3)
	d := fixedDelay(100 * time.Millisecond)
	var addrs []string
	for _, a := range c.addrs {
		addrs = append(addrs, startRelay(t, a, relayOpts{sendDelay: d, replyDelay: d}))
	}
	cfg := attack16Config()
	cfg.ProbeInterval = time.Second
	return mustStartMonitored(t, cfg, addrs...).Client, d
}
