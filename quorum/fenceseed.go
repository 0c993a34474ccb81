package quorum

import (
	"context"
	"slices"
	"time"
)

// readCounters is a counter's read round (fence.go). When it finds nodes
// whose counters are not seeded, it marks or seeds them (seedActions) and,
// if that changed any, reads again: twice at most, for a new deployment
// (marked, then seeded).
func (e *Engine) readCounters(ctx context.Context, key, token, field string) []result[CounterEntry] {
	read := func() []result[CounterEntry] {
		return fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (CounterEntry, error) {
			return fencer(n).ReadCounter(ctx, key, token, field)
		})
	}
	reads := read()
	for range 2 {
		if !e.tend(ctx, reads) {
			break
		}
		reads = read()
	}
	return reads
}

// seedAction is what seeding does to a node that is not seeded.
type seedAction int8

const (
	seedNone    seedAction = iota // leave it as it is
	seedMark                      // missing: mark it pending
	seedZero                      // a new deployment: seed it at zero now
	seedFromMax                   // seed it with the counters' maxima
)

// seedActions is the one seeding decision, per node, from a read round:
// entries[i] is node i's answer (ok[i] false if it failed), up[i] whether
// the engine counts it (up, no quarantine), and wait how long a pending
// node waits, on its own clock, after its mark.
//
// A missing node is marked. A pending node that is up and waited is
// seeded from the maxima when a quorum of nodes are seeded. When every
// node answered, fewer than a quorum are seeded and none of those has
// a counter yet (a new deployment), every pending node that is up is
// seeded at zero. Otherwise nothing is done: with fewer than a quorum
// seeded and a counter somewhere, a majority lost its counters, and
// nothing safe can be done.
func seedActions(entries []CounterEntry, ok, up []bool, wait time.Duration, quorum int) []seedAction {
	acts := make([]seedAction, len(entries))
	seeded, answered, virgin := 0, 0, true
	for i, en := range entries {
		if !ok[i] {
			continue
		}
		answered++
		if en.State == CounterSeeded {
			seeded++
			virgin = virgin && en.Virgin
		}
	}
	fresh := answered == len(entries) && seeded < quorum && virgin
	for i, en := range entries {
		switch {
		case !ok[i]:
		case en.State == CounterMissing:
			acts[i] = seedMark
		case en.State != CounterPending || !up[i]:
		case fresh:
			acts[i] = seedZero
		case seeded >= quorum && en.Now-en.Value >= wait.Milliseconds():
			acts[i] = seedFromMax
		}
	}
	return acts
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
			_, err := fencer(n).MarkCounters(ctx)
			return err == nil, err
		case seedZero:
			return fencer(n).SeedCounters(ctx, entries[i].Value, nil)
		case seedFromMax:
			return fencer(n).SeedCounters(ctx, entries[i].Value, fields)
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
		return fencer(n).Counters(ctx)
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
	latchSeedFields(fields, seeded)
	return fields, len(seeded) >= e.quorum
}
