package quorum

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// result is one node's answer to one operation.
type result[T any] struct {
	v   T
	err error // a *NodeError, or nil
}

// fanOut runs op on every node at once, each under its own deadline, and
// returns one result per node, in node order. It returns when every node
// has answered or timed out, so no goroutine outlives the call. A node
// the breaker marked down is not called: its result is ErrNodeDown at
// once, so a dead node costs nothing, while it still counts in N.
//
// op gets each node's index in e.nodes with the node, for per-node state
// (an undo list, a result slot) without looking the node up again.
func fanOut[T any](ctx context.Context, e *Engine, op func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	return fanOutWithin(ctx, e, e.cfg.NodeTimeout, e.monitored.Load(), e.cfg.Observer, op)
}

// each is fanOut for the monitor: under its own timeout, and without the
// breaker (down nodes are called too, and failures do not count).
func each[T any](ctx context.Context, e *Engine, timeout time.Duration, op func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	return fanOutWithin(ctx, e, timeout, false, nil, op)
}

// skipDown notes node i, down (its breaker open), as a call that failed
// at once, and returns its error.
func skipDown(i int, n Node, obs Observer, tr *Trace) error {
	if obs != nil {
		obs.NodeDone(i, n.Addr(), 0, ErrNodeDown)
	}
	if tr != nil {
		tr.note(i, 0, nil, ErrNodeDown)
	}
	return &NodeError{Node: i, Addr: n.Addr(), Err: ErrNodeDown}
}

// fanOutWithin is fanOut under timeout, with the breaker if monitored,
// reporting each node's answer to obs if not nil.
func fanOutWithin[T any](ctx context.Context, e *Engine, timeout time.Duration, monitored bool, obs Observer, op func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	return fanOutOn(ctx, e, timeout, monitored, obs, nil, op)
}

// errNotAsked is the result of a node a fan-out did not call (fanOutOn).
var errNotAsked = errors.New("quorum: node not asked")

// fanOutOn is fanOutWithin on the nodes i where ask[i] (every node if ask
// is nil); the others' results are errNotAsked, noted nowhere.
func fanOutOn[T any](ctx context.Context, e *Engine, timeout time.Duration, monitored bool, obs Observer, ask []bool, op func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	results := make([]result[T], len(e.nodes))
	// One deadline for every node: they all start now, so each still gets
	// the whole timeout, and one timer serves them all.
	nctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := traceOf(ctx) // nil unless the proxy traces this command
	call := func(i int, n Node) {
		start := time.Now()
		v, err := op(nctx, i, n)
		if obs != nil {
			obs.NodeDone(i, n.Addr(), time.Since(start), err)
		}
		if tr != nil {
			tr.note(i, time.Since(start), v, err)
		}
		if monitored {
			e.noteResult(ctx, i, start, err)
		}
		if err != nil {
			err = &NodeError{Node: i, Addr: n.Addr(), Err: err}
		}
		results[i] = result[T]{v: v, err: err}
	}
	var wg sync.WaitGroup
	last := -1 // the node the caller's own goroutine calls
	for i, n := range e.nodes {
		if ask != nil && !ask[i] {
			results[i] = result[T]{err: errNotAsked}
			continue
		}
		if monitored && e.health[i].down.Load() {
			results[i] = result[T]{err: skipDown(i, n, obs, tr)}
			continue
		}
		if j := last; j >= 0 {
			wg.Go(func() { call(j, e.nodes[j]) })
		}
		last = i
	}
	if last >= 0 {
		call(last, e.nodes[last])
	}
	wg.Wait()
	return results
}

// failures returns the failed results' errors, joined; nil if none failed.
func failures[T any](results []result[T]) error {
	failed := func(r result[T]) bool { return r.err != nil && r.err != errNotAsked }
	if !slices.ContainsFunc(results, failed) {
		return nil // no list of errors to make
	}
	errs := make([]error, 0, len(results))
	for _, r := range results {
		if failed(r) {
			errs = append(errs, r.err)
		}
	}
	return gather(errs)
}
