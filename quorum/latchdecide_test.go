package quorum

import (
	"errors"
	"slices"
	"testing"
)

func TestLatchCount(t *testing.T) {
	for _, tc := range []struct {
		counts []int64
		quorum int
		want   int64
		ok     bool
	}{
		{[]int64{0, 0, 0, 0, 0}, 3, 0, true},
		{[]int64{2, 2, 2, 0, 0}, 3, 2, true},
		{[]int64{3, 2, 1, 0, 0}, 3, 1, true}, // the quorum-th largest
		{[]int64{2, 0, 0, 0}, 3, 0, true},    // a quorum of 4 answers at 0
		{[]int64{2, 2, 0}, 3, 0, false},      // one master that missed the set: no decision
		{[]int64{2, 0, 0}, 3, 0, false},      // the quorum-th largest would read 0
		{[]int64{1, 1, 1}, 3, 1, true},       // exactly a quorum above 0
		{[]int64{-1, 0, 2}, 2, 0, true},      // at or below 0 is open
		{[]int64{5, 0, 0, 4, 0}, 3, 0, true}, // laggards beside a quorum at 0
		{[]int64{5, 0, 1, 4, 0}, 3, 1, true}, // a quorum above 0
		{[]int64{5, 0, 4, 0}, 3, 0, false},   // 2 of 5 down, split
		{[]int64{}, 1, 0, false},
	} {
		got, ok := latchCount(tc.counts, tc.quorum)
		if got != tc.want || ok != tc.ok {
			t.Errorf("latchCount(%v, %d) = %d, %v; want %d, %v", tc.counts, tc.quorum, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLatchClaimWon(t *testing.T) {
	for _, tc := range []struct {
		claims []int64
		id     int64
		want   bool
	}{
		{[]int64{7, 7, 7}, 7, true}, // a quorum of 5, 2 not answering
		{[]int64{7, 7}, 7, false},
		{[]int64{7, 7, 9, 9, 9}, 7, false}, // another holds a quorum
		{[]int64{7, 7, 9, 9, 9}, 9, true},
		{[]int64{7, 7, 9, 9, 4}, 7, true}, // every node answered, no quorum: most, then lowest
		{[]int64{7, 7, 9, 9, 4}, 9, false},
		{[]int64{7, 7, 9, 9}, 7, false},   // one not answering: no tie-break
		{[]int64{7, 9, 4, 8, 6}, 4, true}, // all tie at one: the lowest
		{[]int64{7, 9, 4, 8, 6}, 6, false},
	} {
		n := 5
		if got := latchClaimWon(tc.claims, tc.id, n, Quorum(n)); got != tc.want {
			t.Errorf("latchClaimWon(%v, %d) = %v; want %v", tc.claims, tc.id, got, tc.want)
		}
	}
}

// TestLatchSeed: the highest count, or none when a quorum have none (the
// latch reads open there: attack12 S1).
func TestLatchSeed(t *testing.T) {
	for _, tc := range []struct {
		counts []int64
		quorum int
		want   int64
	}{
		{[]int64{0, 3, 1}, 2, 3},
		{[]int64{0, 0, 0}, 2, 0},
		{[]int64{0, 1, 0}, 2, 0},
		{[]int64{0, 1, 0, 2}, 3, 2},
		{[]int64{0, 1, 0, 0}, 3, 0},
	} {
		if got := latchSeed(tc.counts, tc.quorum); got != tc.want {
			t.Errorf("latchSeed(%v, quorum %d) = %d; want %d", tc.counts, tc.quorum, got, tc.want)
		}
	}
}

// TestLatchSeedCount: a count whose set another source counted down to 0
// (its slot's tag, no count) is a leftover, counted as none (attack12
// S1); a count of another set is kept.
func TestLatchSeedCount(t *testing.T) {
	for _, tc := range []struct {
		counts, nonces, slots []int64
		quorum                int
		want                  int64
		zeros, dropped        []int64
	}{
		// S1: A kept 1 of set 5, B counted 5 down to 0.
		{[]int64{1, 0}, []int64{5, 0}, []int64{5, 5}, 2, 0, []int64{5}, []int64{5}},
		// B's slot is another set's: A's count may be the latch's.
		{[]int64{1, 0}, []int64{5, 0}, []int64{5, 6}, 2, 1, []int64{6}, nil},
		// no slot at all: a node that missed the set proves nothing.
		{[]int64{1, 0}, []int64{5, 0}, []int64{5, 0}, 2, 1, nil, nil},
		// 5 nodes: two leftovers, a third count of another set kept.
		{[]int64{2, 1, 0, 3}, []int64{5, 5, 0, 7}, []int64{5, 5, 5, 7}, 3, 0, []int64{5}, []int64{5}},
		{[]int64{2, 1, 3, 3}, []int64{5, 5, 7, 7}, []int64{5, 5, 7, 7}, 3, 3, nil, nil},
	} {
		got, zeros, dropped := latchSeedCount(tc.counts, tc.nonces, tc.slots, tc.quorum)
		if got != tc.want || !slices.Equal(zeros, tc.zeros) || !slices.Equal(dropped, tc.dropped) {
			t.Errorf("latchSeedCount(%v, %v, %v, %d) = %d, %v, %v; want %d, %v, %v", tc.counts, tc.nonces, tc.slots, tc.quorum, got, zeros, dropped, tc.want, tc.zeros, tc.dropped)
		}
	}
}

// TestLatchSeedFields: a restarted node's latch fields from the seeded
// nodes' dumps: the highest count, a fresh nonce (not the set's, which a
// countDown that read it before the restart still names), no copied
// claim nor vote kept ("p:", "q:"), no memory of forgotten votes ("x:":
// a reseeded node answers a claim of none), nobody's claim (-1) but for a latch that every dump has a count
// and a claim field of (0: to take), and nothing for other counters.
func TestLatchSeedFields(t *testing.T) {
	dumps := []map[string]int64{
		{"l:a": 2, "n:a": 7, "m:a": 0, "l:b": 1, "n:b": 8, "m:b": 0, "m:c": 9, "k:x": 4},
		{"l:a": 1, "n:a": 7, "m:a": 0, "m:b": 5, "l:d": 3, "n:d": 6, "p:d": 4, "q:d": 9, "x:d": 8},
	}
	fields := map[string]int64{}
	for _, d := range dumps {
		for f, v := range d {
			fields[f] = max(fields[f], v)
		}
	}
	latchSeedFields(fields, dumps, 2)
	for f, want := range map[string]int64{"l:a": 2, "l:b": 1, "l:d": 3, "k:x": 4, "m:a": 0, "m:b": -1, "m:c": -1, "m:d": -1, "d:a": -1, "d:b": -1, "d:c": -1, "d:d": -1} {
		if v, ok := fields[f]; !ok || v != want {
			t.Errorf("%s = %d (%v); want %d", f, v, ok, want)
		}
	}
	if v, ok := fields["n:c"]; ok {
		t.Errorf("n:c seeded with %d; want none (no count)", v)
	}
	n := fields["n:a"]
	if n <= 0 || n == 7 || fields["n:b"] != n || fields["n:d"] != n {
		t.Errorf("nonces a %d, b %d, d %d; want one fresh nonce (not the sets' 7, 8, 6)", n, fields["n:b"], fields["n:d"])
	}
	if fields["o:a"] != n || fields["o:b"] != n || fields["o:d"] != n {
		t.Errorf("claim slots a %d, b %d, d %d; want the fresh nonce %d", fields["o:a"], fields["o:b"], fields["o:d"], n)
	}
	if len(fields) != 18 {
		t.Errorf("seeded %v; want the counts, nonces, claims and vote memories (any) of a, b, c, d and k:x", fields)
	}
	none := map[string]int64{"k:x": 4}
	latchSeedFields(none, []map[string]int64{{"k:x": 4}}, 1)
	if len(none) != 1 {
		t.Errorf("seeded %v with no latch; want k:x alone", none)
	}
	// A count a quorum of dumps lack is an open latch's leftover: none.
	open := map[string]int64{"l:s": 1, "n:s": 5, "m:s": 0, "o:s": 5}
	latchSeedFields(open, []map[string]int64{{"l:s": 1, "n:s": 5, "m:s": 0, "o:s": 5}, {"m:s": 3}, {"m:s": 3}}, 2)
	if _, ok := open["l:s"]; ok || open["m:s"] != -1 || open["d:s"] != -1 || len(open) != 2 {
		t.Errorf("seeded %v beside an open latch; want m:s = -1 and d:s = -1 alone", open)
	}
	// attack12 S1: fewer than a quorum have none, but one counted the
	// set down to 0: the other's count is a leftover; the seed keeps the
	// set's tag as the evidence for a later seed, negated (in no ballot).
	s1 := map[string]int64{"l:s": 1, "n:s": 5, "m:s": 9, "o:s": 5}
	latchSeedFields(s1, []map[string]int64{{"l:s": 1, "n:s": 5, "m:s": 0, "o:s": 5}, {"m:s": 9, "o:s": 5}}, 2)
	if _, ok := s1["l:s"]; ok || s1["o:s"] != -5 || s1["m:s"] != -1 || len(s1) != 3 {
		t.Errorf("seeded %v beside a set counted to 0; want o:s = -5, m:s = -1 and d:s = -1 alone", s1)
	}
	// A carried tag is evidence still, for the next seed.
	s2 := map[string]int64{"l:s": 1, "n:s": 5, "m:s": 0, "o:s": 5}
	latchSeedFields(s2, []map[string]int64{{"l:s": 1, "n:s": 5, "m:s": 0, "o:s": 5}, {"m:s": -1, "o:s": -5}}, 2)
	if _, ok := s2["l:s"]; ok || s2["o:s"] != -5 || s2["m:s"] != -1 || len(s2) != 3 {
		t.Errorf("seeded %v beside a carried tag of the set; want o:s = -5, m:s = -1 and d:s = -1 alone", s2)
	}
	// A delete's tombstone (o: -1) stays one, its memory any (the node
	// may have voted for any ballot): no claim creates the slot.
	dead := map[string]int64{"o:t": 0, "d:t": 4}
	latchSeedFields(dead, []map[string]int64{{"o:t": -1, "d:t": 4}, {"o:t": -1, "d:t": 0}}, 2)
	if dead["o:t"] != -1 || dead["m:t"] != -1 || dead["d:t"] != -1 || len(dead) != 3 {
		t.Errorf("seeded %v from two tombstones; want o:t = -1, m:t = -1 and d:t = -1", dead)
	}
}

func TestLatchBallot(t *testing.T) {
	seeded := func(v int64) result[CounterEntry] {
		return result[CounterEntry]{v: CounterEntry{State: CounterSeeded, Value: v}}
	}
	pending := result[CounterEntry]{v: CounterEntry{State: CounterPending, Value: 7}}
	failed := result[CounterEntry]{err: errors.New("down")}
	for _, c := range []struct {
		reads []result[CounterEntry]
		want  int64
	}{
		{[]result[CounterEntry]{seeded(7), seeded(7), seeded(0)}, 7},            // a master that missed the set
		{[]result[CounterEntry]{seeded(7), seeded(8), seeded(0)}, 0},            // no tag on a quorum
		{[]result[CounterEntry]{seeded(7), pending, seeded(0)}, 0},              // a pending master's value is its mark
		{[]result[CounterEntry]{seeded(7), failed, seeded(7)}, 7},               // one down
		{[]result[CounterEntry]{seeded(-1), seeded(-1), seeded(7)}, 0},          // tombstones are no ballot
		{[]result[CounterEntry]{seeded(0), seeded(0), seeded(0), seeded(5)}, 0}, // none read
	} {
		if got := latchBallot(c.reads, len(c.reads)/2+1); got != c.want {
			t.Errorf("latchBallot(%v) = %d; want %d", c.reads, got, c.want)
		}
	}
}
