package quorum

import (
	"context"
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

// heldTrace is a context that holds its trace itself, as the proxy's
// command context does.
type heldTrace struct {
	context.Context
	tr Trace
}

func (h *heldTrace) Value(key any) any {
	if IsTraceKey(key) {
		return &h.tr
	}
	return h.Context.Value(key)
}

// A context that holds a trace of its own, answering IsTraceKey with it,
// is found by the fan-outs as one made by WithTrace is, through a context
// made from it too; no other key is the trace's.
func TestTraceHeldByItsContext(t *testing.T) {
	h := &heldTrace{Context: context.Background()}
	h.tr.Init(3)
	for _, ctx := range []context.Context{h, context.WithoutCancel(h)} {
		if got := traceOf(ctx); got != &h.tr {
			t.Fatalf("traceOf = %p; want the context's own %p", got, &h.tr)
		}
	}
	if len(h.tr.nodes) != 3 {
		t.Fatalf("Init(3): %d nodes", len(h.tr.nodes))
	}
	if IsTraceKey(struct{}{}) || !IsTraceKey(traceKey{}) {
		t.Fatal("IsTraceKey takes another key for the trace's, or not the trace's")
	}
}

// Each lock operation's answer reads as granted or denied, an acquire's
// (Acquired, since 1ba528d) too: the slow log and MONITOR show it.
func TestAnswerOfEachOperation(t *testing.T) {
	tests := []struct {
		v    any
		err  error
		want Answer
	}{
		{Acquired{Granted: true}, nil, AnswerGranted},
		{Acquired{Granted: true, Before: []Entry{{}}}, nil, AnswerGranted},
		{Acquired{}, nil, AnswerDenied},
		{true, nil, AnswerGranted},
		{false, nil, AnswerDenied},
		{time.Second, nil, AnswerGranted},
		{time.Duration(0), nil, AnswerDenied},
		{[]Found{FoundDeleted}, nil, AnswerGranted},
		{Entry{Present: true}, nil, AnswerGranted},
		{"PONG", nil, AnswerAnswered},
		{nil, ErrNodeDown, AnswerDown},
		{nil, context.DeadlineExceeded, AnswerFailed},
	}
	for _, tt := range tests {
		if got := answerOf(tt.v, tt.err); got != tt.want {
			t.Errorf("answerOf(%#v, %v) = %v; want %v", tt.v, tt.err, got, tt.want)
		}
	}
}
