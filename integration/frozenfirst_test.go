package integration

import (
	"testing"
	"time"
)

// A master frozen before the proxy's first lock call to it (its
// connection still to be dialed) costs that call one node, never the
// others: the dial and its set-up wait out the node timeout beside the
// other nodes' writes, not before them.
func TestMasterFrozenBeforeItsFirstCallCostsOneNode(t *testing.T) {
	c := startNodes(t, 3)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	c.procs[0].Freeze(t)
	defer c.procs[0].Thaw()
	ctx := t.Context()
	for i, key := range []string{"k1", "k2"} {
		start := time.Now()
		if err := p.Client.SetNX(ctx, key, "t", 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("SET NX %d with one master of three frozen: %v; want OK from the other two", i+1, err)
		}
		if took := time.Since(start); took > 3*nodeTimeout {
			t.Errorf("SET NX %d took %v; want at most about the node timeout (%v)", i+1, took, nodeTimeout)
		}
	}
}
