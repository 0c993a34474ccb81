package quorum

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// readCounters is a counter's read round (fence.go). When it finds nodes
// whose counters are not seeded, it marks or seeds them (seedActions) and,
// if that changed any, reads again: twice at most, for a new deployment
// (marked, then seeded).
func (e *Engine) readCounters(ctx context.Context, key, token, field string) []result[CounterEntry] {
	return e.tendAndReread(ctx, e.counterRound(ctx, key, token, field), key, token, field)
}

// counterRound is one read of field (and of key's hold of token) on
// every node.
func (e *Engine) counterRound(ctx context.Context, key, token, field string) []result[CounterEntry] {
	return fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (CounterEntry, error) {
		return n.ReadCounter(ctx, key, token, field)
	})
}

// tendAndReread tends after reads and, while that called a node, reads
// again: twice at most.
func (e *Engine) tendAndReread(ctx context.Context, reads []result[CounterEntry], key, token, field string) []result[CounterEntry] {
	for range 2 {
		if !e.tend(ctx, reads) {
			break
		}
		reads = e.counterRound(ctx, key, token, field)
	}
	return reads
}

// tendCounters is the monitor's counter round (tendLoop): once any node
// keeps counters, a node that lost them is marked, and seeded after its
// wait, without waiting for a client's FENCE, INCR or latch call. Without
// it a master that restarted empty while no counter was used stayed
// unmarked, and a second restart, however much later, left fewer than a
// quorum with counters for good (review26). Where no node keeps counters
// it changes nothing.
func (e *Engine) tendCounters(ctx context.Context) {
	// As the monitor's probes: no breaker, so that a background read
	// never takes a node out (a node that keeps no counters, or a slow
	// one, failed it every round: CI's TestClockJump).
	reads := each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (CounterEntry, error) {
		return n.ReadCounter(ctx, "", "", FenceField)
	})
	if slices.ContainsFunc(reads, func(r result[CounterEntry]) bool { return r.err == nil && r.v.State != CounterMissing }) {
		// What it saw also tells FENCE which nodes to ask first.
		e.noteCounters(e.tendAndReread(ctx, reads, "", "", FenceField))
	}
}

// tendLoop runs tendCounters every tendEvery probe intervals until ctx
// ends.
func (e *Engine) tendLoop(ctx context.Context) {
	t := time.NewTicker(tendEvery * e.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tctx, cancel := context.WithTimeout(ctx, e.probeTimeout())
		e.tendCounters(tctx)
		cancel()
	}
}

// tendEvery is how many probe intervals apart the counter rounds are.
const tendEvery = 2

// seedAction is what seeding does to a node that is not seeded.
type seedAction int8

const (
	seedNone    seedAction = iota // leave it as it is
	seedMark                      // missing: mark it pending
	seedZero                      // a new deployment: seed it at zero now
	seedFromMax                   // seed it with the counters' maxima
	seedName                      // a new deployment's node not up: write the gen beside its mark
)

// seedActions is the one seeding decision, per node, from a read round:
// entries[i] is node i's answer (ok[i] false if it failed), up[i] whether
// the engine counts it (up, no quarantine), and wait how long a pending
// node waits, on its own clock, after its mark.
//
// A missing node is marked. A pending node that is up and waited is
// seeded from the maxima when a quorum of nodes are seeded. In a new
// deployment (newDeployment) every pending node that is up is seeded at
// zero at once, and every other one is named: the gen is written beside
// its mark, so that the deployment's start is known there too (attack11
// F3: else, once the nodes seeded lost their counters, no node would
// know it). Otherwise nothing is done: with fewer than a quorum
// seeded, a majority may have lost its counters, and nothing safe can be
// done.
func seedActions(entries []CounterEntry, ok, up []bool, wait time.Duration, quorum int) []seedAction {
	acts := make([]seedAction, len(entries))
	seeded := 0
	for i, en := range entries {
		if ok[i] && en.State == CounterSeeded {
			seeded++
		}
	}
	fresh := newDeployment(entries, ok, wait, quorum)
	for i, en := range entries {
		switch {
		case !ok[i]:
		case en.State == CounterMissing:
			acts[i] = seedMark
		case en.State != CounterPending:
		case fresh && up[i]:
			acts[i] = seedZero
		case fresh && !slices.Contains(strings.Fields(en.Gen), en.ID):
			acts[i] = seedName // once: a gen names it already
		case !up[i]:
		case seeded >= quorum && en.Now-en.Value >= wait.Milliseconds():
			acts[i] = seedFromMax
		}
	}
	return acts
}

// newDeployment reports whether no value can have been returned, nor be
// returned by an operation still running: every node answered and none
// is missing (each is marked first, so that the gen names it: a node
// seeded at zero while others were still missing left those lost, with
// fewer than a quorum seeded, for good: review26), fewer than a quorum
// are seeded, none of those holds a counter, fewer than a
// quorum may have lost one, and those waited since their mark. A value
// is returned only once a quorum of seeded nodes hold a counter; each
// holds it still, or lost it since: it is missing, or pending with an id
// that no seeded node's gen names. A gen names the pending nodes a new
// deployment's seeding saw: such a node has not been seeded since (its
// seeding clears the id, a loss gives it a new one), so it never held a
// counter of this deployment; a gen is on every node its seeding saw
// (seeded, or named where not up). A seeded node without a counter may
// have missed every write (attack10 F2): it proves nothing of the others. A
// node that lost its data may have answered an operation that still
// runs (a seeding cut short, then a restart): as a reseed from the
// maxima, seeding at zero waits for it (the model's negative control
// "a new deployment seeded beside a lost node at once"). With no node
// seeded and no gen anywhere, no seeding began, or every node it reached
// lost its data since, and the two look alike: taken as new at once
// (docs/guarantees.md).
func newDeployment(entries []CounterEntry, ok []bool, wait time.Duration, quorum int) bool {
	named := map[string]bool{}
	seeded := 0
	for i, en := range entries {
		switch {
		case !ok[i]:
			return false
		case en.State == CounterMissing:
			return false // marked first: the wait starts at the mark, and the gen names it
		case en.State == CounterSeeded && !en.Virgin:
			return false
		case en.State == CounterSeeded:
			seeded++
		}
		for _, id := range strings.Fields(en.Gen) {
			named[id] = true
		}
	}
	if seeded == 0 && len(named) == 0 {
		return true
	}
	lost := 0
	for _, en := range entries {
		if en.State == CounterPending && (en.ID == "" || !named[en.ID]) {
			if en.Now-en.Value < wait.Milliseconds() {
				return false
			}
			lost++
		}
	}
	return seeded < quorum && lost < quorum
}

// deploymentGen is the gen a new deployment's seeding writes: the ids of
// the pending nodes of its read round.
func deploymentGen(entries []CounterEntry, ok []bool) string {
	var ids []string
	for i, en := range entries {
		if ok[i] && en.State == CounterPending && en.ID != "" {
			ids = append(ids, en.ID)
		}
	}
	slices.Sort(ids)
	return strings.Join(ids, " ")
}

// tend carries out seedActions for a read round, and reports whether it
// called any node to mark or seed it.
func (e *Engine) tend(ctx context.Context, reads []result[CounterEntry]) bool {
	if !slices.ContainsFunc(reads, func(r result[CounterEntry]) bool { return r.err == nil && r.v.State != CounterSeeded }) {
		return false // the request path's usual case: nothing to do
	}
	entries := make([]CounterEntry, len(reads))
	ok := make([]bool, len(reads))
	up := make([]bool, len(reads))
	for i, r := range reads {
		entries[i], ok[i], up[i] = r.v, r.err == nil, e.counts(i)
	}
	acts := seedActions(entries, ok, up, e.quarantine(), e.quorum)
	if !slices.ContainsFunc(acts, func(a seedAction) bool { return a != seedNone }) {
		return false // a pending node still waiting: nothing to call
	}
	var gen string
	if slices.Contains(acts, seedZero) || slices.Contains(acts, seedName) {
		gen = deploymentGen(entries, ok)
	}
	var fields map[string]int64
	for _, a := range acts {
		if a == seedFromMax {
			var enough bool
			if fields, enough = e.counterMaxima(ctx); !enough {
				return false
			}
			break
		}
	}
	// The same cleanup rules as an acquire's step 5: the caller may have
	// given up, and the seeding must still finish.
	ctx = context.WithoutCancel(ctx)
	fanOut(ctx, e, func(ctx context.Context, i int, n Node) (bool, error) {
		switch acts[i] {
		case seedMark:
			_, err := n.MarkCounters(ctx, strconv.FormatUint(rand.Uint64(), 36))
			return err == nil, err
		case seedZero:
			return n.SeedCounters(ctx, entries[i].Value, gen, nil)
		case seedName:
			return n.NameCounters(ctx, entries[i].Value, gen)
		case seedFromMax:
			return n.SeedCounters(ctx, entries[i].Value, "", fields)
		}
		return false, nil
	})
	// A call that changed nothing may have met a concurrent call's
	// seeding of the same node (its mark taken or its seed done): the
	// state moved either way, so the caller reads again.
	return true
}

// counterMaxima reads every seeded node's counters and returns each
// counter's maximum (a latch's fields: latchSeedFields), and whether a
// quorum of seeded nodes answered.
// It runs after the wait was seen on the pending node, so it sees every
// value an operation that counted the lost node returned.
func (e *Engine) counterMaxima(ctx context.Context) (map[string]int64, bool) {
	dumps := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (map[string]int64, error) {
		return n.Counters(ctx)
	})
	fields := map[string]int64{}
	var seeded []map[string]int64
	for _, d := range dumps {
		if d.err != nil || d.v == nil {
			continue
		}
		seeded = append(seeded, d.v)
		for f, v := range d.v {
			fields[f] = max(fields[f], v)
		}
	}
	latchSeedFields(fields, seeded, e.quorum)
	return fields, len(seeded) >= e.quorum
}
