package quorum

import (
	"errors"
	"strings"
	"testing"
)

// TestLatchUnavailableNamesUnseededNodes: a latch round short of seeded
// nodes names them unseeded, as a counter round does (15cd3ba): no lock
// quarantine is involved, and the proxy's NOQUORUM reply would send the
// client to INFO for a quarantine it does not show.
func TestLatchUnavailableNamesUnseededNodes(t *testing.T) {
	res := []result[latchAnswer]{
		{v: latchAnswer{state: CounterSeeded, v: 1}},
		{v: latchAnswer{state: CounterPending}},
		{err: errors.New("down")},
	}
	err := latchUnavailable(res, 1)
	var oe *OutcomeError
	if !errors.As(err, &oe) || oe.Quarantined != 0 || oe.Unseeded != 1 {
		t.Errorf("latchUnavailable = %v; want 1 unseeded, 0 quarantined", err)
	}
	if want := "1 granted, 1 unseeded, 0 denied, 1 failed of 3 nodes"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("latchUnavailable = %v; want it to read %q", err, want)
	}
}
