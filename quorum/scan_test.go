package quorum

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestScanCursorRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		c    ScanCursor
	}{
		{"start", ScanCursor{}},
		{"mid first node", ScanCursor{At: 12345, RunHash: 5}},
		{"last node, others walked", ScanCursor{Node: 4, Walked: 0b1011, At: 1<<atBits - 1, RunHash: 7}},
		{"nine nodes", ScanCursor{Node: 8, Walked: 0xff}},
		{"a node list hash", ScanCursor{Node: 2, At: 7, List: 0xf}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeCursor(tt.c.Encode(), 9)
			if err != nil || got != tt.c {
				t.Errorf("DecodeCursor(Encode(%+v)) = %+v, %v", tt.c, got, err)
			}
		})
	}
	// Only the start encodes as 0, so a scan in progress never looks over.
	if (ScanCursor{Node: 1}).Encode() == 0 || (ScanCursor{At: 1}).Encode() == 0 {
		t.Error("a cursor in progress encodes as 0")
	}
	for _, v := range []uint64{uint64(5) << 48, uint64(1) << 60, ^uint64(0)} {
		if _, err := DecodeCursor(v, 5); !errors.Is(err, ErrBadCursor) {
			t.Errorf("DecodeCursor(%d, 5 nodes) = %v; want ErrBadCursor", v, err)
		}
	}
}

func TestQuorumScores(t *testing.T) {
	node := func(items ...string) NodeKey { return NodeKey{Type: "zset", Items: items} }
	agreeing := []NodeKey{
		node("a", "10", "b", "5"),
		node("b", "7", "a", "12"),
		node("a", "11", "b", "6"),
	}
	// a: 12, 11, 10 -> two of them reach 11; b: 7, 6, 5 -> 6. By score.
	got := quorumScores(agreeing, 2)
	want := []string{"b", "6", "a", "11"}
	if len(got) != len(want) {
		t.Fatalf("quorumScores = %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("quorumScores = %v; want %v", got, want)
		}
	}
}

// BenchmarkInspectTraced measures what a trace (the proxy's slow log and
// MONITOR) adds to a read over three instant fake nodes:
//
//	go test ./quorum -run '^$' -bench InspectTraced -count 5
func BenchmarkInspectTraced(b *testing.B) {
	fs := []*fakeNode{
		(&fakeNode{addr: "a"}).with("k", "mine", time.Minute),
		(&fakeNode{addr: "b"}).with("k", "mine", time.Minute),
		(&fakeNode{addr: "c"}).with("k", "mine", time.Minute),
	}
	// A long node timeout: a loaded machine must not turn a slow
	// goroutine start into a failed read.
	e := New(Config{NodeTimeout: 5 * time.Second, MaxTTL: time.Hour}, asNodes(fs)...)
	for _, traced := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "traced"}[traced], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ctx := b.Context()
				if traced {
					ctx = WithTrace(ctx, NewTrace(len(fs)))
				}
				if _, err := e.Inspect(ctx, "k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A cursor names nodes by their place in the sorted addresses, and one
// from another node list is refused rather than read as this one's.
func TestScanCursorOfAnotherNodeList(t *testing.T) {
	e := New(Config{}, &fakeNode{addr: "c"}, &fakeNode{addr: "a"}, &fakeNode{addr: "b"})
	order, list := e.scanOrder()
	if !slices.Equal(order, []int{1, 2, 0}) {
		t.Errorf("scanOrder = %v; want the nodes by address, [1 2 0]", order)
	}
	f := New(Config{}, &fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c"})
	if _, other := f.scanOrder(); other != list {
		t.Errorf("list hash %d for a, b, c; %d for c, a, b: want one for the same masters in any order", other, list)
	}
	if _, _, err := e.Scan(t.Context(), ScanCursor{Node: 1, At: 5, List: list ^ 1}, "", 0, ""); !errors.Is(err, ErrBadCursor) {
		t.Errorf("Scan of another list's cursor = %v; want ErrBadCursor", err)
	}
}
