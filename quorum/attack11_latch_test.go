package quorum

import "testing"

// attack11 Z1 in the explorer: a granted trySetCount(2) while an older
// latch's countDown (it read that latch open and counted one down) is in
// its claim round, its claims in flight. They land after the set, which
// made each node's claim slot this latch's to take; the older countDown
// takes them and sends "0" on the channel this latch shares, before any
// countDown of this one (and this latch's own opener then finds the
// older claims: its message is never sent). One Redis: the older
// countDown's DECR read -1 and sent nothing. The explorer's starts give
// nodes an older claim already held (oldClaims), never one in flight.
func TestAttack11LatchOlderClaimInFlightAtTheSet(t *testing.T) {
	for _, cfg := range []latchConfig{
		{name: "3 nodes, no faults", nodes: 3, rule: ruleClaim, noFaults: true, olderClaim: true, maxMade: 2},
		{name: "3 nodes, faults", nodes: 3, rule: ruleClaim, olderClaim: true, maxMade: 2, long: true},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			if (testing.Short() || modelUnderRace) && cfg.long {
				t.Skip("about 1.4 million states: without -short")
			}
			c := cfg.run()
			t.Logf("%d states", c.states)
			if c.violation != "" {
				t.Errorf("%d states: %s", c.states, c.violation)
			}
		})
	}
}
