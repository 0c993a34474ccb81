package quorum

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
)

// Redisson's RCountDownLatch as quorum operations (latchdecide.go has the
// design and its decisions, latchcheck_test.go explores them). A latch's
// count lives in the counters' hash on every node (fence.go), as four
// fields: "l:" the count (none: open there, or never set), "n:" the nonce
// of the trySetCount that set it, "m:" the claim of its zero message and
// "o:" its claim slot's tag; an opened latch keeps "o:" and "m:" until
// delete (LatchCountDown says why), which leaves "o:" a tombstone (-1,
// latch_del.lua) beside the ballots its node voted for (latchVotedPrefix);
// a vote's ballot, and a vote kept from a replaced slot, add fields
// (latchVoteBallotPrefix) until delete. A node restarted
// empty does not count until seeded again after the wait (fenceseed.go),
// with a generation no read made before can name (latchSeedFields).

const (
	latchCountPrefix = "l:"
	latchNoncePrefix = "n:"
	latchClaimPrefix = "m:"
	// latchSlotPrefix names the nonce of the set (reset, seed) whose
	// claim slot "m:" is: it outlives the count, and a countDown reads it
	// first (the count's nonce while there is one).
	latchSlotPrefix = "o:"
	// latchVoteBallotPrefix is the ballot (latchBallot) a claim was given
	// for in a slot of another tag; latchKeptBallotPrefix and
	// latchKeptClaimPrefix keep a vote given in a claim slot that a later
	// set (or reset) replaced: its ballot and the claim. A claim of that
	// ballot is answered with it (review28 F0: else the node voted twice).
	latchVoteBallotPrefix = "b:"
	latchKeptBallotPrefix = "p:"
	latchKeptClaimPrefix  = "q:"
	// latchVotedPrefix is the node's memory of the ballots it voted for
	// and keeps no vote of (a delete took it, a set replaced a kept one):
	// a bit each, -1 any (latch_voted.lua). At a tombstone a claim of
	// another ballot votes (attack15 L4: else a tombstone on a node the
	// set missed answered every claim nobody's, and split claims decided
	// none); none at a tombstone (one the scripts before it left) is any.
	latchVotedPrefix = "d:"
	// latchForgotPrefix is the same memory of the kept votes a node
	// forgot while their slot lived, to vote for a third ballot (the
	// rest of L3, latch_claim.lua): there a claim of one of them, or of
	// none, is nobody's. A delete moves it into latchVotedPrefix.
	latchForgotPrefix = "x:"
	// latchNobody is the claim of a node seeded after a restart that may
	// have answered another before: it answers nobody's claim (0).
	latchNobody = -1
)

// latchSeedFields turns the maxima of the seeded nodes' counters (fields,
// from dumps: counterMaxima) into a restarted node's latch fields. Each
// count is latchSeedCount's (none when a quorum of dumps have none, or
// another dump counted its set down to 0; else the highest), beside a
// fresh nonce: a countDown whose nonce read came before the seed, its
// decrement after, misses there (it may have counted the others down
// already, and the highest count after). Seeded with none, the node keeps
// a claim slot tag counted down to 0 (one whose leftover was dropped, if
// any): the evidence latchSeedCount reads, for a later seed, carried
// negated (latchCarried: a claim there is nobody's, and it is in no
// countDown's ballot, which is a set's tag: else a countDown of the latch
// could read a ballot of an older one, and a master that voted for the
// older one vote for it again: L3). A slot holds
// one tag, so of several the highest stays; a later seed misses the
// leftover of a tag dropped here unless another source still holds it.
// No claim is copied: the node may have answered another before its
// restart, so it answers nobody's (latchNobody) until a set lands there
// again; but for a latch that every dump has a count of and a claim of
// its own to take (0), it is the latch's to take: none of them was at 0
// since its set, so no claim was made. A dump's nobody's (-1) proves nothing: that node was
// seeded itself, its count perhaps a lagging node's (attack11 Z2). Its
// memory of votes is any (latchVotedPrefix): at a tombstone, a later one
// too, it answers every claim nobody's.
func latchSeedFields(fields map[string]int64, dumps []map[string]int64, quorum int) {
	names := map[string]bool{}
	for f := range fields {
		for _, p := range []string{latchCountPrefix, latchNoncePrefix, latchClaimPrefix, latchSlotPrefix, latchVoteBallotPrefix, latchKeptBallotPrefix, latchKeptClaimPrefix, latchVotedPrefix, latchForgotPrefix} {
			if name, ok := strings.CutPrefix(f, p); ok {
				names[name] = true
				if p != latchCountPrefix {
					delete(fields, f)
				}
			}
		}
	}
	nonce := positiveNonce()
	for name := range names {
		count, claim, slot := latchCountPrefix+name, latchClaimPrefix+name, latchSlotPrefix+name
		counts, nonces, slots := make([]int64, len(dumps)), make([]int64, len(dumps)), make([]int64, len(dumps))
		for i, d := range dumps {
			counts[i], nonces[i], slots[i] = d[count], d[latchNoncePrefix+name], latchTag(d[slot])
		}
		v, zeros, dropped := latchSeedCount(counts, nonces, slots, quorum)
		switch {
		case v > 0:
			fields[count] = v
			fields[latchNoncePrefix+name], fields[slot] = nonce, nonce
		case len(dropped) > 0:
			delete(fields, count)
			fields[slot] = latchCarried(slices.Max(dropped))
		case len(zeros) > 0:
			delete(fields, count)
			fields[slot] = latchCarried(slices.Max(zeros))
		default:
			delete(fields, count)
		}
		fields[claim], fields[latchVotedPrefix+name] = latchNobody, -1
		if !slices.ContainsFunc(dumps, func(d map[string]int64) bool {
			c, ok := d[claim]
			return d[count] <= 0 || !ok || c != 0
		}) {
			fields[claim] = 0
		}
	}
}

// latchCarried is a tag a seed carries as evidence, as stored in "o:":
// negated, a tombstone (-1) as it is; latchTag reads either back.
func latchCarried(tag int64) int64 {
	if tag > 0 {
		return -tag
	}
	return tag
}

// latchTag is the tag of a claim slot's "o:" (a seed's carried one is
// stored negated: latchCarried).
func latchTag(slot int64) int64 {
	if slot < -1 {
		return -slot
	}
	return slot
}

// LatchMessages are what a latch's operations publish, as Redisson's
// scripts do: the command (PUBLISH or SPUBLISH), the channel and the
// message.
type LatchMessages struct {
	Publish, Channel, Message string
}

// LatchAnswer is one node's answer: its counters' state, the value the
// script gives (set, claim, had), and for a set that found a count, that
// count's nonce; bare: a set that set the count found no field of the
// claim slot, or a free one (its undo takes the slot's "m:" too).
type LatchAnswer struct {
	State CounterState
	Value int64
	Nonce int64
	Bare  bool
}

// latcher is the part of Node that runs the latch's scripts
// (latchnode.go).
type latcher interface {
	LatchSet(ctx context.Context, name string, count, nonce int64) (LatchAnswer, error)
	LatchUndo(ctx context.Context, name string, nonce int64, bare bool) error
	LatchReset(ctx context.Context, name string, count, nonce, old int64) error
	LatchDecrement(ctx context.Context, name string, nonce int64) (LatchDecremented, error)
	LatchClaim(ctx context.Context, name string, claim, nonce, ballot int64) (LatchAnswer, error)
	LatchDelete(ctx context.Context, name string) (LatchAnswer, error)
	publisher
}

// latchOp runs op on every node.
func latchOp[T any](ctx context.Context, e *Engine, op func(context.Context, latcher) (T, error)) []result[T] {
	return fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (T, error) { return op(ctx, n) })
}

// seededAnswers are the values of the nodes that answered seeded, and
// whether some node answered that it is not.
func seededAnswers(res []result[LatchAnswer]) (vals []int64, unseeded bool) {
	for _, r := range res {
		switch {
		case r.err != nil:
		case r.v.State == CounterSeeded:
			vals = append(vals, r.v.Value)
		default:
			unseeded = true
		}
	}
	return vals, unseeded
}

// latchUnavailable is the error of a latch operation that too few seeded
// nodes answered, or whose answers did not decide.
func latchUnavailable(res []result[LatchAnswer], granted int) error {
	o := Outcome{Total: len(res), Granted: granted}
	for _, r := range res {
		switch {
		case r.err != nil:
			o.Failed++
		case r.v.State != CounterSeeded:
			o.Unseeded++ // its counters are lost or being seeded
		}
	}
	o.Denied = len(res) - o.Failed - o.Unseeded - granted
	return &OutcomeError{Outcome: o, Unavailable: true, Failures: failures(res)}
}

// tendLatch marks or seeds the nodes that answered not seeded (a read
// round of the latch's count does it, fenceseed.go).
func (e *Engine) tendLatch(ctx context.Context, name string) {
	e.readCounters(ctx, "", "", latchCountPrefix+name)
}

// LatchSet is trySetCount: true when a quorum of seeded nodes set the
// count, false when a quorum had one; otherwise the set is undone where
// it may have landed (by its nonce) and err matches ErrUnavailable.
func (e *Engine) LatchSet(ctx context.Context, name string, count int64, m LatchMessages) (bool, error) {
	nonce := positiveNonce()
	set := func() []result[LatchAnswer] {
		return latchOp(ctx, e, func(ctx context.Context, n latcher) (LatchAnswer, error) {
			return n.LatchSet(ctx, name, count, nonce)
		})
	}
	res := set()
	vals, unseeded := seededAnswers(res)
	granted := sum(vals)
	if unseeded && len(vals) < e.quorum && granted == 0 && failures(res) == nil {
		// A new deployment, or nodes to seed again: a set that landed
		// nowhere can be tried again.
		e.tendLatch(ctx, name)
		res = set()
		vals, _ = seededAnswers(res)
		granted = sum(vals)
	}
	if granted >= e.quorum {
		e.resetLatch(ctx, name, count, nonce, res)
		e.publishDecided(ctx, m.Publish, m.Channel, m.Message)
		return true, nil
	}
	fanOut(context.WithoutCancel(ctx), e, func(ctx context.Context, i int, n Node) (struct{}, error) {
		return struct{}{}, n.LatchUndo(ctx, name, nonce, res[i].err == nil && res[i].v.Bare)
	})
	if len(vals)-granted >= e.quorum {
		return false, nil
	}
	return false, latchUnavailable(res, granted)
}

// resetLatch sets a granted count over the counts a set found, each an
// older latch's (a quorum had none: that latch opened or was deleted)
// that its nodes kept, having missed its countDowns or its delete: left
// there, they would keep the new latch from reading open, or seed a
// restarted node above it. A count still of the nonce the set found is
// set to the new count, the highest it can be.
func (e *Engine) resetLatch(ctx context.Context, name string, count, nonce int64, res []result[LatchAnswer]) {
	if !slices.ContainsFunc(res, func(r result[LatchAnswer]) bool { return latchFound(r) }) {
		return
	}
	fanOut(context.WithoutCancel(ctx), e, func(ctx context.Context, i int, n Node) (struct{}, error) {
		if !latchFound(res[i]) {
			return struct{}{}, nil
		}
		return struct{}{}, n.LatchReset(ctx, name, count, nonce, res[i].v.Nonce)
	})
}

// latchFound: the set found a count on the node.
func latchFound(r result[LatchAnswer]) bool {
	return r.err == nil && r.v.State == CounterSeeded && r.v.Value == 0
}

// LatchCountDown is countDown, in rounds: each node's nonce of the set
// that made its count (or its claim slot, latchSlotPrefix) is read, then
// one decrement sent to each node that answered seeded, of that count
// only (a decrement landing after a later trySetCount, or after the
// node's restart, does not count for it), never sent again. When the
// seeded nodes' answers read the latch open, it claims the zero message,
// on each node in the claim slot it read there (a claim landing after a later trySetCount is
// nobody's, after a delete where the node voted for its ballot; on a node
// it read with no tag, or a tombstone, in a slot of latchBallot),
// and sends it if the claim won (latchClaimWon). An opened
// latch keeps its claim slot ("o:" and "m:") until delete: the tag with
// no count is what latchSeedCount reads to drop a leftover count, even
// of a set that lands late. A countDown that counted none down claims
// too: where the last ones met faults before a claim won (no quorum
// answered, claims not made), a later one sends the message (a countDown
// too many sends none once a claim won: the slots keep its claims). With
// fewer than a quorum of seeded answers err matches ErrUnavailable: the
// decrement may have landed.
func (e *Engine) LatchCountDown(ctx context.Context, name string, m LatchMessages) error {
	reads := e.readCounters(ctx, "", "", latchSlotPrefix+name)
	read := func(i int, n Node) (latcher, error) {
		if reads[i].err != nil || reads[i].v.State != CounterSeeded {
			return nil, errLatchNotRead
		}
		return n, nil
	}
	res := fanOut(ctx, e, func(ctx context.Context, i int, n Node) (LatchDecremented, error) {
		ln, err := read(i, n)
		if err != nil {
			return LatchDecremented{}, err
		}
		return ln.LatchDecrement(ctx, name, reads[i].v.Value)
	})
	var before, after []int64
	for _, r := range res {
		if r.err == nil && r.v.State == CounterSeeded {
			before, after = append(before, r.v.Old), append(after, r.v.New)
		}
	}
	if len(before) < e.quorum {
		o := Outcome{Total: len(res), Granted: len(before)}
		o.Failed = len(res) - len(before)
		return &OutcomeError{Outcome: o, Unavailable: true, Failures: failures(res)}
	}
	if v, ok := latchCount(after, e.quorum); !ok || v > 0 {
		return nil
	}
	claim, ballot := positiveNonce(), latchBallot(reads, e.quorum)
	answers, _ := seededAnswers(fanOut(context.WithoutCancel(ctx), e, func(ctx context.Context, i int, n Node) (LatchAnswer, error) {
		ln, err := read(i, n)
		if err != nil {
			return LatchAnswer{}, err
		}
		return ln.LatchClaim(ctx, name, claim, reads[i].v.Value, ballot)
	}))
	// Nobody's claim (0: another latch's slot, or a node seeded after a
	// restart) is no answer.
	claims := slices.DeleteFunc(answers, func(c int64) bool { return c == 0 })
	if latchClaimWon(claims, claim, len(e.nodes), e.quorum) {
		e.publishDecided(ctx, m.Publish, m.Channel, m.Message)
	}
	return nil
}

// latchBallot is the claim slot tag a countDown read on a quorum or more
// of the seeded nodes (0: none): a set's or reset's tag, never a seed's
// carried one (negated, latchCarried), so a ballot names one latch. Its claim to a node it read with no tag
// (one that missed the set) creates the slot there, of that tag, unless
// the node has a field of it (latch_claim.lua): else that node answers
// every claim nobody's, and claims split over the others decide none
// (latch20c; the tie-break needs every node's answer). A later set of
// that tag landing there keeps the claim (latch_set.lua). A vote is kept
// by its ballot when a later set replaces its slot, and answers claims
// of that ballot, or of none (review28 F0: a new set landing on one node
// after the opening gave that node a second vote, in the new slot).
func latchBallot(reads []result[CounterEntry], quorum int) int64 {
	by := map[int64]int{}
	for _, r := range reads {
		if r.err == nil && r.v.State == CounterSeeded && r.v.Value > 0 {
			by[r.v.Value]++
			if by[r.v.Value] >= quorum {
				return r.v.Value
			}
		}
	}
	return 0
}

// errLatchNotRead: a node whose nonce the countDown could not read gets
// no decrement.
var errLatchNotRead = errors.New("the latch's count was not read")

// LatchDecremented is one node's answer to a countDown's decrement.
type LatchDecremented struct {
	State    CounterState
	Old, New int64
}

// LatchDelete is delete: true when a quorum of seeded nodes deleted a
// count, false when a quorum had none; the message is published when it
// deleted one (as Redisson's script does).
func (e *Engine) LatchDelete(ctx context.Context, name string, m LatchMessages) (bool, error) {
	res := latchOp(ctx, e, func(ctx context.Context, n latcher) (LatchAnswer, error) {
		return n.LatchDelete(ctx, name)
	})
	vals, _ := seededAnswers(res)
	had := sum(vals)
	switch {
	case had >= e.quorum:
		e.publishDecided(ctx, m.Publish, m.Channel, m.Message)
		return true, nil
	case len(vals)-had >= e.quorum:
		return false, nil
	}
	return false, latchUnavailable(res, had)
}

// LatchCount is getCount (Redisson's GET): latchCount over the seeded
// nodes' counts; 0 for a latch open or never set.
func (e *Engine) LatchCount(ctx context.Context, name string) (int64, error) {
	reads := e.readCounters(ctx, "", "", latchCountPrefix+name)
	vals, _ := counterAnswers(reads, e.counts, e.quorum)
	if len(vals) < e.quorum {
		return 0, counterUnavailable(reads, len(vals))
	}
	v, ok := latchCount(vals, e.quorum)
	if !ok {
		return 0, counterUnavailable(reads, len(vals))
	}
	return v, nil
}

// sum is how many of vals (each 0 or 1) are 1.
func sum(vals []int64) int {
	n := 0
	for _, v := range vals {
		n += int(v)
	}
	return n
}

// positiveNonce is a random int64 above 0: the counters' hash keeps
// integers only (fenceseed.go seeds each field with its highest).
func positiveNonce() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:])>>1) | 1
}
