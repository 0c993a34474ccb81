package quorum

import "testing"

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

func TestLatchSeedIsTheHighest(t *testing.T) {
	if got := latchSeed([]int64{0, 3, 1}); got != 3 {
		t.Errorf("latchSeed = %d; want 3", got)
	}
	if got := latchSeed([]int64{0, 0, 0}); got != 0 {
		t.Errorf("latchSeed of no counts = %d; want 0", got)
	}
}
