package quorum

import "testing"

func TestQuorumCount(t *testing.T) {
	tests := []struct {
		counts []int64
		q      int
		want   int64
	}{
		{[]int64{5, 5, 5}, 2, 5},
		{[]int64{3, 9, 5}, 2, 5}, // two nodes reach 5, not 9
		{[]int64{1, 4, 4, 0, 7}, 3, 4},
	}
	for _, tt := range tests {
		if got := quorumCount(append([]int64(nil), tt.counts...), tt.q); got != tt.want {
			t.Errorf("quorumCount(%v, %d) = %d; want %d", tt.counts, tt.q, got, tt.want)
		}
	}
}
