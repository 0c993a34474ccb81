package quorum

import (
	"errors"
	"slices"
	"time"
)

// The read lock's decisions (rwlock.go), pure: no I/O, no clock.

// ReadTake is one node's answer to a read lock's take: granted, with
// the holds the reader had there before (a re-entry's), or denied with
// the key's PTTL there (negative: no expiry).
type ReadTake struct {
	Granted bool
	Prior   int
	PTTL    time.Duration
}

// ErrWrongType means a quorum of the nodes answered a read lock script
// with WRONGTYPE: the key is of another type there, and one Redis
// answers the script with that error.
var ErrWrongType = errors.New("quorum: key of another type")

// orWrongType is err, an undecided outcome, or ErrWrongType when a
// quorum of the counted nodes failed with a WRONGTYPE error reply. Fewer
// (the nodes disagree on the key's type) stay unavailable.
func orWrongType[T any](err error, results []result[T], counted []bool, quorum int) error {
	if !errors.Is(err, ErrUnavailable) {
		return err
	}
	n := 0
	for i, r := range results {
		if counted[i] && replyHasPrefix(r.err, "WRONGTYPE") {
			n++
		}
	}
	if n >= quorum {
		return ErrWrongType
	}
	return err
}

// readTakeVotes is everything decideReadTake reads.
type readTakeVotes struct {
	results     []result[ReadTake]
	counted     []bool // counted[i]: node i's grant counts (not quarantined)
	quorum      int
	ttl         time.Duration
	start, now  time.Time // the first send, the last answer
	driftFactor float64
}

// readTakeDecision is how a take is answered, and where it is undone.
type readTakeDecision struct {
	decision // decide's; its err ErrWrongType when so
	// pttl is a denial's reply: how long until a quorum of nodes could
	// grant, by their PTTLs (negative: one of them has no expiry).
	pttl time.Duration
	// landed[i]: the take may hold on node i (it granted there, or it
	// failed, and was called: a lost reply may hide a grant); undo is
	// landed when the take is not granted, else none.
	landed, undo []bool
}

// decideReadTake decides a read lock's take by decide, as Acquire
// decides a lock: granted by a quorum of counted nodes with validity
// left. A reader and a writer each need a quorum, and a node grants a
// reader only where no other's write lock is, and a writer only where no
// read lock is; two quorums meet in a node, so a reader is never granted
// beside a writer (readers share: they never deny each other). Anything
// else is undone wherever the take may have landed.
//
// A re-entry is a count on each node, and an unlock takes one off every
// node; so a node's grant counts only where the reader has at least as
// many holds as it holds on a quorum (its depth), or an unlock could
// leave its remaining holds on fewer than a quorum (held 1 on nodes 1-2,
// again on 1 and 3: one unlock leaves node 1 only). The depth is bounded
// from the answers: a quorum held at its depth when it was granted, and
// since then a node lost its holds only by a restart (it is then not
// counted), so at least quorum - f - q of the answering counted nodes
// hold at that depth (f failed, q not counted), and it is at most their
// (quorum - f - q)-th largest count.
func decideReadTake(v readTakeVotes) readTakeDecision {
	n := len(v.results)
	d := readTakeDecision{landed: make([]bool, n), undo: make([]bool, n)}
	depth := reentryDepth(v)
	ballots := make([]ballot, n)
	var pttls []time.Duration
	for i, r := range v.results {
		granted := r.err == nil && r.v.Granted
		ballots[i] = ballot{err: r.err, granted: granted, ttl: v.ttl, counts: v.counted[i] && r.v.Prior >= depth}
		d.landed[i] = granted || r.err != nil && !errors.Is(r.err, ErrNodeDown)
		if r.err == nil && !granted {
			pttls = append(pttls, r.v.PTTL)
		}
	}
	d.decision = decide(ballots, v.quorum, v.start, v.now, v.driftFactor)
	if d.err == nil {
		return d
	}
	d.err = orWrongType(d.err, v.results, v.counted, v.quorum)
	copy(d.undo, d.landed)
	var oe *OutcomeError
	if errors.As(d.err, &oe) && !oe.Unavailable && !oe.Expired {
		d.pttl = freeAfter(pttls, v.quorum-oe.Granted)
	}
	return d
}

// reentryDepth bounds the holds the reader has on a quorum of nodes
// before this take (decideReadTake): the (quorum - f - q)-th largest
// count among the counted nodes that answered, f and q being the nodes
// that failed or are not counted (a denying node has none).
func reentryDepth(v readTakeVotes) int {
	var counts []int
	failed := 0
	for i, r := range v.results {
		switch {
		case !v.counted[i], r.err != nil:
			failed++
		case r.v.Granted:
			counts = append(counts, r.v.Prior)
		default:
			counts = append(counts, 0)
		}
	}
	k := v.quorum - failed
	if k < 1 || k > len(counts) {
		return 0 // fewer than a quorum answered: no grant counts anyway
	}
	slices.Sort(counts)
	return counts[len(counts)-k]
}

// freeAfter is when need of the denying nodes' holds (their PTTLs) have
// all run out: the need-th shortest, negative if that one has no expiry.
func freeAfter(pttls []time.Duration, need int) time.Duration {
	s := slices.Clone(pttls)
	slices.SortFunc(s, func(a, b time.Duration) int {
		switch {
		case a == b, a < 0 && b < 0:
			return 0
		case a < 0:
			return 1
		case b < 0, a < b:
			return -1
		}
		return 1
	})
	if need < 1 || need > len(s) {
		return -1
	}
	return s[need-1]
}

// ReadRelease is one node's answer to a read lock's unlock.
type ReadRelease struct {
	// Latched: an earlier run of the same request answered latch here
	// (Redisson's unlock latch), and this run did nothing.
	Latched bool
	Latch   Value
	// Held: the reader held the lock here, and one hold is released.
	Held bool
	// Free: no read or write lock is left here.
	Free bool
}

// readReleaseDecision is an unlock's reply, and whether to publish.
type readReleaseDecision struct {
	err     error
	reply   Value // nil, 0 or 1, as Redisson's unlock answers
	publish bool
}

// decideReadRelease decides a read lock's unlock as one Redis answers
// it, from a quorum of agreeing answers: released (a quorum released a
// hold, or had latched the request) is 1 when a quorum of nodes is left
// free (a writer may take it: the message is published) and 0 when not;
// not held (a quorum held nothing of the reader) is nil, with the
// message when a quorum has no lock at all, as one Redis publishes then
// too. A latched answer is the earlier run's, when a quorum latched
// alike. Fewer answers, or no quorum for either, is unavailable.
// Releasing never makes a holder, so nothing is undone.
func decideReadRelease(results []result[ReadRelease], counted []bool, quorum int, failures error) readReleaseDecision {
	o := Outcome{Total: len(results)}
	held, notHeld, free, fresh := 0, 0, 0, 0
	var latched []Value
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
			continue
		case !counted[i]:
			o.Quarantined++
			continue
		case r.v.Latched:
			latched = append(latched, r.v.Latch)
			held++
			if r.v.Latch.Kind == ValueInt && r.v.Latch.Int == 1 {
				free++
			}
			continue
		case r.v.Held:
			held++
		default:
			notHeld++
		}
		fresh++
		if r.v.Free {
			free++
		}
	}
	o.Granted, o.Denied = held, notHeld
	unavailable := orWrongType(&OutcomeError{Outcome: o, Unavailable: true, Failures: failures}, results, counted, quorum)
	switch {
	case held+notHeld < quorum:
		return readReleaseDecision{err: unavailable}
	case len(latched) >= quorum:
		if l, ok := agreedLatch(latched, quorum); ok {
			return readReleaseDecision{reply: l}
		}
		return readReleaseDecision{err: unavailable}
	case held >= quorum:
		d := readReleaseDecision{reply: Value{Kind: ValueInt}}
		if free >= quorum {
			d.reply.Int, d.publish = 1, fresh > 0
		}
		return d
	case notHeld >= quorum:
		return readReleaseDecision{reply: Value{Kind: ValueNil}, publish: free >= quorum}
	}
	return readReleaseDecision{err: unavailable}
}

// agreedLatch returns the latched answer that at least quorum of
// latched agree on.
func agreedLatch(latched []Value, quorum int) (Value, bool) {
	for _, l := range latched {
		n := 0
		for _, w := range latched {
			if w.equal(l) {
				n++
			}
		}
		if n >= quorum {
			return l, true
		}
	}
	return Value{}, false
}

// errRenewReply: a node's renewal answered for another number of locks.
var errRenewReply = errors.New("lock renewal answered for another number of keys")

// decideRenew decides a watchdog renewal (RenewRead, RenewLocks) key by key, each by decide:
// renewed (1) when a quorum of counted nodes renewed it with validity
// left (ttl, from start to now), 0 when the answers decided against it
// (no name held it there) or validity ran out; when the failed nodes
// could have changed a key's outcome, the whole call is unavailable
// (Redisson stops renewing a lock answered 0: a guess would drop a lock
// still held). results[i] are node i's answers, one per key.
func decideRenew(results []result[[]int64], counted []bool, quorum, keys int, ttl time.Duration, start, now time.Time, driftFactor float64) ([]int64, error) {
	out := make([]int64, keys)
	ballots := make([]ballot, len(results))
	for j := range keys {
		for i, r := range results {
			b := ballot{err: r.err, ttl: ttl, counts: counted[i]}
			if b.err == nil && len(r.v) != keys {
				b.err = &NodeError{Node: i, Err: errRenewReply}
			}
			b.granted = b.err == nil && r.v[j] == 1
			ballots[i] = b
		}
		d := decide(ballots, quorum, start, now, driftFactor)
		switch {
		case d.err == nil:
			out[j] = 1
		case !errors.Is(d.err, ErrDenied):
			return nil, orWrongType(d.err, results, counted, quorum)
		}
	}
	return out, nil
}

// decideReadForce decides a forceUnlock: 1 when any node that answered
// deleted the lock (it is gone wherever it was locked so), 0 when
// none did; unavailable when fewer than a quorum of counted nodes
// answered, since those that did not may hold it.
func decideReadForce(results []result[int64], counted []bool, quorum int, failures error) (int64, error) {
	o := Outcome{Total: len(results)}
	var deleted int64
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
			continue
		case r.v == 1:
			deleted = 1
		}
		if counted[i] {
			o.Granted++
		} else {
			o.Quarantined++
		}
	}
	if o.Granted < quorum {
		return 0, orWrongType(&OutcomeError{Outcome: o, Unavailable: true, Failures: failures}, results, counted, quorum)
	}
	return deleted, nil
}

// WriteRelease is one node's answer to a write lock's unlock.
type WriteRelease struct {
	// Latched: an earlier run of the same request answered latch here.
	Latched bool
	Latch   Value
	// Outcome is relNotHeld, relCounted or relReleased (Flag: the
	// lock was gone, or the hash is gone now).
	Outcome uint8
	Flag    bool
}

// A write unlock's outcomes on a node (rwlock_wunlock.lua).
const (
	relNotHeld  = 1 // the name held nothing (flag: there was no lock)
	relCounted  = 2 // one hold counted down, one left
	relReleased = 3 // its last hold released (flag: the hash is gone)
)

// decideWriteRelease decides a write lock's unlock as one Redis answers
// it, from a quorum of agreeing answers: 0 when a quorum counted a hold
// down (the writer still holds it there, so it may go on), 1 when a
// quorum released its last hold (the message is due when a quorum has
// no lock left), nil when a quorum held nothing of it (the message is
// due when a quorum had no lock, as one Redis publishes then). An
// earlier run's latched answer counts as the outcome it latched (0 a
// count-down, 1 a release); any other split, or fewer answers, is
// unavailable: a 0 may be answered only where a quorum still holds.
func decideWriteRelease(results []result[WriteRelease], counted []bool, quorum int, failures error) readReleaseDecision {
	o := Outcome{Total: len(results)}
	var by [4]int // per outcome
	free, gone := 0, 0
	var latched []Value
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
			continue
		case !counted[i]:
			o.Quarantined++
			continue
		case r.v.Latched:
			latched = append(latched, r.v.Latch)
			if r.v.Latch.Kind == ValueInt && (r.v.Latch.Int == 0 || r.v.Latch.Int == 1) {
				by[relCounted+int(r.v.Latch.Int)]++
			}
			continue
		}
		by[r.v.Outcome]++
		switch {
		case r.v.Outcome == relReleased && r.v.Flag:
			free++
		case r.v.Outcome == relNotHeld && r.v.Flag:
			gone++
		}
	}
	o.Granted, o.Denied = by[relCounted]+by[relReleased]+len(latched), by[relNotHeld]
	unavailable := orWrongType(&OutcomeError{Outcome: o, Unavailable: true, Failures: failures}, results, counted, quorum)
	switch {
	case len(latched) >= quorum:
		if l, ok := agreedLatch(latched, quorum); ok {
			return readReleaseDecision{reply: l}
		}
	case by[relCounted] >= quorum:
		return readReleaseDecision{reply: Value{Kind: ValueInt}}
	case by[relReleased] >= quorum:
		return readReleaseDecision{reply: Value{Kind: ValueInt, Int: 1}, publish: free >= quorum}
	case by[relNotHeld] >= quorum:
		return readReleaseDecision{reply: Value{Kind: ValueNil}, publish: gone >= quorum}
	}
	return readReleaseDecision{err: unavailable}
}
