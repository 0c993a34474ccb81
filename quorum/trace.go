package quorum

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Trace collects what each node did for one client command, over every
// fan-out the command made: for the proxy's slow log and MONITOR. A fan-out
// writes each node's slot from that node's goroutine only; read it once
// the command is done.
type Trace struct {
	nodes []nodeTrace
	own   [5]nodeTrace // nodes, for up to five nodes: one allocation a trace
}

type nodeTrace struct {
	calls  atomic.Int32
	took   atomic.Int64 // nanoseconds, summed over the calls
	answer atomic.Int32 // the last call's Answer
}

// Answer is what a node's last call in a command came to.
type Answer int32

const (
	AnswerNone     Answer = iota // not called
	AnswerGranted                // did it: set, extended, deleted, held the key
	AnswerDenied                 // answered no
	AnswerAnswered               // answered, for an operation with no yes or no
	AnswerFailed                 // did not answer usefully
	AnswerDown                   // skipped: the breaker has it down
)

var answerNames = [...]string{"none", "granted", "denied", "answered", "failed", "down"}

func (a Answer) String() string { return answerNames[a] }

// NodeReport is one node's part in a traced command.
type NodeReport struct {
	Node   int
	Calls  int
	Took   time.Duration
	Answer Answer
}

type traceKey struct{}

// NewTrace returns an empty trace for an engine of nodes nodes.
func NewTrace(nodes int) *Trace {
	t := &Trace{}
	t.Init(nodes)
	return t
}

// Init readies t, a zero Trace held in a value of the caller's (the
// proxy's command context, whose Value answers IsTraceKey with t), for
// a command over nodes nodes: for up to five, no allocation.
func (t *Trace) Init(nodes int) {
	if nodes <= len(t.own) {
		t.nodes = t.own[:nodes]
	} else {
		t.nodes = make([]nodeTrace, nodes)
	}
}

// IsTraceKey reports whether key is what the engine asks a context's
// Value for to find the command's trace: a context that holds a trace of
// its own (Init) answers it with the trace, as WithTrace's does.
func IsTraceKey(key any) bool {
	_, ok := key.(traceKey)
	return ok
}

// WithTrace returns ctx carrying t: the engine's fan-outs under it record
// into t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceOf(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// note records one call of node i.
func (t *Trace) note(i int, took time.Duration, v any, err error) {
	n := &t.nodes[i]
	n.calls.Add(1)
	n.took.Add(int64(took))
	n.answer.Store(int32(answerOf(v, err)))
}

// answerOf classifies a node's answer where its type says yes or no.
func answerOf(v any, err error) Answer {
	switch {
	case err == nil:
	case errors.Is(err, ErrNodeDown):
		return AnswerDown
	default:
		return AnswerFailed
	}
	yes, known := false, true
	switch v := v.(type) {
	case bool:
		yes = v
	case Acquired: // an acquire
		yes = v.Granted
	case time.Duration: // an extend: the TTL it set
		yes = v != 0
	case []Found: // a release
		for _, f := range v {
			yes = yes || f == FoundDeleted
		}
	case Entry:
		yes = v.Present
	default:
		known = false
	}
	switch {
	case !known:
		return AnswerAnswered
	case yes:
		return AnswerGranted
	}
	return AnswerDenied
}

// Nodes returns the nodes the command called, in node order.
func (t *Trace) Nodes() []NodeReport {
	var out []NodeReport
	for i := range t.nodes {
		n := &t.nodes[i]
		if c := n.calls.Load(); c > 0 {
			out = append(out, NodeReport{Node: i, Calls: int(c), Took: time.Duration(n.took.Load()), Answer: Answer(n.answer.Load())})
		}
	}
	return out
}
