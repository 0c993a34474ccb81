package integration

import (
	"testing"
	"time"
)

// attack18 A5: a lock write's deadline on a master's clock allows for
// the master's clock running slow by drift_factor since the last probe.
// With a long probe_interval or a large drift_factor (both valid), that
// allowance alone outgrows node_timeout a while after each probe, and
// a release landing in time must still work.
func TestAttack18ReleaseWorksLateInALongProbeInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out most of a probe interval")
	}
	for _, tc := range []struct {
		name  string
		drift float64
		wait  time.Duration
	}{
		{"drift_factor 0.01 (the default), 6s after a probe", 0.01, 6 * time.Second},
		{"drift_factor 0.1, 1s after a probe", 0.1, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startNodes(t, 3)
			cfg := attack16Config()
			cfg.NodeTimeout = 50 * time.Millisecond // the default
			cfg.ProbeInterval = 10 * time.Second    // the longest allowed
			cfg.DriftFactor = tc.drift
			p := mustStartMonitored(t, cfg, c.addrs...).Client // Start probes every master once
			time.Sleep(tc.wait)
			ctx := t.Context()
			const key, token = "attack18:longprobe", "attack18-token-A"
			if ok, err := p.SetNX(ctx, key, token, 10*time.Second).Result(); err != nil || !ok {
				t.Fatalf("SET NX: %v, %v; want OK", ok, err)
			}
			if n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int(); err != nil || n != 1 {
				t.Errorf("release %v after the last probe: %v, %v; want 1", tc.wait, n, err)
			}
		})
	}
}
