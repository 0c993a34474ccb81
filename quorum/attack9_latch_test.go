package quorum

import "testing"

// attack9 L1 (latch20's design, 4842eaa, not served yet; LIVENESS: a
// latch that never opens). A master restarted empty is seeded with the
// HIGHEST count of the counted masters answering (latchSeed). A master
// that kept an older latch's count (trySetCount finds the key there and
// leaves it, as Redisson's script does) may hold more than the new
// latch's n: the seed then takes that stale count, and after the n
// countDowns a quorum never reads 0. One Redis opens the latch after n.
// The explorer starts only from stale counts of 1 (below n), so it never
// meets this. Three masters, quorum 2:
//
//	old latch trySetCount(5) on A, B, C            [5 5 5]
//	C cut off during its 5 countDowns: open        [0 0 5]
//	new trySetCount(2): A, B set it, C keeps 5     [2 2 5]  granted
//	B restarts empty, seeded with max(A, C) = 5    [2 5 5]
//	the new latch's 2 countDowns reach every master [0 3 3]
//	read: 3 (a quorum above 0), never open
func TestAttack9LatchOpensAfterNCountDownsDespiteAnOldLatchsCount(t *testing.T) {
	const quorum = 3/2 + 1
	counts := []int64{5, 5, 5}
	for range 5 { // C (index 2) misses the old latch's countDowns
		counts[0]--
		counts[1]--
	}
	if c, ok := latchCount(counts, quorum); !ok || c != 0 {
		t.Fatalf("the old latch after its 5 countDowns reads %d, %v; want open", c, ok)
	}
	// trySetCount(2): set where the key is missing (Redisson's EXISTS check).
	for i, c := range counts {
		if c <= 0 {
			counts[i] = 2
		}
	}
	// B (index 1) restarts empty and is seeded from the counted masters
	// answering, A and C (a quorum).
	counts[1] = latchSeed([]int64{counts[0], counts[2]})
	for range 2 { // the new latch's countDowns, one decrement each, on every master
		for i := range counts {
			counts[i]--
			if counts[i] < 0 {
				counts[i] = 0 // DECR of a missing key, then DEL: no key
			}
		}
	}
	if c, ok := latchCount(counts, quorum); !ok || c != 0 {
		t.Errorf("trySetCount(2) and 2 countDowns, with a master seeded from an older latch's count: the latch reads %d (ok %v, masters %v); one Redis reads it open", c, ok, counts)
	}
}

// attack9 L1b: the same leftovers without a restart. Five masters, an
// old latch's countDowns missed by D and E (2 down then: a minority), so
// they keep its 5 for good (a count never expires). A new trySetCount(2)
// sets A, B, C; its 2 countDowns open it [0 0 0 3 3]. Then one master of
// five (C) is down: the read has 2 zeros and 2 counts above 0, no
// decision: NOQUORUM for an open latch with a minority down, for as long
// as D and E keep the old count. One Redis reads it open.
func TestAttack9OpenLatchReadsWithOneOfFiveDown(t *testing.T) {
	c, ok := latchCount([]int64{0, 0, 3, 3}, 5/2+1) // A, B, D, E answering; C down
	if !ok || c != 0 {
		t.Errorf("an opened latch beside an older latch's leftovers, 1 of 5 masters down: read %d, decided %v; want open", c, ok)
	}
}
