package quorum

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
)

// Effect is a client's script wrapped so that each node runs it with its
// effect on the keys observed and checked (effectlua.go). Build it once
// per script with Wrap; it is safe for concurrent use.
type Effect struct {
	// w is the nodes' wrapped form of the body (Batch.Wrap); nil when no
	// node has a batch path (a test's fakes, which run effects of their
	// own).
	w        any
	literals []string
	// ready has bit i set once node i answered this body's FCALL (it has
	// the library and the body's chunk): the call goes out on the
	// pipelined fan-out only when every node called is ready
	// (runEffectOnNodes).
	ready atomic.Uint64
}

// Wrapped is the nodes' wrapped form of the body, as Batch.Wrap made it.
func (ef *Effect) Wrapped() any { return ef.w }

// Wrap wraps a client's script body; the wrapper lets it call what the
// allow-list (internal/lua) allows. literals are the body's constants
// that it may write as tokens besides its ARGV. The body must be an admitted
// script's Source (script.Admission), never the client's own bytes: the
// nodes read it with Redis's Lua lexer, and only the re-printed text is
// read by it as admission read it; other text could break out of the
// wrapper or reach its locals.
func (e *Engine) Wrap(body string, literals []string) *Effect {
	eff := &Effect{literals: literals}
	for _, n := range e.nodes {
		// Wrapping is pure: any node's batch does it for all, a wrapper
		// of a node's too.
		if b := n.Batch(); b != nil {
			eff.w = b.Wrap(body, literals, e.cfg.MaxTTL)
			break
		}
	}
	return eff
}

// EffectOp is what a wrapped script did, as the quorum decided it.
type EffectOp uint8

const (
	// EffectRead changed no lock: a check, or a refusal to take a held key.
	EffectRead EffectOp = iota
	// EffectHold took or extended a lock: own holders now hold a key.
	EffectHold
	// EffectRelease gave up a lock: a key its token held no longer is.
	EffectRelease
)

// EffectResult is a wrapped script's outcome over the quorum.
type EffectResult struct {
	Op EffectOp
	// Granted is true when a quorum did what Op says (for EffectRead:
	// when a quorum answered alike).
	Granted bool
	// Reply is the script's own reply, as a quorum of the nodes that did
	// on every key what was decided gave it.
	Reply Value
	// Lease is the validity of the keys a granted run holds (zero when
	// it holds none): of an EffectHold, and of a key taken beside a
	// release.
	Lease Lease
	// Took is true for a granted EffectHold whose held keys are all new
	// locks: no holding node held one before (not an extend or a
	// re-entry).
	Took bool
	// NewLock is true for a granted run that holds some key no holding
	// node held before: a new lock, beside an extend or a release too.
	NewLock bool
	// Retry is true, beside an error, for a run that may be sent once
	// more: it tried a hold, the nodes split undecided, and it is undone
	// wherever it changed something (a retry changes no node twice).
	Retry bool
	// keys are the call's distinct keys, and landed, per node, what the
	// run may have taken new there: what UndoEffect gives back.
	keys   []string
	landed [][]KeyUndo
}

// ErrRefused means a node refused a wrapped script: it did something a
// lock owner may not do. Every node rolled it back or had its grant undone.
var ErrRefused = errors.New("quorum: script refused")

// RefusedError carries the reason a node gave.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string        { return ErrRefused.Error() + ": " + e.Reason }
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// RunEffect runs a wrapped script on every node and decides it key by
// key (decideEffect): a key is held with a quorum and validity left (as
// Acquire), released when a quorum released it, and the reply is one a
// quorum of the nodes that did what was decided gave. What the run took
// new of a key not decided held is undone where it may have landed. The
// error matches ErrUnavailable when the answers decide nothing,
// ErrRefused when a node refused the script, and ErrDenied when a hold
// ran out of validity. With an error, the result's Op is EffectHold when
// the run tried a hold (then undone), else what it tried.
func (e *Engine) RunEffect(ctx context.Context, eff *Effect, keys, args []string) (EffectResult, error) {
	start := time.Now()
	sc := newEffectScratch(len(e.nodes), len(keys))
	defer sc.free()
	call := EffectCall{Keys: keys, Args: args, Tag: pubid.New(), Out: sc.out}
	results := e.runEffectOnNodes(ctx, eff, call, sc)
	uniq := uniqueKeys(keys)
	counted := sc.counted
	for i := range counted {
		counted[i] = e.counts(i)
	}
	d := decideEffect(effectVotes{results: results, nkeys: len(uniq), counted: counted, quorum: e.quorum,
		elapsed: time.Since(start), nodeTimeout: e.cfg.NodeTimeout, driftFactor: e.cfg.DriftFactor, room: sc.room})
	e.undoKeys(ctx, uniq, d.undo)
	op := OpRead
	switch {
	case d.op == EffectRelease:
		op = OpRelease
	case d.op == EffectHold && d.err == nil && d.granted && !d.took:
		op = OpExtend // an extend or a re-entry
	case d.op == EffectHold:
		op = OpAcquire // a denied hold counts as the acquire it most likely was
	}
	g := decision{err: d.err}
	if d.err == nil && d.granted && d.validity > 0 {
		// Any key held, beside a release too: the proxy checks its
		// validity again before the reply. Only a hold reports a lease.
		g.lease = Lease{Validity: d.validity, Expires: expiry(start, d.ttl, e.cfg.DriftFactor), Start: start, Granted: d.held, Failures: failures(results)}
		if d.op == EffectHold {
			g.ttl = d.ttl
		}
	}
	if !errors.Is(d.err, ErrRefused) { // Is, not As: no pointer to put on the heap per run
		e.report(op, start, g)
	}
	if d.err != nil {
		return EffectResult{Op: d.op, Retry: d.retry}, d.err
	}
	return EffectResult{Op: d.op, Granted: d.granted, Reply: results[d.reply].v.Reply, Lease: g.lease, Took: d.took,
		NewLock: d.newLock, keys: uniq, landed: d.landed}, nil
}

// UndoEffect gives back a granted hold: on each node, each key the run
// took new there, by a compare-and-delete of the holders it took it with
// (nothing it found there before). The proxy calls it when the validity
// ran out before the reply, or a new lock is taken while draining. As
// Acquire's undo, it goes past the breaker: a node marked down during the
// run (its third timeout in a row) may hold the write. Only nodes down
// before the run, never called, are skipped.
func (e *Engine) UndoEffect(ctx context.Context, res EffectResult) {
	e.undoKeys(ctx, res.keys, res.landed)
}

// undoKeys gives back on each node i the keys undo[i] names, each by a
// compare-and-delete of its own holders and of the markers the run added
// beside them: nothing else of the node.
func (e *Engine) undoKeys(ctx context.Context, keys []string, undo [][]KeyUndo) {
	if !slices.ContainsFunc(undo, func(u []KeyUndo) bool { return len(u) > 0 }) {
		return
	}
	parent := context.WithoutCancel(ctx)
	fanOutWithin(parent, e, e.cfg.NodeTimeout, false, nil, func(nctx context.Context, i int, n Node) (struct{}, error) {
		for _, u := range undo[i] {
			_, err := dated(nctx, parent, e, i, func(nctx context.Context, until int64) (struct{}, error) {
				return struct{}{}, n.UndoEffect(nctx, keys[u.Key], u, until)
			})
			if err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
}

// uniqueKeys is keys without repeats, in order, as the wrapper reports
// them: keys itself when it has none.
func uniqueKeys(keys []string) []string {
	if len(keys) < 2 {
		return keys
	}
	seen := make(map[string]bool, len(keys))
	var out []string
	for i, k := range keys {
		switch {
		case !seen[k] && out != nil:
			out = append(out, k)
		case seen[k] && out == nil:
			out = append(make([]string, 0, len(keys)), keys[:i]...)
		}
		seen[k] = true
	}
	if out == nil {
		return keys
	}
	return out
}

// effectScratch is one run's room for what its nodes answered: their key
// effects, answers and whether each counts. None of it outlives the run
// (a result keeps only slices of the call's own keys and args), so it is
// reused: it is most of what a run would allocate and the GC scan.
type effectScratch struct {
	out     []KeyEffect
	results []result[NodeEffect]
	counted []bool
	room    []keyOutcome // the decision's (effectVotes.room)
}

var effectScratches sync.Pool

// maxScratch bounds the key effects of a scratch kept for reuse.
const maxScratch = 256

// newEffectScratch is a scratch for a run over nodes nodes and keys keys.
func newEffectScratch(nodes, keys int) *effectScratch {
	sc, _ := effectScratches.Get().(*effectScratch)
	if sc == nil {
		sc = &effectScratch{}
	}
	if cap(sc.out) < nodes*keys {
		sc.out = make([]KeyEffect, nodes*keys)
	}
	if cap(sc.results) < nodes {
		sc.results, sc.counted = make([]result[NodeEffect], nodes), make([]bool, nodes)
	}
	if cap(sc.room) < (nodes+1)*keys {
		sc.room = make([]keyOutcome, (nodes+1)*keys)
	}
	sc.out, sc.results, sc.counted = sc.out[:nodes*keys], sc.results[:nodes], sc.counted[:nodes]
	return sc
}

// free clears sc (it holds no string or error past its run) and keeps it
// for another run.
func (sc *effectScratch) free() {
	if cap(sc.out) > maxScratch || cap(sc.results) > maxScratch || cap(sc.room) > maxScratch {
		return
	}
	clear(sc.out)
	clear(sc.results)
	effectScratches.Put(sc)
}
