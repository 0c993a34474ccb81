package quorum

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Batch is a node's batch path: a fan-out over nodes that all have one
// starts each operation on every node at once from the caller's
// goroutine and waits once, with no goroutine per node. The go-redis
// node's is its pipeline; Node.Batch of a node without one (a test's
// fake) is nil.
type Batch interface {
	// Node is the node whose batch this is. A wrapper that embeds a node
	// inherits its Batch method but not its identity, so the engine sees
	// that the batch would bypass the wrapper's methods.
	Node() Node
	// AcquireCall, ReleaseCall, ExtendCall and FenceRoundCall are the
	// node operations of those names, as a batch runs them. With reveal,
	// a plain acquire's denial says what the key holds (Acquired.Revealed),
	// which every node of the batch must be able to do (Reveals).
	AcquireCall(l Lock, ttl time.Duration, reveal bool) Call[Acquired]
	// Reveals reports whether the node can answer a plain acquire's
	// denial with what the key holds (SET NX GET: Redis 7.0 on).
	Reveals() bool
	ReleaseCall(l Lock) Call[[]Found]
	ExtendCall(l Lock, ttl time.Duration, mode ExtendMode, limit time.Duration) Call[time.Duration]
	FenceRoundCall(key, token, field string) Call[CounterEntry]
	// Wrap is the nodes' wrapped form of a client's script body
	// (Engine.Wrap), which the Effect keeps for them. It is pure: any
	// node's batch makes it for all.
	Wrap(body string, literals []string, maxTTL time.Duration) any
	// Functions reports whether the node runs functions (FCALL).
	Functions() bool
	// FCall is a run of the wrapped script w by its function, as a batch
	// runs it (its Result answers NeedsLibrary where a node lacks the
	// library or the body's chunk); false if w has no library form.
	FCall(w any, call EffectCall) (Call[any], bool)
	// EffectOf is a node's answer to FCall's command, read as RunEffect
	// reads its own; out has room for its key effects.
	EffectOf(w any, v any, err error, call EffectCall, out []KeyEffect) (NodeEffect, error)
	// Fan sends c to each node i in idx (batches[i] is node i's batch),
	// ctx's with deadline, and waits until all answered, deadline passed
	// or ctx's caller gave up. It sets replies[i] for each i in idx and
	// reports whether all answered; timed asks for each reply's time.
	// For a dated c, until[i] is node i's deadline field (Engine.writeUntil;
	// nil: none has a limit).
	Fan(ctx context.Context, deadline time.Time, batches []Batch, idx []int, c Command, until []int64, timed bool, replies []Reply) (all bool)
}

// Command is one operation encoded once for every node of a fan-out.
// The node package writes it and reads it; the engine only passes it on.
type Command struct {
	Cmd []byte // the command as it goes out
	// Src, Keys and Args make the script's body form for a node that
	// lacks the script Cmd calls; Src is "" if Cmd calls none.
	Src  string
	Keys []string
	Args []any
	// Dated: the command has a deadline field, which each node's copy
	// gets its own value in (a fan-out's until): its last argument, or
	// the one that Tail bytes of Cmd follow.
	Dated bool
	Tail  int
}

// Call is a node operation as a batch runs it: the same command for
// every node, and how a node's reply becomes its answer.
type Call[T any] struct {
	Command Command
	Result  func(v any, err error) (T, error)
}

// Reply is one node's reply in a batch, as its Call's Result reads it,
// and when it came (zero if it did not, or the batch was not timed).
type Reply struct {
	V   any
	Err error
	At  time.Time
}

// batches returns the batch of every node in buf, or nil if a node has
// none (or is a wrapper of a node that has one).
func (e *Engine) batches(buf []Batch) []Batch {
	for _, n := range e.nodes {
		b := n.Batch()
		if b == nil || b.Node() != n {
			return nil
		}
		buf = append(buf, b)
	}
	return buf
}

// fanOutCall is fanOut of the call that call builds: on nodes that all
// have a batch path, it starts on every node at once from the caller's
// goroutine, which waits once for all; otherwise each node runs each, as
// fanOut runs it. Each node gets the same deadline, breaker, observer and
// trace as under fanOut.
func fanOutCall[T any](ctx context.Context, e *Engine, call func(Batch) Call[T], each func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	return fanOutCallOn(ctx, e, call, nil, each)
}

// fanOutCallOn is fanOutCall on the nodes i where ask[i] (every node if
// ask is nil); the others' results are errNotAsked, noted nowhere.
func fanOutCallOn[T any](ctx context.Context, e *Engine, call func(Batch) Call[T], ask []bool, each func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	sc, _ := fanScratches.Get().(*fanScratch)
	if sc == nil {
		sc = &fanScratch{}
	}
	defer sc.put()
	batches := e.batches(sc.batches[:0])
	sc.batches = batches
	if batches == nil {
		return fanOutOn(ctx, e, e.cfg.NodeTimeout, e.monitored.Load(), e.cfg.Observer, ask, each)
	}
	c := call(batches[0])
	monitored, obs := e.monitored.Load(), e.cfg.Observer
	results := make([]result[T], len(e.nodes))
	tr := traceOf(ctx) // nil unless the proxy traces this command
	start := time.Now()
	// One deadline for every node, as fanOut's.
	deadline := start.Add(e.cfg.NodeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	idx := sc.idx[:0] // the nodes called
	for i, n := range e.nodes {
		if ask != nil && !ask[i] {
			results[i] = result[T]{err: errNotAsked}
			continue
		}
		if monitored && e.health[i].down.Load() {
			results[i] = result[T]{err: skipDown(i, n, obs, tr)}
			continue
		}
		idx = append(idx, i)
	}
	sc.idx = idx
	if len(idx) == 0 {
		return results
	}
	replies := slices.Grow(sc.replies[:0], len(e.nodes))[:len(e.nodes)]
	sc.replies = replies
	timed := obs != nil || tr != nil
	var until []int64
	cut := false // the wait ends early for the hold: fitHold
	if c.Command.Dated {
		until, sc.holds = e.writeUntils(sc.until[:0], sc.holds[:0], deadline)
		room := roomPast(ctx, deadline)
		fit := deadline
		for _, i := range idx {
			if f := fitHold(deadline, sc.holds[i], room); f.Before(fit) {
				fit = f
			}
		}
		if cut = fit.Before(deadline); cut {
			deadline = fit
			until, sc.holds = e.writeUntils(until[:0], sc.holds[:0], deadline)
		}
		sc.until = until
	}
	batches[0].Fan(ctx, deadline, batches, idx, c.Command, until, timed, replies)
	if until != nil {
		// Not answered before every write with no reply is past its
		// deadline on its node (late.go).
		var hold time.Duration
		for _, i := range idx {
			if until[i] > 0 && !answered(replies[i].Err) {
				hold = max(hold, sc.holds[i])
			}
		}
		if hold > 0 {
			holdUntil(deadline.Add(hold))
		}
	}
	for _, i := range idx {
		n := e.nodes[i]
		v, err := c.Result(replies[i].V, replies[i].Err)
		if timed {
			took := time.Since(start) // no reply
			if at := replies[i].At; !at.IsZero() {
				took = at.Sub(start)
			}
			if obs != nil {
				obs.NodeDone(i, n.Addr(), took, err)
			}
			if tr != nil {
				tr.note(i, took, v, err)
			}
		}
		if monitored {
			e.noteResult(ctx, i, start, cutShort(err, cut))
		}
		if err != nil {
			err = &NodeError{Node: i, Addr: n.Addr(), Err: err}
		}
		results[i] = result[T]{v: v, err: err}
	}
	return results
}

// fanScratch is a batch fan-out's slices, kept for the next fan-out:
// they go to Batch.Fan, an interface's method, so they would not stay on
// the caller's stack.
type fanScratch struct {
	batches []Batch
	idx     []int
	replies []Reply
	until   []int64
	holds   []time.Duration
}

var fanScratches sync.Pool

// put clears sc and keeps it for the next fan-out.
func (sc *fanScratch) put() {
	clear(sc.batches[:cap(sc.batches)])
	clear(sc.replies)
	fanScratches.Put(sc)
}
