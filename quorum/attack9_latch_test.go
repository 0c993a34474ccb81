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

// attack9 L2 (latch20's design, 4842eaa, not served yet; the latch OPENS
// EARLY). A countDown's decrement that lands late, after the latch it
// counted down opened and a new trySetCount set the same name, counts
// the NEW latch down on that node alone. The explorer starts from one
// granted trySetCount and never sends a new one over an older latch's
// messages in flight. Five masters, quorum 3; each master runs
// Redisson's scripts (trySetCount sets a missing key; countDown DECRs,
// and deletes at 0 or below):
//
//	old latch trySetCount(1): A, B, D, E set it (C down)  [1 - 1 1 1]   granted
//	old countDown: lands on A, B, D, E; its DECR to C is delayed (a slow
//	  link from one proxy); the answers read open: the
//	  client is told it opened the old latch               [0 - 0 0 0]
//	new trySetCount(2) through another proxy, D and E down:
//	  A, B, C set it                                       [2 2 2 - -]   granted (a quorum)
//	the old DECR lands on C                                [2 2 1 - -]
//	D and E back (no key); the new latch's FIRST countDown [1 1 0 0 0]
//	read: a quorum (C, D, E) at 0: open after 1 of 2 countDowns
//
// One Redis: the old countDown opened the old latch, so it came before
// the new trySetCount; after it and one countDown the count is 1.
func TestAttack9LatchDoesNotOpenEarlyOnAnOldLatchsLateDecrement(t *testing.T) {
	const q = 5/2 + 1
	// A, B, C, D, E after the new trySetCount(2) (D and E down: no key) and the
	// old countDown's late DECR on C.
	before := []int64{2, 2, 1, 0, 0}
	after := make([]int64, len(before))
	for i, v := range before {
		after[i] = max(v-1, 0) // the new latch's first countDown, on every master
	}
	if c, ok := latchCount(after, q); ok && c == 0 {
		t.Errorf("a count-2 latch after ONE countDown reads open (masters %v): a quorum at 0, one of them counted down by an older latch's late decrement; one Redis reads 1", after)
	}
}
