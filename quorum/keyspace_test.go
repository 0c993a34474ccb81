package quorum

import "testing"

func TestParseKeyspace(t *testing.T) {
	tests := []struct {
		name, text string
		want       KeyCount
	}{
		{"empty", "# Keyspace\r\n", KeyCount{}},
		{"db0", "# Keyspace\r\ndb0:keys=7,expires=5,avg_ttl=1234\r\n", KeyCount{7, 5}},
		{"other dbs ignored", "# Keyspace\r\ndb1:keys=9,expires=0,avg_ttl=0\r\ndb0:keys=2,expires=2,avg_ttl=0\r\n", KeyCount{2, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseKeyspace(tt.text); got != tt.want {
				t.Errorf("parseKeyspace = %+v; want %+v", got, tt.want)
			}
		})
	}
}

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
