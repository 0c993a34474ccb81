package proxy

import "testing"

func TestLatencyBucket(t *testing.T) {
	tests := []struct {
		us   int64
		want int
	}{
		{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {1024, 10}, {1025, 11},
		{1 << 40, histBuckets - 1}, // past the last bound: the last bucket
	}
	for _, tt := range tests {
		if got := bucket(tt.us); got != tt.want {
			t.Errorf("bucket(%d) = %d; want %d", tt.us, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var cs cmdStats
	for range 98 {
		cs.hist[bucket(3)].Add(1) // 4µs bucket
	}
	cs.hist[bucket(100)].Add(1)  // 128µs
	cs.hist[bucket(5000)].Add(1) // 8192µs
	cum := cs.cumulative()
	tests := []struct {
		p    float64
		want float64
	}{{50, 4}, {98, 4}, {99, 128}, {99.9, 8192}, {100, 8192}}
	for _, tt := range tests {
		if got := percentile(cum, tt.p); got != tt.want {
			t.Errorf("percentile(p%v) = %v; want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile([histBuckets]int64{}, 50); got != 0 {
		t.Errorf("percentile of no calls = %v; want 0", got)
	}
}

func TestStatName(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"get", "k"}, "get"},
		{[]string{"client", "SETNAME", "x"}, "client|setname"},
		{[]string{"client", "nope"}, "client"}, // unknown subcommand: the container
		{[]string{"client"}, "client"},
		{[]string{"nosuch", "x"}, "nosuch"},
	}
	for _, tt := range tests {
		args := make([][]byte, len(tt.args))
		for i, a := range tt.args {
			args[i] = []byte(a)
		}
		if got := statName(tt.args[0], args); got != tt.want {
			t.Errorf("statName(%q) = %q; want %q", tt.args, got, tt.want)
		}
	}
}
