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
// others answered, within the same node timeout. Otherwise each node runs
// it as runEffect does, loading what it lacks without waiting for the
// others (a node frozen before its first call costs only itself), and
// a body's very first call waits firstLoadTimeout for them.
func (e *Engine) runEffectOnNodes(ctx context.Context, start time.Time, eff *Effect, call EffectCall, sc *effectScratch) []result[NodeEffect] {
	if !e.fcallsEverywhere(eff) {
		timeout := e.cfg.NodeTimeout
		if eff.ready.Load() == 0 {
			timeout = max(timeout, firstLoadTimeout)
		}
		results := fanOutWithin(ctx, e, timeout, e.monitored.Load(), e.cfg.Observer, eachEffect(eff, call))
		for i, r := range results {
			if r.err == nil && i < 64 {
				eff.ready.Or(1 << i)
			}
		}
		return results
	}
	call.FCall = fcallCommand(eff.w, call.Keys, call.Args)
	raw := fanOutCall(ctx, e, func(Batch) Call[any] { return plainCall(call.FCall, fcallAnswer) }, notPiped)
	results := sc.results[:len(raw)]
	var again []bool
	for i, r := range raw {
		switch v := r.v.(type) {
		case NodeEffect: // run by each
			results[i] = result[NodeEffect]{v: v, err: r.err}
			continue
		case needsLibraryMark:
			eff.ready.And(^(uint64(1) << i))
			if again == nil {
				again = make([]bool, len(raw))
			}
			again[i] = true
			continue
		}
		if r.err != nil {
			if msg, ok := compileError(r.err); ok {
				results[i] = result[NodeEffect]{v: NodeEffect{Refused: "it does not compile as Redis's Lua: " + bodyLines(msg, eff.head)}}
				continue
			}
			results[i] = result[NodeEffect]{err: r.err} // a *NodeError already
			continue
		}
		ne, err := effectOf(r.v, nil, 0, call, call.OutFor(i))
		if err != nil {
			err = &NodeError{Node: i, Addr: e.nodes[i].Addr(), Err: err}
		}
		results[i] = result[NodeEffect]{v: ne, err: err}
	}
	if again != nil {
		left := e.cfg.NodeTimeout - time.Since(start)
		retried := fanOutWithin(ctx, e, max(left, time.Nanosecond), false, nil, func(ctx context.Context, i int, n Node) (NodeEffect, error) {
			if !again[i] {
				return NodeEffect{}, nil
			}
			return eachEffect(eff, call)(ctx, i, n)
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

// eachEffect runs the call of eff on one node as runEffect does.
func eachEffect(eff *Effect, call EffectCall) func(ctx context.Context, i int, n Node) (NodeEffect, error) {
	return func(ctx context.Context, i int, n Node) (NodeEffect, error) {
		return n.RunEffect(ctx, eff, call, call.OutFor(i))
	}
}

// notPiped is fanOutCall's way for a node without a pipeline: none, where
// fcallsEverywhere holds (each node is a redisNode).
func notPiped(context.Context, int, Node) (any, error) { return nil, errUnsupported }

// needsLibraryMark is a node's answer to the piped FCALL when the node
// lacks the library or the body's chunk (fcallNeedsLibrary): it is run
// again there by runEffect, which loads them.
type needsLibraryMark struct{}

// fcallAnswer is a piped FCALL's reply as runEffectOnNodes reads it: an
// error that asks for the library is no failure of the node.
func fcallAnswer(v any, err error) (any, error) {
	if fcallNeedsLibrary(err) {
		return needsLibraryMark{}, nil
	}
	return v, err
}

// fcallsEverywhere reports whether every node that is called is a
// pipelined Redis node that runs eff's library form and has answered its
// FCALL before.
func (e *Engine) fcallsEverywhere(eff *Effect) bool {
	s := eff.w
	if s.fn == "" || s.noLib.Load() || len(e.nodes) > 64 {
		return false
	}
	ready, monitored := eff.ready.Load(), e.monitored.Load()
	for i, n := range e.nodes {
		rn, ok := n.(*redisNode)
		if !ok || rn.p.noFunctions.Load() {
			return false
		}
		if ready&(1<<i) == 0 && !(monitored && e.health[i].down.Load()) {
			return false
		}
	}
	return true
}
