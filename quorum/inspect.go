package quorum

import (
	"context"
	"errors"
	"slices"
	"time"
)

// State is a key's state as a quorum of nodes sees it.
type State struct {
	// Held is true when a quorum of nodes hold the key with one token,
	// or (for a hash or sorted-set lock) with one type.
	Held  bool
	Token string
	// Type is the key's type when it is not a string; Token is then empty.
	Type string
	// Validity is how long at least a quorum will still hold it, minus
	// the time the read took and the drift allowance. Negative means the
	// key has no expiry on a quorum.
	Validity time.Duration
}

// Inspect reads key on every node and reports the token a quorum agrees
// on, with a conservative remaining validity. A key that a quorum does
// not hold with one token is not held. The error, if any, matches
// ErrUnavailable: the failed nodes could have changed the answer.
func (e *Engine) Inspect(ctx context.Context, key string) (st State, err error) {
	start := time.Now()
	if e.cfg.Observer != nil {
		defer func() {
			res := err
			if err == nil && !st.Held {
				res = ErrDenied
			}
			e.observe(OpRead, start, res)
		}()
	}
	st, _, err = e.inspect(ctx, key)
	return st, err
}

// inspect is Inspect without the observer. It also reports which nodes
// answered holding the agreed token, one bit each (node i: 1<<i).
func (e *Engine) inspect(ctx context.Context, key string) (State, uint16, error) {
	start := time.Now()
	results := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (Entry, error) {
		return n.Inspect(ctx, key)
	})
	elapsed := time.Since(start)
	// The token most nodes hold is the only one that can have a quorum.
	votes := make(map[entryID]int, len(results))
	var best entryID
	most := 0
	for i, r := range results {
		if r.err == nil && r.v.Present && e.counts(i) {
			id := entryID{r.v.Type, r.v.Token}
			votes[id]++
			if votes[id] > most {
				best, most = id, votes[id]
			}
		}
	}
	o := Outcome{Total: len(e.nodes)}
	var ttls []time.Duration
	var holders uint16
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
		case !e.counts(i):
			// It may have lost the key (a restart without its data), or
			// hold a stale one: present or not, its answer is unknown.
			o.Quarantined++
		case r.v.Present && (entryID{r.v.Type, r.v.Token}) == best:
			o.Granted++
			ttls = append(ttls, r.v.TTL)
			holders |= 1 << i
		default:
			o.Denied++
		}
	}
	err := verdict(o, e.quorum, failures(results))
	if errors.Is(err, ErrUnavailable) {
		return State{}, holders, err
	}
	if err != nil {
		return State{}, holders, nil
	}
	ttl, _ := quorumTTL(ttls, e.quorum)
	if ttl < 0 {
		return State{Held: true, Token: best.token, Type: best.typ, Validity: -1}, holders, nil
	}
	v := validity(ttl, elapsed, e.cfg.DriftFactor)
	if v <= 0 {
		return State{}, holders, nil
	}
	return State{Held: true, Token: best.token, Type: best.typ, Validity: v}, holders, nil
}

// entryID is what nodes must agree on for a key to be held: its token,
// or for a key of another type, the type.
type entryID struct{ typ, token string }

// Delete deletes keys on every node, whoever holds them (an admin's
// forced release). It returns how many of the keys a quorum of nodes had.
func (e *Engine) Delete(ctx context.Context, keys []string) (int, error) {
	results := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (int, error) {
		return n.Delete(ctx, keys)
	})
	o := Outcome{Total: len(e.nodes)}
	var counts []int
	for _, r := range results {
		if r.err != nil {
			o.Failed++
			continue
		}
		o.Granted++
		counts = append(counts, r.v)
	}
	if err := verdict(o, e.quorum, failures(results)); err != nil {
		return 0, err
	}
	// Largest first: the count that at least a quorum of nodes reached.
	slices.Sort(counts)
	slices.Reverse(counts)
	return counts[e.quorum-1], nil
}
