package quorum

import (
	"errors"
	"net"
	"slices"
	"time"
)

// keyOutcome is what one node's run did to one key, or (in a decision)
// what a quorum of counted nodes agrees the run did to it.
type keyOutcome uint8

const (
	// keyKept: no lock changed hands. The run read the key, left it as
	// it was, or changed it without an own holder taking or leaving it
	// (a hold within the drift allowance, such as Symfony's PX 1 probe,
	// is none).
	keyKept keyOutcome = iota
	// keyHeld: the run changed the key and an own holder holds it after,
	// for longer than the drift allowance: taken new, or extended.
	keyHeld
	// keyReleased: an own holder held the key before and none does after.
	keyReleased
	// keyNoQuorum: no outcome has a quorum (decisions only).
	keyNoQuorum
)

// nodeKeyOutcome classifies one node's report on one key; isNew is true
// for a hold that no own holder held before the run (a take, not an
// extend or a re-entry).
func nodeKeyOutcome(k KeyEffect, driftFactor float64) (o keyOutcome, isNew bool) {
	switch {
	case len(k.BeforeOwn) > 0 && len(k.AfterOwn) == 0:
		return keyReleased, false
	case k.Changed && len(k.AfterOwn) > 0 && k.Hold > drift(k.Hold, driftFactor):
		return keyHeld, len(k.BeforeOwn) == 0
	}
	return keyKept, false
}

// effectVotes is everything decideEffect reads: every node's answer to one
// run of a wrapped script, and how to count them.
type effectVotes struct {
	results []result[NodeEffect]
	nkeys   int    // distinct keys of the call; results[i].v.keys[j] is key j
	counted []bool // counted[i]: node i's answer counts (not quarantined)
	quorum  int
	// elapsed is the run's time, charged to validity; nodeTimeout bounds
	// how far apart two nodes' copies of one hold can have landed.
	elapsed, nodeTimeout time.Duration
	driftFactor          float64
	// room, if long enough, holds the decision's key outcomes: a caller's
	// scratch, which none of them outlives.
	room []keyOutcome
}

// KeyUndo is one key to give back on one node: each of tokens that holds
// it there is removed (compare-and-delete), then, if one did, each of
// markers that still has the value the run gave it.
type KeyUndo struct {
	Key     int // among the call's distinct keys
	Tokens  []string
	Markers []Marker
}

// effectDecision is how one run is answered, and what is undone.
type effectDecision struct {
	op      EffectOp
	granted bool
	reply   int   // the node whose reply is the answer; -1 for none
	err     error // *OutcomeError or *RefusedError; nil when answered
	keys    []keyOutcome
	// For held keys: the shortest of their quorum TTLs, the validity it
	// leaves, the fewest counted nodes holding one, and whether all of
	// them are new locks (held nowhere by an own holder before): a run
	// that extends one key and takes another (Redisson's unlock counting
	// down beside its latch) is an extend.
	ttl, validity time.Duration
	held          int
	took          bool
	// newLock: some held key is a new lock (held before by no holding
	// node), beside an extend or a release too.
	newLock bool
	// landed[i] is what the run may have taken new on node i: undone now
	// where undo[i] says so, and all of it if the proxy gives a granted
	// hold back later (UndoEffect).
	landed, undo [][]KeyUndo
	// retry: the run failed undecided, split, and once undone it leaves
	// nothing that another try would change again (mayRetry).
	retry bool
}

// decideFunc is the decision's type: the checker runs a broken one too.
type decideFunc func(effectVotes) effectDecision

// decideEffect decides a run key by key, as SET NX, compare-and-delete
// and compare-and-pexpire are decided: a key is held when a quorum of
// counted nodes holds it (every configured node, for a key other tokens
// also hold), released when a quorum released it, kept when a quorum
// left it as it was; anything else is no quorum. A held key needs
// validity left from its quorum's hold times. The answer is the reply of
// nodes whose outcome equals the decision on every key, and a quorum of
// them must give it; otherwise the run is no quorum. It does no I/O and
// reads no clock.
func decideEffect(v effectVotes) effectDecision {
	n := len(v.results)
	// One backing array each for the decided and every node's outcomes,
	// the landed and undone lists, and the landed keys: a node lands at
	// most one undo per key (landedKeys).
	flat := v.room
	if flat == nil || cap(flat) < (n+1)*v.nkeys {
		// Never nil: a node's outcomes are nil only when it did not answer.
		flat = make([]keyOutcome, (n+1)*v.nkeys)
	}
	flat = flat[:(n+1)*v.nkeys]
	clear(flat)
	lists := make([][]KeyUndo, 2*n)
	d := effectDecision{reply: -1, keys: flat[n*v.nkeys:], landed: lists[:n:n], undo: lists[n:]}
	var outsBuf [8][]keyOutcome
	outs := outsBuf[:0]
	if n > len(outsBuf) {
		outs = make([][]keyOutcome, 0, n)
	}
	outs = outs[:n]
	landed := make([]KeyUndo, 0, n*v.nkeys)
	for i := range n {
		d.landed[i] = landed[i*v.nkeys : i*v.nkeys : (i+1)*v.nkeys]
	}
	var refused string
	anyHeld, anyReleased := false, false
	for i, r := range v.results {
		switch {
		case r.err != nil:
		case r.v.Refused != "":
			if refused == "" {
				refused = r.v.Refused
			}
		default:
			outs[i] = flat[i*v.nkeys : (i+1)*v.nkeys : (i+1)*v.nkeys]
			for j := range v.nkeys {
				o, _ := nodeKeyOutcome(keyOf(r.v, j), v.driftFactor)
				outs[i][j] = o
				anyHeld = anyHeld || o == keyHeld
				anyReleased = anyReleased || o == keyReleased
			}
		}
	}
	d.landedKeys(v, outs)
	fails := failures(v.results)
	switch {
	case anyReleased:
		d.op = EffectRelease
	case anyHeld:
		d.op = EffectHold
	}
	if refused != "" {
		d.undo, d.err = d.landed, &RefusedError{Reason: refused}
		return d
	}

	// Each key by its own quorum.
	var lack *Outcome
	ttl := time.Duration(-1)
	d.held = n
	var holdsBuf [8]time.Duration
	for j := range v.nkeys {
		o, need, holds := v.tally(outs, j, holdsBuf[:0])
		if o.held > 0 && o.held < need && !v.tookNew(outs, j) {
			o, holds = v.unchangedHolds(outs, j, o, holds)
		}
		switch {
		case o.held >= need:
			d.keys[j] = keyHeld
			t, _ := quorumTTL(holds, need)
			if ttl < 0 || t < ttl {
				ttl = t
			}
			d.held = min(d.held, o.held)
		case o.released >= v.quorum:
			d.keys[j] = keyReleased
		case o.kept >= v.quorum:
			d.keys[j] = keyKept
		default:
			d.keys[j] = keyNoQuorum
			if lack == nil {
				lack = &Outcome{}
				*lack = o.outcome(n)
			}
		}
	}
	if lack != nil {
		d.undo, d.err = d.landed, &OutcomeError{Outcome: *lack, Unavailable: true, Failures: fails}
		d.retry = d.mayRetry(v, *lack)
		return d
	}
	// Every held key needs validity left, beside a release too: a reply
	// may promise any key the run holds (a hand-off releases one lock and
	// takes the next), so none is held past its validity. A release done
	// on a quorum stays done; the run is then answered as expired.
	hasHeld, hasReleased := slices.Contains(d.keys, keyHeld), slices.Contains(d.keys, keyReleased)
	if hasHeld {
		d.ttl = ttl
		d.validity = validity(ttl, v.elapsed, v.driftFactor)
		if expired(d.validity) {
			o := Outcome{Total: n, Granted: d.held, Denied: v.answered() - d.held, Failed: v.failed()}
			d.undo, d.err = d.landed, &OutcomeError{Outcome: o, Expired: true, Failures: fails}
			return d
		}
	}

	// The reply: one that a quorum of the nodes that did what was decided
	// gave. Integers that read a time (a PTTL) agree within how far apart
	// the nodes can have read or written it.
	slack := int64((v.nodeTimeout + v.elapsed + 2*time.Millisecond) / time.Millisecond)
	var okBuf [8]bool
	ok := okBuf[:0]
	if n > len(okBuf) {
		ok = make([]bool, 0, n)
	}
	for i := range n {
		ok = append(ok, v.consistent(outs, i, d.keys))
	}
	best := 0
	for i := range n {
		if !ok[i] {
			continue
		}
		agree := 0
		for k := range n {
			if ok[k] && v.results[i].v.Reply.agrees(v.results[k].v.Reply, slack) {
				agree++
			}
		}
		best = max(best, agree)
		if agree >= v.quorum {
			d.reply = i
			break
		}
	}
	if d.reply < 0 {
		o := Outcome{Total: n, Granted: best, Denied: v.answered() - best, Failed: v.failed(), Quarantined: v.quarantined()}
		d.undo, d.err = d.landed, &OutcomeError{Outcome: o, Unavailable: true, Failures: fails}
		d.retry = d.mayRetry(v, o)
		return d
	}

	// Answered. Held keys stay; what a minority took of any other key is
	// given back.
	for j, k := range d.keys {
		d.newLock = d.newLock || (k == keyHeld && v.tookNew(outs, j))
	}
	switch {
	case hasReleased:
		d.op, d.granted = EffectRelease, true
	case hasHeld:
		d.op, d.granted, d.took = EffectHold, true, true
		for j, k := range d.keys {
			d.took = d.took && (k != keyHeld || v.tookNew(outs, j))
		}
	case d.op == EffectRelease, d.op == EffectHold:
		// Tried, and denied: the reply says so.
	default:
		d.op, d.granted = EffectRead, true
	}
	for i, l := range d.landed {
		for _, u := range l {
			if d.keys[u.Key] != keyHeld {
				d.undo[i] = append(d.undo[i], u)
			}
		}
	}
	return d
}

// mayRetry reports whether a run that failed undecided with outcome o,
// all it landed undone, may be sent once more (the proxy does, a moment
// later: most often a holder's key was expiring a few milliseconds apart
// on the nodes). It tried a hold, the nodes that answered split (some
// granted, some not), and no node keeps a change of it that another try
// would make again: one client command changes each node at most once (a
// re-entry counted twice stays counted twice). Every key an answering
// node changed is undone there (taken new), and a node that failed is
// either known not to have run it (never sent) or undone on every key an
// answering node changed.
func (d *effectDecision) mayRetry(v effectVotes, o Outcome) bool {
	if d.op != EffectHold || o.Granted == 0 || o.Denied == 0 {
		return false
	}
	undone := func(i, j int) bool {
		return slices.ContainsFunc(d.undo[i], func(u KeyUndo) bool { return u.Key == j })
	}
	changed := make([]bool, v.nkeys)
	for i, r := range v.results {
		if r.err != nil || r.v.Refused != "" {
			continue
		}
		for j := range v.nkeys {
			if keyOf(r.v, j).Changed {
				if !undone(i, j) {
					return false
				}
				changed[j] = true
			}
		}
	}
	for i, r := range v.results {
		if r.err == nil || unsent(r.err) {
			continue
		}
		for j := range v.nkeys {
			if changed[j] && !undone(i, j) {
				return false
			}
		}
	}
	return true
}

// unsent reports a node's failure that proves the run never reached it:
// a node down before the run (never called) or a refused dial.
func unsent(err error) bool {
	var oe *net.OpError
	return errors.Is(err, ErrNodeDown) || errors.As(err, &oe) && oe.Op == "dial"
}

// keyOf is node effect ne's report on key j (none when the node reported
// fewer keys).
func keyOf(ne NodeEffect, j int) KeyEffect {
	if j < len(ne.Keys) {
		return ne.Keys[j]
	}
	return KeyEffect{}
}

// keyTally counts the counted nodes' outcomes on one key.
type keyTally struct {
	held, released, kept, failed, quarantined int
}

// outcome is t as the error of a key that has no quorum: the outcome the
// run tried (held or released) counts as granted.
func (t keyTally) outcome(n int) Outcome {
	g, other := t.held, t.released
	if t.released > t.held {
		g, other = t.released, t.held
	}
	return Outcome{Total: n, Granted: g, Denied: t.kept + other, Failed: t.failed, Quarantined: t.quarantined}
}

// tally counts key j's outcomes over the counted nodes, and returns how
// many must hold it and the hold times of those that do (appended to
// buf). A key that other
// tokens also hold (a semaphore, a read lock), held by a caller that did
// not hold it on a quorum before, needs every configured node: quorums
// need not meet in a node that counts each of several holders against
// the key's limit (A on nodes 1-3 and B on 3-5 fill a semaphore of 2 on
// node 3 only; C would take 1, 2, 4 and 5). Held on every node, it is
// counted on each node with every other holder the proxy granted: the
// one that took the key alone (on a quorum where it met no other) and
// those that, as it, took it on every node.
func (v effectVotes) tally(outs [][]keyOutcome, j int, buf []time.Duration) (t keyTally, need int, holds []time.Duration) {
	need = v.quorum
	holds = buf
	shared, before := false, 0
	defer func() {
		if shared && before < v.quorum {
			need = len(v.results)
		}
	}()
	for i, r := range v.results {
		switch {
		case r.err != nil:
			t.failed++
			continue
		case r.v.Refused != "":
			continue
		case !v.counted[i]:
			t.quarantined++
			continue
		}
		k := keyOf(r.v, j)
		if len(k.BeforeOwn) > 0 {
			before++
		}
		switch outs[i][j] {
		case keyHeld:
			t.held++
			holds = append(holds, k.Hold)
			shared = shared || k.Others > 0
		case keyReleased:
			t.released++
		default:
			t.kept++
		}
	}
	return t, need, holds
}

// unchangedHolds counts, beside nodes that extended key j and changed
// nothing else, the counted nodes that changed nothing else either and
// where an own holder held j before and after, alone and for longer than
// the drift allowance, with its expiry as it was: an extend that landed
// in the millisecond of the hold's last change (a watchdog renewing right
// after the take) sets the expiry it had. They hold it as extended, and
// are marked so in outs. (A node that did something else, such as a
// lock-or-enqueue taking the lock where another enqueued, is not one.)
func (v effectVotes) unchangedHolds(outs [][]keyOutcome, j int, t keyTally, holds []time.Duration) (keyTally, []time.Duration) {
	only := func(i int, o keyOutcome) bool {
		for jj, x := range outs[i] {
			if (jj == j && x != o) || (jj != j && x != keyKept) {
				return false
			}
		}
		return true
	}
	// The shortest hold the extends left: an unchanged hold counts only
	// if it runs as long, but for PTTL's rounding: its own expiry is the
	// one the extend set, in the same millisecond, and each node reads
	// its hold in its own run, right after its write, so how long the
	// whole run took does not shorten it (a slow node would otherwise
	// widen the slack). A hold left shorter, say one the script did not
	// extend, would end the quorum before the caller expects.
	shortest := time.Duration(-1)
	for i, r := range v.results {
		if outs[i] != nil && v.counted[i] && only(i, keyHeld) && len(keyOf(r.v, j).BeforeOwn) > 0 {
			if h := keyOf(r.v, j).Hold; shortest < 0 || h < shortest {
				shortest = h
			}
		}
	}
	if shortest < 0 {
		return t, holds
	}
	least := shortest - 2*time.Millisecond
	for i, r := range v.results {
		if r.err != nil || r.v.Refused != "" || !v.counted[i] || outs[i] == nil || !only(i, keyKept) {
			continue
		}
		k := keyOf(r.v, j)
		if !k.Changed && len(k.BeforeOwn) > 0 && slices.Equal(k.BeforeOwn, k.AfterOwn) && k.Others == 0 && k.Hold > drift(k.Hold, v.driftFactor) && k.Hold >= least {
			outs[i][j] = keyHeld
			t.held++
			t.kept--
			holds = append(holds, k.Hold)
		}
	}
	return t, holds
}

// consistent reports whether node i counts and did on every key what was
// decided.
func (v effectVotes) consistent(outs [][]keyOutcome, i int, keys []keyOutcome) bool {
	return v.results[i].err == nil && v.counted[i] && outs[i] != nil && slices.Equal(outs[i], keys)
}

// tookNew reports whether no answering node that holds key j held it
// before: a new lock, not an extend or a re-entry.
func (v effectVotes) tookNew(outs [][]keyOutcome, j int) bool {
	for i, r := range v.results {
		if outs[i] != nil && outs[i][j] == keyHeld && len(keyOf(r.v, j).BeforeOwn) > 0 {
			return false
		}
	}
	return true
}

// landedKeys sets d.landed: on each answering node, every key it took
// new, with the holders it took it with. A node that failed may have
// taken a key with its reply lost, or may hold the client's earlier hold
// of it: it is counted as having taken key j only when no answering
// node held j before and so many counted nodes took j new that no
// quorum can have held the token before (quorums intersect); the holders
// to remove are those the others took j with, and no marker (what it
// wrote as one, and with which value, is unknown). A node down before
// the run was never called.
func (d *effectDecision) landedKeys(v effectVotes, outs [][]keyOutcome) {
	n := len(v.results)
	failed := slices.ContainsFunc(v.results, func(r result[NodeEffect]) bool { return r.err != nil })
	for j := range v.nkeys {
		var tokens []string
		takenNew := 0
		for i, r := range v.results {
			if outs[i] == nil || outs[i][j] != keyHeld {
				continue
			}
			k := keyOf(r.v, j)
			if len(k.BeforeOwn) > 0 {
				continue
			}
			d.landed[i] = append(d.landed[i], KeyUndo{Key: j, Tokens: k.AfterOwn, Markers: k.Markers})
			if v.counted[i] {
				takenNew++
			}
			for _, t := range k.AfterOwn {
				if failed && !slices.Contains(tokens, t) {
					tokens = append(tokens, t)
				}
			}
		}
		if !failed || !v.tookNew(outs, j) || takenNew < n-v.quorum+1 {
			continue
		}
		for i, r := range v.results {
			if r.err != nil && !errors.Is(r.err, ErrNodeDown) {
				d.landed[i] = append(d.landed[i], KeyUndo{Key: j, Tokens: tokens})
			}
		}
	}
}

func (v effectVotes) answered() int {
	a := 0
	for i, r := range v.results {
		if r.err == nil && r.v.Refused == "" && v.counted[i] {
			a++
		}
	}
	return a
}

func (v effectVotes) failed() int {
	f := 0
	for _, r := range v.results {
		if r.err != nil {
			f++
		}
	}
	return f
}

func (v effectVotes) quarantined() int {
	q := 0
	for i, r := range v.results {
		if r.err == nil && !v.counted[i] {
			q++
		}
	}
	return q
}

// agrees reports whether two replies are the same answer: equal, except
// that two integers of at least slack that differ by at most slack agree
// (a PTTL read on each node a few milliseconds apart). Small integers (a
// count, 0 or 1) must be equal.
func (a Value) agrees(b Value, slack int64) bool {
	if a.Kind != b.Kind || a.Str != b.Str || len(a.Items) != len(b.Items) {
		return false
	}
	if a.Int != b.Int && (a.Kind != ValueInt || a.Int < slack || b.Int < slack || max(a.Int-b.Int, b.Int-a.Int) > slack) {
		return false
	}
	for i := range a.Items {
		if !a.Items[i].agrees(b.Items[i], slack) {
			return false
		}
	}
	return true
}
