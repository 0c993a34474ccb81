package quorum

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Effect is a client's script wrapped so that each node runs it with its
// effect on the keys observed and checked (effectlua.go). Build it once
// per script with Wrap; it is safe for concurrent use.
type Effect struct {
	w        *script
	literals []string
	// The wrapper's lines before the body's first, as a script and as a
	// library.
	head, libHead int
}

// Wrap wraps a client's script body. commands is the allow-list: command
// name (lower case) -> 0 (no key), 1 (first argument is a key) or 2
// (every argument is a key). literals are the body's constants that it
// may write as tokens besides its ARGV. The body must be an admitted
// script's Source (script.Admission), never the client's own bytes: the
// nodes read it with Redis's Lua lexer, and only the re-printed text is
// read by it as admission read it; other text could break out of the
// wrapper or reach its locals.
func (e *Engine) Wrap(body string, commands map[string]int, literals []string) *Effect {
	w := wrapBody(body, commands, literals, e.cfg.MaxTTL)
	return &Effect{w: newScript(w.eval).withLibrary(w.fn, w.lib), literals: literals, head: w.evalHead, libHead: w.libHead}
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
	// when a quorum answered).
	Granted bool
	// Reply is the script's own reply, as a node of the deciding side
	// gave it: a granting node's, or a denying node's.
	Reply Value
	// Lease is the lock's validity for a granted EffectHold.
	Lease Lease
	// Took is true for a granted EffectHold that no holding node held
	// before: a new lock, not an extend or a re-entry.
	Took bool
	// Keys and Tokens are what UndoEffect needs to remove a granted hold.
	Keys, Tokens []string
	// landed says, per node, where a hold may have taken a key new: the
	// nodes that took one no own holder held, and those called that
	// failed (a lost reply may hide a write) when no quorum can have held
	// the token before.
	landed []bool
}

// ErrRefused means a node refused a wrapped script: it did something a
// lock owner may not do. Every node rolled it back or had its grant undone.
var ErrRefused = errors.New("quorum: script refused")

// RefusedError carries the reason a node gave.
type RefusedError struct{ Reason string }

func (e *RefusedError) Error() string        { return ErrRefused.Error() + ": " + e.Reason }
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

var errNoEffect = errors.New("node cannot run wrapped scripts")

// RunEffect runs a wrapped script on every node and decides it as a lock
// operation: a hold counts with a quorum and validity left (as Acquire;
// otherwise every hold is undone wherever it may have landed), a release
// counts when a quorum released, and a script that changed no lock is
// answered with the reply a quorum of nodes agrees on. The error matches
// ErrUnavailable when too few nodes answered, ErrRefused when a node
// refused the script, and ErrDenied when a hold ran out of validity. With
// an error, the result's Op is EffectHold when the run tried a hold (then
// undone everywhere), else zero.
func (e *Engine) RunEffect(ctx context.Context, eff *Effect, keys, args []string) (EffectResult, error) {
	start := time.Now()
	call := newEffectCall(keys, args, len(e.nodes))
	results := fanOut(ctx, e, func(ctx context.Context, n Node) (nodeEffect, error) {
		en, ok := n.(effectNode)
		if !ok {
			return nodeEffect{}, errNoEffect
		}
		return en.runEffect(ctx, eff, call, call.outFor(slices.Index(e.nodes, n)))
	})
	elapsed := time.Since(start)
	ops := make([]EffectOp, len(results))
	holds := make([]time.Duration, len(results))
	var refused string
	anyHold, anyRelease := false, false
	for i, r := range results {
		switch {
		case r.err != nil:
		case r.v.refused != "":
			refused = r.v.refused
		default:
			ops[i], holds[i] = classifyEffect(r.v.keys, e.cfg.DriftFactor)
			anyHold = anyHold || ops[i] == EffectHold
			anyRelease = anyRelease || ops[i] == EffectRelease
		}
	}
	res := EffectResult{Keys: uniqueKeys(keys), Tokens: heldTokens(results, ops, args, keys, eff.literals),
		landed: make([]bool, len(results))}
	// An undo removes what a hold took new: a node that held an own
	// holder before (a re-entry, an extend) keeps it, as a failed extend
	// of the catalogue is kept. A node that failed may hold the client's
	// earlier hold, its reply and what it held unknown: it is undone only
	// when so many counted nodes took the key new that no quorum can have
	// held the token before (quorums intersect). Otherwise what it holds
	// lasts until its TTL.
	// took: no node that holds after the run held before, so the hold
	// is a new lock rather than an extend or a re-entry.
	took, takenNew := true, 0
	for i, r := range results {
		switch {
		case r.err != nil || ops[i] != EffectHold:
		case heldBefore(r.v.keys):
			took = false
		case e.counts(i):
			takenNew++
		}
	}
	undoFailed := took && takenNew >= len(results)-e.quorum+1
	for i, r := range results {
		switch {
		case r.err == nil:
			res.landed[i] = ops[i] == EffectHold && !heldBefore(r.v.keys)
		case !errors.Is(r.err, ErrNodeDown):
			res.landed[i] = undoFailed
		}
	}
	undo := func() { e.UndoEffect(ctx, res) }
	fails := failures(results)
	switch {
	case refused != "":
		if anyHold {
			undo()
		}
		return EffectResult{}, &RefusedError{Reason: refused}
	case anyRelease:
		res.Op = EffectRelease
		o, granted, denied := e.effectOutcome(results, ops, EffectRelease, false)
		err := verdict(o, e.quorum, fails)
		e.observe(OpRelease, start, err)
		switch {
		case err == nil:
			res.Granted, res.Reply = true, results[granted].v.reply
		case errors.Is(err, ErrDenied) && denied >= 0:
			res.Reply = results[denied].v.reply
		default:
			return EffectResult{}, err
		}
		return res, nil
	case anyHold:
		res.Op = EffectHold
		o, granted, denied := e.effectOutcome(results, ops, EffectHold, true)
		err := verdict(o, e.quorum, fails)
		set := holds[:0] // filtered in place: holds is not read again
		for i, r := range results {
			if r.err == nil && ops[i] == EffectHold && e.counts(i) {
				set = append(set, holds[i])
			}
		}
		ttl, _ := quorumTTL(set, e.quorum)
		v := validity(ttl, elapsed, e.cfg.DriftFactor)
		if err == nil && v <= 0 && !brokenNoValidity() {
			err = &OutcomeError{Outcome: o, Expired: true, Failures: fails}
		}
		// A granted hold that some node held before is an extend (or a
		// re-entry); a denied one is counted as the acquire it most
		// likely was.
		op := OpAcquire
		if err == nil && !took {
			op = OpExtend
		}
		e.observe(op, start, err)
		if err == nil {
			if obs := e.cfg.Observer; obs != nil {
				obs.LeaseGranted(op, v, ttl)
			}
			res.Granted, res.Reply, res.Took = true, results[granted].v.reply, took
			res.Lease = Lease{Validity: v, Expires: start.Add(ttl - e.Drift(ttl)), Granted: o.Granted, Failures: fails}
			return res, nil
		}
		undo()
		if errors.Is(err, ErrDenied) && denied >= 0 {
			res.Reply = results[denied].v.reply
			return res, nil
		}
		return EffectResult{Op: EffectHold}, err // a hold tried, and undone
	}
	res, err := e.effectRead(results, fails)
	e.observe(OpRead, start, err)
	return res, err
}

// heldBefore reports whether an own holder held any of the keys before
// the run.
func heldBefore(keys []KeyEffect) bool {
	for _, k := range keys {
		if len(k.BeforeOwn) > 0 {
			return true
		}
	}
	return false
}

// effectOutcome counts the nodes that did op, and returns the first of
// them and the first node that answered otherwise (-1 if none).
func (e *Engine) effectOutcome(results []result[nodeEffect], ops []EffectOp, op EffectOp, quarantine bool) (o Outcome, granted, denied int) {
	o = Outcome{Total: len(results)}
	granted, denied = -1, -1
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
		case ops[i] == op && quarantine && !e.counts(i):
			o.Quarantined++
		case ops[i] == op:
			o.Granted++
			if granted < 0 {
				granted = i
			}
		default:
			o.Denied++
			if denied < 0 {
				denied = i
			}
		}
	}
	return o, granted, denied
}

// effectRead answers a script that changed no lock with the reply most
// counted nodes gave, once a quorum of them answered.
func (e *Engine) effectRead(results []result[nodeEffect], fails error) (EffectResult, error) {
	o := Outcome{Total: len(results)}
	best, bestVotes := -1, 0
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
			continue
		case !e.counts(i):
			o.Quarantined++
			continue
		}
		o.Granted++
		votes := 0
		for j := range i + 1 {
			if results[j].err == nil && e.counts(j) && results[j].v.reply.equal(r.v.reply) {
				votes++
			}
		}
		if votes > bestVotes {
			best, bestVotes = i, votes
		}
	}
	if o.Granted < e.quorum {
		return EffectResult{}, &OutcomeError{Outcome: o, Unavailable: true, Failures: fails}
	}
	return EffectResult{Op: EffectRead, Granted: true, Reply: results[best].v.reply}, nil
}

// UndoEffect removes a hold from every node where it may have landed:
// RunEffect calls it when a hold did not count, and the proxy when the
// validity ran out before the reply. As Acquire's undo, it goes past the
// breaker: a node marked down during the run (its third timeout in a
// row) may hold the write. Only nodes down before the run, never called,
// are skipped.
func (e *Engine) UndoEffect(ctx context.Context, res EffectResult) {
	fanOutWithin(context.WithoutCancel(ctx), e, e.cfg.NodeTimeout, false, nil, func(ctx context.Context, n Node) (struct{}, error) {
		i := slices.Index(e.nodes, n)
		if en, ok := n.(effectNode); ok && (res.landed == nil || res.landed[i]) {
			return struct{}{}, en.undoEffect(ctx, res.Keys, res.Tokens)
		}
		return struct{}{}, nil
	})
}

// classifyEffect says what one node's run did: a release when a key its
// own holders held has none left; a hold when a changed key is now held
// by own holders for longer than the drift allowance (a key set to expire
// at once, such as Symfony's PX 1 probe, is no lock); otherwise a read.
// hold is the shortest own hold's time left.
func classifyEffect(keys []KeyEffect, driftFactor float64) (op EffectOp, hold time.Duration) {
	for _, k := range keys {
		if len(k.BeforeOwn) > 0 && len(k.AfterOwn) == 0 {
			return EffectRelease, 0
		}
	}
	for _, k := range keys {
		if k.Changed && len(k.AfterOwn) > 0 && k.Hold > drift(k.Hold, driftFactor) {
			if op != EffectHold || k.Hold < hold {
				hold = k.Hold
			}
			op = EffectHold
		}
	}
	return op, hold
}

// heldTokens are the own holders the holding nodes reported; when none
// did, every value of the call's ARGV and KEYS and every constant, since
// a node that failed may hold any of them.
func heldTokens(results []result[nodeEffect], ops []EffectOp, args, keys, literals []string) []string {
	seen := map[string]bool{}
	var out []string
	for i, r := range results {
		if r.err != nil || ops[i] != EffectHold {
			continue
		}
		for _, k := range r.v.keys {
			for _, t := range k.AfterOwn {
				if !seen[t] {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, l := range [3][]string{args, keys, literals} {
		for _, t := range l {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// uniqueKeys is keys without repeats, in order, as the wrapper reports
// them: keys itself when it has none.
func uniqueKeys(keys []string) []string {
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
