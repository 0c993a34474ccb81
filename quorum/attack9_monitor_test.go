package quorum

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// slowProbeNode is a fakeNode whose probes, once slow is set, time out
// (a link too slow for INFO and TIME in one probe timeout), while its
// lock calls are answered.
type slowProbeNode struct {
	*fakeNode
	slow atomic.Bool
}

func (n *slowProbeNode) Probe(ctx context.Context) (Probe, error) {
	if n.slow.Load() {
		<-ctx.Done()
		return Probe{}, ctx.Err()
	}
	return n.fakeNode.Probe(ctx)
}

// attack9 M1 (what a9da024 left of attack7 B1; SECOND HOLDER once the
// master is flushed). A node that counts stops counting once no probe
// passed for probeFailGrace since the last one that did (h.probedOK).
// Only the monitor's background check sets probedOK; Start's probes do
// not. So a link that turns too slow for the probe before the first
// background probe passes (within one probe interval of Start, e.g. a
// proxy started in a congestion) leaves probedOK zero, and the node
// counts for good while lock calls answer in time (they reset the stall
// count): its record is never read again, and a FLUSHALL there is never
// seen. The same link turning slow one probe later takes it out after
// probeFailGrace (the control).
func TestAttack9ProbesFailingSinceStartStopCounting(t *testing.T) {
	for _, c := range []struct {
		name  string
		after time.Duration // from Start to the slow link
	}{
		{"slow after one background probe (control)", 150 * time.Millisecond},
		{"slow before the first background probe", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := threeFakes()
				slow := &slowProbeNode{fakeNode: fs[0]}
				e := New(monitorConfig(t), slow, fs[1], fs[2])
				t.Cleanup(func() { e.Close() })
				if err := e.Start(t.Context()); err != nil {
					t.Fatalf("Start: %v", err)
				}
				time.Sleep(c.after)
				slow.slow.Store(true)
				// Lock traffic answered by every node, one call every
				// 100ms (probeFailGrace here: 1s).
				traffic := func(d time.Duration) {
					for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
						e.Acquire(t.Context(), Lock{Keys: []string{"other"}, Token: "t"}, time.Second)
						e.Release(t.Context(), Lock{Keys: []string{"other"}, Token: "t"})
					}
				}
				traffic(3 * time.Second)
				if st := e.Status()[0]; st.State == StateUp {
					t.Errorf("node 0 = %+v after 3s in which every probe of it timed out; want it not counted (%s)", st, reasonProbesFailing)
				}
				// What it costs: "k" held by another client on nodes 0
				// and 1 only, node 0 flushed (FLUSHALL: keys and record
				// gone), 2s more traffic, then a take of k.
				for _, f := range fs[:2] {
					f.with("k", "first", 10*time.Second)
				}
				fs[0].mu.Lock()
				fs[0].keys, fs[0].members = nil, nil
				fs[0].mu.Unlock()
				traffic(2 * time.Second)
				if _, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "second"}, 5*time.Second); err == nil {
					t.Errorf("a take of k, held by another client on nodes 0 and 1, granted 2s after node 0 was flushed: two holders (node 0 %+v)", e.Status()[0])
				}
			})
		})
	}
}
