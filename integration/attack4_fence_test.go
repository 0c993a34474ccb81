package integration

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// A new deployment's fencing counters are seeded on first use ("starts
// at zero once every master answers", guarantees.md). Clients that each
// hold a lock of their own and FENCE it at the same time on a fresh
// deployment, every master up and none quarantined, get
// "NOQUORUM 0 granted, 3 quarantined … quarantined grants do not count
// (see INFO)" while INFO shows every master up: an outage-shaped error,
// naming a quarantine that does not exist, for the first FENCEs.
func TestAttack4FirstFencesOnAFreshDeployment(t *testing.T) {
	for round := range 3 {
		_, p := setup(t, 3, proxy.Config{})
		const clients = 16
		conns := make([]*rawConn, clients)
		for i := range conns {
			conns[i] = dialRaw(t, p.Addr)
			if r := conns[i].do("SET", fmt.Sprintf("fresh:%d", i), "tok", "NX", "PX", "10000"); r != "+OK" {
				t.Fatalf("SET NX = %s", r)
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		replies := make([]string, clients)
		for i, rc := range conns {
			wg.Go(func() {
				<-start
				replies[i] = rc.do("FENCE", fmt.Sprintf("fresh:%d", i), "tok")
			})
		}
		close(start)
		wg.Wait()
		for i, r := range replies {
			if r == "" || r[0] != ':' {
				t.Errorf("round %d: first FENCE of fresh:%d (held, every master up) = %s", round, i, r)
			}
		}
	}
}
