//go:build knowndefect

package integration

import "testing"

// Known defect (docs/guarantees.md, "Known defects"; attack19 U1): it
// fails until the fix. attack17 F4 across proxies (a failed refresh
// through P lands late and cuts A's later grant through Q) is closed by
// the lock write's deadline on each master's clock; with drift_factor
// 0.5 (a valid setting) no hold bounds the reading's spread, the write
// goes with no deadline, and F4 is open again across proxies.

// drift_factor 0.5 (config.toml: 0..0.5): every dated write goes with no
// limit. A's grant through Q may be relied on for 10s of its 20s.
func TestAttack19FailedRefreshAtDriftFactorHalfLandsLateThroughAnotherProxy(t *testing.T) {
	cfg := attack16Config()
	cfg.DriftFactor = 0.5
	attack17FailedRefreshThenObtain(t, false, commandTimeout, cfg)
}
