package quorum

// Fencing tokens and quorum counters.
//
// A fencing token is a number a lock's holder passes with every write to
// the protected resource, which keeps the highest one it has seen and
// refuses lower ones: a holder that paused past its validity then writes
// with a token lower than its successor's, and is refused. The engine
// gives each hold of a key a token strictly greater than every token it
// gave an earlier hold of that key, through any proxy, under the lock's
// own failure model (a minority of nodes lost, frozen, cut off or
// restarted empty; bounded clock drift). It keeps no state of its own:
//
//   - Every node keeps one hash, CountersKey, with one counter per name:
//     FENCE uses one counter for every key (FenceField), so its cost on a
//     node is O(1); each name a client INCRs through fence_keys is a
//     counter of its own (counterPrefix + name), kept for good, as on one
//     Redis. The hash also says whether the node's counters can be
//     trusted ("seeded") or were lost ("pending", below). A counter's
//     field exists only in a seeded hash (seeding writes the hash anew,
//     writes check "seeded" first, a node that lost its data lost both),
//     so FENCE's script takes finding it as the node being seeded.
//   - A FENCE also writes a hold record, HoldPrefix + key = "T token",
//     with the lock key's remaining TTL, so that it expires with the
//     hold on that node. A repeated FENCE of the same hold returns the
//     recorded T, when a quorum of counted nodes holding the key have
//     it (counterAnswers). The engine's release deletes the record with
//     the key, its extend moves the record's expiry with the key's, and
//     a write-back counts a node only where it wrote the record.
//
// FENCE key token is one round in the common case. Each node, in one
// script, checks that key holds token (and reads its TTL); if it does
// and the node is seeded, it answers the hold record's T if the record
// is this token's, else takes its counter plus one, records it and
// answers that. The hold must be granted by a quorum, as an extend is.
// When a quorum of counted nodes answer the same T the same way
// (fenceAgreed: all took their counter plus one, or all found the
// record), T is returned if the hold's validity, counted from before the
// round, still runs. Why T is higher than every earlier hold's token: that hold's
// FENCE finished within its validity, so before this hold was granted
// (Redlock's exclusion), and it left the counter at or above its token
// on a quorum of seeded nodes; any quorum of answers includes one of
// those (below for nodes lost since), and that node answered either its
// counter plus one, or a record of this hold written since, which is
// above that counter too (a record is written only with a value taken
// from the counter then, or a decided T). The two kinds of answer must
// not be mixed: a token may hold the key again after an earlier hold
// whose release missed a node, and that node's record is the earlier
// hold's T, which nodes whose counters lag behind can answer too (a
// quorum of records is this hold's: the earlier one's records left with
// its key from all but a minority). A quorum answering alike also
// leaves T recorded on a quorum, so a repeated FENCE of the hold finds
// it.
//
// The round asks a quorum of the nodes first, and the others only when
// those do not agree or do not all answer (fenceask.go); it then ends
// with the write-back below. To the argument here, a node not asked is
// one whose message was lost, and one asked after, one whose message
// came late: the decision counts answers only, whichever nodes gave them.
// When the quorum asked first agrees, nothing is written on the others:
// the record is then on exactly that quorum, and a repeated FENCE of the
// hold after one of those nodes was lost takes a new, higher T. Writing
// T and the record on the others after the reply kept the repeat's T,
// but such a write, landing after the hold ended and the key was taken
// again with the same token, made a record of the earlier hold's T for
// the later hold, and beside a record a missed release left, a quorum:
// tokens went down across holders (attack15 G1b, G1c).
//
// When the answers do not agree (a node missed an earlier FENCE, or was
// lost; calls of one hold at once get the same answer from each node,
// whichever came first), the round serves as the read of two rounds:
// the counter's maximum is taken over the nodes that answered seeded,
// at least a quorum; T is the highest hold record of this hold that a
// quorum of counted nodes holding the key agree on (counterAnswers),
// else that maximum plus one. The write-back raises the counter to T
// (and writes the record) on every seeded node; with a quorum of them
// done, T is returned if the validity still runs. Such a T is above
// every earlier token for the same reason: the earlier write-back or
// agreement reached a quorum that this read meets.
//
// A node that restarts empty (or is flushed) has no hash: its counters
// are gone, and they never expire, so the lock quarantine alone does not
// cover them. Such a node never counts: a read (a client's, or the
// monitor's counter round, tendCounters) sees it missing and marks it
// "pending" with its own clock's time; writes skip it. It is seeded
// again only when (1) it is up (restart and clock quarantines over) and
// (2) its own clock shows at least max_ttl plus drift since the mark.
// Then the engine reads the counters of every node, takes each
// counter's maximum over at least a quorum of seeded nodes, and writes
// it to the node if it is still pending with the same mark. The wait
// matters: an operation may have counted the node's answer from before
// it lost its data and still be running; every operation gives up once
// its validity (at most max_ttl) has run out, so after the wait every
// such operation has finished or given up, and the maximum read covers
// it. Without the wait, a reseeded node can carry a counter below a
// returned token and complete a quorum that misses it (the model's
// negative control, fencemodel_test.go, shows the run).
//
// A new deployment has no hash anywhere: every node is marked pending,
// each mark with an id of its own, and when every node answers, the
// pending nodes are seeded at zero at once, with the ids of the pending
// nodes that seeding saw (gen), so that a seeding cut short is finished
// by a later read; a pending node it does not seed (not up) is named:
// the gen is written beside its mark. A seeded node without a counter
// proves nothing: it may have missed every write. So a new deployment
// is taken only while
// fewer than a quorum of nodes may have lost a counter (newDeployment):
// a value is returned once a quorum of seeded nodes hold a counter, and
// each of those holds it still or, having lost it, is missing or pending
// with an id no gen names (a named node was pending when a new
// deployment's seeding began, and has not been seeded since). Those
// must also have waited since their mark, as for a reseed: one may have
// answered an operation that still runs. If a majority of nodes lost
// their counters before they were seeded again, no quorum of seeded
// nodes answers and counters stop (NOQUORUM) rather than go back; an
// operator must then decide. When no node is seeded and none holds a
// gen (every node lost its counters, a seeding reached one node that
// then lost them while an operation that counted it ran, or a node's
// seed at zero was lost and the seeded ones lost theirs: attack11 F3d),
// that looks like a new deployment, and counters start again from zero
// (docs/guarantees.md).
//
// A counter INCR (fence_keys) is a read round and a write-back, without
// a hold:
// every reply is strictly greater than every reply an earlier INCR gave.
// Its write is exclusive: a node takes T only if its counter is below
// T, so two INCRs at once never both get a quorum for one T; the loser
// gets ErrContended and may try again. A counter read returns the
// maximum over a quorum of seeded nodes, so at least the last value an
// INCR returned.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

const (
	// CountersKey is the hash on every node that holds the counters.
	CountersKey = "redlock-proxy:fence"
	// HoldPrefix + a lock key is that key's hold record on a node.
	HoldPrefix = CountersKey + ":"
	// FenceField is the counter every FENCE uses.
	FenceField = "c"
	// counterPrefix + a name is a client's counter (fence_keys).
	counterPrefix = "k:"
)

// ErrContended means another INCR of the same counter took the value at
// the same time: nothing was returned, and a new try reads again.
var ErrContended = errors.New("quorum: counter contended")

// Reserved reports whether key is one of the proxies' own keys, which
// no client command may name: the membership record, the counters and
// the hold records. A key of bytes is read without a copy.
func Reserved[K ~string | ~[]byte](key K) bool {
	return string(key) == MembersKey || len(key) >= len(CountersKey) && string(key[:len(CountersKey)]) == CountersKey
}

// CounterState is what a node knows of its counters.
type CounterState int8

const (
	// CounterMissing: no hash; the node is new, or lost its data.
	CounterMissing CounterState = iota
	// CounterPending: marked lost, waiting to be seeded again.
	CounterPending
	// CounterSeeded: the counters can be trusted.
	CounterSeeded
)

// CounterEntry is one node's answer to a counter read.
type CounterEntry struct {
	State CounterState
	// Value is the counter, when seeded; when pending, the time of the
	// mark on the node's clock, in Unix milliseconds.
	Value int64
	// Virgin is a seeded hash no counter was ever written to.
	Virgin bool
	// ID names a pending node's mark, unlike any other mark's; Gen, on a
	// node a new deployment's seeding seeded or named, the ids of the
	// pending nodes that seeding saw, space-separated (fenceseed.go).
	ID, Gen string
	// Now is the node's clock, in Unix milliseconds.
	Now int64
	// For a FENCE: whether the lock key holds the token, its remaining
	// TTL, and the T the hold record has for this token (0 if none).
	Held bool
	TTL  time.Duration
	Hold int64
	// Answer is the T this node gives in FENCE's one round (0: none).
	Answer int64
}

// CounterWrite is one node's answer to a counter write.
type CounterWrite int8

const (
	CounterWritten   CounterWrite = 1  // the counter is now at least the value
	CounterUnseeded  CounterWrite = 0  // the node's counters are not seeded: nothing written
	CounterContended CounterWrite = -1 // exclusive, and the counter was there already
	CounterNotHeld   CounterWrite = -2 // a FENCE whose key does not hold the token there: no record
)

// Fencer is the part of Node that keeps counters (fencenode.go for
// Redis). Each method is one atomic step on the node.
type Fencer interface {
	// FenceRound is FENCE's one round on the node: a ReadCounter whose
	// Answer, where key holds token on a seeded node, is the hold
	// record's T if it is token's, else field plus one, taken and
	// recorded.
	FenceRound(ctx context.Context, key, token, field string) (CounterEntry, error)
	// ReadCounter reads field of CountersKey and, if key is not empty,
	// whether key holds token, its TTL and its hold record.
	ReadCounter(ctx context.Context, key, token, field string) (CounterEntry, error)
	// WriteCounter raises field to v on a seeded node (exclusive: only if
	// it is below v) and, if key holds token, writes its hold record.
	WriteCounter(ctx context.Context, key, token, field string, v int64, exclusive bool, until int64) (CounterWrite, error)
	// MarkCounters marks a node without a hash pending, with id, and
	// returns its state either way (Value: the mark).
	MarkCounters(ctx context.Context, id string) (CounterEntry, error)
	// Counters returns every counter of a seeded node; nil if it is not
	// seeded.
	Counters(ctx context.Context) (map[string]int64, error)
	// SeedCounters seeds a node still pending with mark, with fields and
	// a new deployment's gen ("" for none), and reports whether it did.
	SeedCounters(ctx context.Context, mark int64, gen string, fields map[string]int64) (bool, error)
	// NameCounters writes a new deployment's gen on a node still pending
	// with mark, without seeding it, and reports whether it did.
	NameCounters(ctx context.Context, mark int64, gen string) (bool, error)
}

// Fencing is a fencing token for a hold, as the engine grants it.
type Fencing struct {
	Token int64
	// Expires is when the hold's validity, as the read saw it, ends.
	Expires time.Time
}

// Fence returns the fencing token of the hold of key by token: the same
// for every call during one hold, strictly greater than every token of an
// earlier hold of key. An error matches ErrDenied when token does not
// hold key on a quorum (or its validity ran out), ErrUnavailable when too
// few nodes answered.
func (e *Engine) Fence(ctx context.Context, key, token string) (Fencing, error) {
	start := time.Now()
	call := func(b Batch) Call[CounterEntry] { return b.FenceRoundCall(key, token, FenceField) }
	each := func(ctx context.Context, _ int, n Node) (CounterEntry, error) {
		return n.FenceRound(ctx, key, token, FenceField)
	}
	var abuf [8]bool
	ask := e.fenceAsk(abuf[:0])
	reads := fanOutCallOn(ctx, e, call, ask, each)
	var buf [8]fenceAnswer
	t, ok := fenceAgreed(e.agreeing(reads, buf[:]), e.quorum)
	if ask != nil && !ok {
		// The quorum asked first does not agree (or did not all answer):
		// the others are asked, and the write-back below brings every
		// node up, so that the next quorum asked agrees (fenceask.go).
		for i := range ask {
			ask[i] = !ask[i]
		}
		for i, r := range fanOutCallOn(ctx, e, call, ask, each) {
			if ask[i] {
				reads[i] = r
			}
		}
	}
	e.noteCounters(reads)
	o, f, err := e.fenceHold(reads, start)
	if err != nil {
		return Fencing{}, err
	}
	// Nodes that lost their counters are marked (or seeded again) as a
	// read round would: the wait before seeding starts at the mark.
	tended := e.tend(ctx, reads)
	if !ok {
		// Nodes disagree (one missed a FENCE or was lost, or calls of
		// this hold ran at once), or too few are seeded: this round is
		// the read of the two rounds, and a write-back follows.
		if tended {
			reads = e.readCounters(ctx, key, token, FenceField)
			if o, f, err = e.fenceHold(reads, start); err != nil {
				return Fencing{}, err
			}
		}
		vals, holds := counterAnswers(reads, e.counts, e.quorum)
		if t, ok = nextToken(vals, holds, 1, e.quorum); !ok {
			return Fencing{}, counterUnavailable(reads, len(vals))
		}
		if err := e.writeBack(ctx, key, token, FenceField, t, false); err != nil {
			return Fencing{}, err
		}
	}
	if expired(time.Until(f.Expires)) {
		return Fencing{}, &OutcomeError{Outcome: o, Expired: true}
	}
	f.Token = t
	return f, nil
}

// fenceHold checks that token holds key on a quorum of counted nodes, as
// an extend does, and returns when the hold's validity ends, counted
// from start.
func (e *Engine) fenceHold(reads []result[CounterEntry], start time.Time) (Outcome, Fencing, error) {
	o := Outcome{Total: len(e.nodes)}
	var buf [8]time.Duration
	ttls := buf[:0]
	for i, r := range reads {
		switch {
		case r.err == errNotAsked:
		case r.err != nil:
			o.Failed++
		case r.v.Held && !e.counts(i):
			o.Quarantined++
		case r.v.Held:
			o.Granted++
			ttls = append(ttls, r.v.TTL)
		default:
			o.Denied++
		}
	}
	if err := verdict(o, e.quorum, failures(reads)); err != nil {
		return o, Fencing{}, err
	}
	ttl, _ := quorumTTL(ttls, e.quorum)
	if ttl < 0 || ttl > e.cfg.MaxTTL {
		ttl = e.cfg.MaxTTL // every operation ends within max_ttl (reseeding waits for it)
	}
	return o, Fencing{Expires: expiry(start, ttl, e.cfg.DriftFactor)}, nil
}

// fenceAnswer is one node's answer to FENCE's one round: T, and whether
// it is the hold record the node found (else its counter plus one).
type fenceAnswer struct {
	t        int64
	recorded bool
}

// agreeing returns the answers of FENCE's one round that count: those of
// counted, seeded nodes where the key holds the token.
func (e *Engine) agreeing(reads []result[CounterEntry], buf []fenceAnswer) []fenceAnswer {
	as := buf[:0]
	for i, r := range reads {
		if r.err == nil && r.v.State == CounterSeeded && r.v.Held && r.v.Answer > 0 && e.counts(i) {
			as = append(as, fenceAnswer{r.v.Answer, r.v.Hold > 0})
		}
	}
	return as
}

// fenceAgreed is the decision of FENCE's one round (see the design
// above): the T that at least quorum of the answers give, of one kind.
func fenceAgreed(as []fenceAnswer, quorum int) (int64, bool) {
	for _, a := range as {
		n := 0
		for _, b := range as {
			if b == a {
				n++
			}
		}
		if n >= quorum {
			return a.t, true
		}
	}
	return 0, false
}

// Incr raises the counter name by at least by (> 0) and returns its new
// value: strictly greater than every value an earlier Incr of name
// returned. The error matches ErrContended when another Incr took the
// value at the same time, ErrUnavailable when too few nodes answered.
func (e *Engine) Incr(ctx context.Context, name string, by int64) (int64, error) {
	if by <= 0 {
		return 0, fmt.Errorf("quorum: increment %d is not positive", by)
	}
	start := time.Now()
	reads := e.readCounters(ctx, "", "", counterPrefix+name)
	vals, _ := counterAnswers(reads, e.counts, e.quorum)
	t, ok := nextToken(vals, nil, by, e.quorum)
	switch {
	case !ok && len(vals) >= e.quorum:
		return 0, ErrOverflow
	case !ok:
		return 0, counterUnavailable(reads, len(vals))
	}
	if err := e.writeBack(ctx, "", "", counterPrefix+name, t, true); err != nil {
		return 0, err
	}
	if time.Since(start) >= e.cfg.MaxTTL {
		// Reseeding waits out max_ttl for operations that may have
		// counted a lost node: this one is too late to return.
		return 0, &OutcomeError{Outcome: Outcome{Total: len(e.nodes)}, Unavailable: true}
	}
	return t, nil
}

// Counter returns the counter name: at least the last value Incr
// returned for it, and below every value a later Incr returns (Redisson's
// getToken is such a read); 0 for a counter never increased.
func (e *Engine) Counter(ctx context.Context, name string) (int64, error) {
	reads := e.readCounters(ctx, "", "", counterPrefix+name)
	vals, _ := counterAnswers(reads, e.counts, e.quorum)
	if len(vals) < e.quorum {
		return 0, counterUnavailable(reads, len(vals))
	}
	m := maxOf(vals)
	if !onQuorum(vals, m, e.quorum) {
		// The highest may be on fewer than a quorum (an Incr that failed
		// or still runs): written back first, or a later Incr could miss
		// it and return it again.
		if err := e.writeBack(ctx, "", "", counterPrefix+name, m, false); err != nil {
			return 0, err
		}
	}
	return m, nil
}

// onQuorum reports whether at least quorum of vals are v.
func onQuorum(vals []int64, v int64, quorum int) bool {
	n := 0
	for _, x := range vals {
		if x == v {
			n++
		}
	}
	return n >= quorum
}

// counterAnswers returns the counters of the nodes that answered seeded,
// and the hold records of the caller's hold that a quorum of counted
// nodes holding the key agree on. A record on fewer is no proof that it
// is this hold's: one left on a master a release missed (a stale copy),
// or on the nodes a later holder's FENCE did not reach, may be an
// earlier hold's of the same token. Every FENCE leaves its record on a
// quorum (writeCounter counts only nodes that wrote it), so an earlier
// hold's record is found on a quorum only while that hold lasts.
func counterAnswers(reads []result[CounterEntry], counts func(int) bool, quorum int) (vals, holds []int64) {
	seen := map[int64]int{}
	for i, r := range reads {
		switch {
		case r.err != nil:
		case r.v.State == CounterSeeded:
			vals = append(vals, r.v.Value)
		}
		if r.err == nil && r.v.Held && r.v.Hold > 0 && counts(i) {
			seen[r.v.Hold]++
		}
	}
	for t, n := range seen {
		if n >= quorum {
			holds = append(holds, t)
		}
	}
	return vals, holds
}

// nextToken is the one decision of a counter's read round: the value to
// write back, given the counters of the seeded nodes that answered and
// the hold records found. A hold that has a record keeps its token (the
// highest, if calls ran at once): it was chosen during this hold, so it
// is above every earlier hold's. Otherwise it is the highest counter
// plus by. It reports false when fewer than quorum seeded nodes answered
// (or the value would overflow).
func nextToken(vals, holds []int64, by int64, quorum int) (int64, bool) {
	if len(vals) < quorum {
		return 0, false
	}
	if len(holds) > 0 {
		return maxOf(holds), true
	}
	m := maxOf(vals)
	if m > math.MaxInt64-by {
		return 0, false
	}
	return m + by, true
}

func maxOf(vs []int64) int64 {
	m := int64(0)
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}

// counterUnavailable is the error of a round that found fewer than a
// quorum of seeded nodes: the others failed, or are not seeded.
func counterUnavailable(reads []result[CounterEntry], seeded int) error {
	o := Outcome{Total: len(reads), Granted: seeded}
	for _, r := range reads {
		switch {
		case r.err != nil:
			o.Failed++
		case r.v.State != CounterSeeded:
			o.Unseeded++ // its counters are lost or being seeded
		}
	}
	return &OutcomeError{Outcome: o, Unavailable: true, Failures: failures(reads)}
}

// writeCounter is the write-back round: field raised to v on every node,
// done when a quorum wrote it.
func (e *Engine) writeCounter(ctx context.Context, key, token, field string, v int64, exclusive bool) error {
	results := fanOut(ctx, e, func(nctx context.Context, i int, n Node) (CounterWrite, error) {
		return dated(nctx, ctx, e, i, func(nctx context.Context, until int64) (CounterWrite, error) {
			return n.WriteCounter(nctx, key, token, field, v, exclusive, until)
		})
	})
	o := Outcome{Total: len(e.nodes)}
	contended := 0
	for _, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
		case r.v == CounterWritten:
			o.Granted++
		case r.v == CounterContended:
			o.Denied++
			contended++
		case r.v == CounterNotHeld:
			o.Denied++
		case r.v == CounterUnseeded:
			o.Unseeded++
		default:
			o.Quarantined++
		}
	}
	err := verdict(o, e.quorum, failures(results))
	if err != nil && contended > 0 {
		return fmt.Errorf("%w: %w", ErrContended, err)
	}
	return err
}
