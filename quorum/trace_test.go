package quorum

import (
	"testing"
	"time"
)

// A trace keeps each node's calls, for any number of nodes, and one for
// up to five nodes (one for every command the proxy traces) is one
// allocation.
func TestTraceRecordsEveryNode(t *testing.T) {
	for _, n := range []int{1, 5, 7} {
		tr := NewTrace(n)
		tr.note(0, time.Millisecond, true, nil)
		tr.note(n-1, 2*time.Millisecond, false, nil)
		tr.note(n-1, 3*time.Millisecond, true, nil)
		got := tr.Nodes()
		want := []NodeReport{{Node: 0, Calls: 1, Took: time.Millisecond, Answer: AnswerGranted}}
		if n > 1 {
			want = append(want, NodeReport{Node: n - 1, Calls: 2, Took: 5 * time.Millisecond, Answer: AnswerGranted})
		} else {
			want[0] = NodeReport{Node: 0, Calls: 3, Took: 6 * time.Millisecond, Answer: AnswerGranted}
		}
		if len(got) != len(want) {
			t.Fatalf("%d nodes: Nodes = %+v; want %+v", n, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%d nodes: Nodes = %+v; want %+v", n, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { NewTrace(5) }); a != 1 {
		t.Errorf("NewTrace(5) allocated %v times; want 1", a)
	}
}
