package quorum

import (
	"context"
	"time"
)

// runEffectOnNodes runs a wrapped script on every node. Where every node
// called is a pipelined Redis node that runs functions and has answered
// this body's FCALL before (eff.ready), the call's FCALL is encoded once
// and goes out on the pipelined fan-out (fanOutCall: no goroutine per
// node); a node that lost the library or the body's chunk since (a
// restart, a flush, an eviction) gets them, and the call again, once the
// others answered, within a node timeout of its own. Otherwise each node
// runs it as runEffect does, loading what it lacks without waiting for the
// others (a node frozen before its first call costs only itself), and
// a body's very first call waits firstLoadTimeout for them.
func (e *Engine) runEffectOnNodes(ctx context.Context, eff *Effect, call EffectCall, sc *effectScratch) []result[NodeEffect] {
	var mine [8]Batch
	batches := e.batches(mine[:0])
	var c Call[any]
	ok := false
	if batches != nil && e.fcallsEverywhere(eff, batches) {
		c, ok = batches[0].FCall(eff.w, call)
	}
	if !ok {
		timeout := e.cfg.NodeTimeout
		if eff.ready.Load() == 0 {
			timeout = max(timeout, firstLoadTimeout)
		}
		results := fanOutWithin(ctx, e, timeout, e.monitored.Load(), e.cfg.Observer, e.eachEffect(ctx, eff, call))
		for i, r := range results {
			if r.err == nil && i < 64 {
				eff.ready.Or(1 << i)
			}
		}
		return results
	}
	call.FCall = c.Command.Cmd
	raw := fanOutCall(ctx, e, func(Batch) Call[any] { return c }, notPiped)
	results := sc.results[:len(raw)]
	var again []bool
	for i, r := range raw {
		switch v := r.v.(type) {
		case NodeEffect: // run by each
			results[i] = result[NodeEffect]{v: v, err: r.err}
			continue
		case NeedsLibrary:
			eff.ready.And(^(uint64(1) << i))
			if again == nil {
				again = make([]bool, len(raw))
			}
			again[i] = true
			continue
		}
		ne, err := batches[0].EffectOf(eff.w, r.v, r.err, call, call.OutFor(i))
		if err != nil && r.err == nil {
			err = &NodeError{Node: i, Addr: e.nodes[i].Addr(), Err: err}
		}
		results[i] = result[NodeEffect]{v: ne, err: err} // r.err a *NodeError already
	}
	if again != nil {
		// A node timeout of its own, not what is left of the first: a
		// node frozen beside it, not yet marked down, held the fan-out to
		// its deadline, and the node that asked for the library would
		// get no time at all (review30 N2). The validity charges the
		// time, as for any call.
		retried := fanOutWithin(ctx, e, e.cfg.NodeTimeout, false, nil, func(nctx context.Context, i int, n Node) (NodeEffect, error) {
			if !again[i] {
				return NodeEffect{}, nil
			}
			return e.eachEffect(ctx, eff, call)(nctx, i, n)
		})
		for i, r := range retried {
			if again[i] {
				results[i] = r
				if r.err == nil {
					eff.ready.Or(1 << i)
				}
			}
		}
	}
	return results
}

// firstLoadTimeout bounds a body's very first call, when no node has
// answered it yet: each loads the wrapper's library and compiles the
// body's chunk before it runs, 20 to 40ms on an idle machine, more than a
// lock call's 50ms node_timeout on a loaded one (the first EVAL of every
// new body answered NOQUORUM at load 4). The validity charges the time,
// as for any call; later calls wait node_timeout again.
const firstLoadTimeout = 500 * time.Millisecond

// eachEffect runs the call of eff on one node as runEffect does, part
// of a fan-out on parent, with its deadline field (late.go): a run that
// lands after its client was told it failed must not cut what the client
// did next through another proxy (attack18 A6).
func (e *Engine) eachEffect(parent context.Context, eff *Effect, call EffectCall) func(ctx context.Context, i int, n Node) (NodeEffect, error) {
	return func(ctx context.Context, i int, n Node) (NodeEffect, error) {
		return dated(ctx, parent, e, i, func(ctx context.Context, until int64) (NodeEffect, error) {
			c := call
			c.Until = until
			return n.RunEffect(ctx, eff, c, call.OutFor(i))
		})
	}
}

// notPiped is fanOutCall's way for a node without a batch path: none,
// where runEffectOnNodes calls it (each node has one).
func notPiped(context.Context, int, Node) (any, error) { return nil, errUnsupported }

// NeedsLibrary is a node's answer to a batch's FCALL (Batch.FCall) when
// the node lacks the library or the body's chunk: no failure of the node,
// it runs the call again by RunEffect, which loads them.
type NeedsLibrary struct{}

// fcallsEverywhere reports whether every node that is called runs
// functions and has answered eff's FCALL before.
func (e *Engine) fcallsEverywhere(eff *Effect, batches []Batch) bool {
	if len(e.nodes) > 64 {
		return false
	}
	ready, monitored := eff.ready.Load(), e.monitored.Load()
	for i, b := range batches {
		if !b.Functions() {
			return false
		}
		if ready&(1<<i) == 0 && !(monitored && e.health[i].down.Load()) {
			return false
		}
	}
	return true
}
