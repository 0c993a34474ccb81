package quorum

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The exhaustive checker of issue 16: the REAL decision (decideEffect)
// over every small world, against one Redis.
//
// It feeds the decision recorded node outcomes: each node's run is
// computed by a small Go model of what the script does on one Redis
// (effectmodel_test.go), and what the wrapper would report of it
// (KeyEffect) is derived from the node's state before and after. Real
// redis-servers running the real wrapper would be far too slow for the
// state space (millions of runs); the wrapper's reports are tested on
// real servers apart (effect_test.go, effectwrap_test.go), so what is
// proved here is the decision: every world of 3 and 5 nodes, 1 or 2 keys,
// each node up, quarantined, failed after it ran (its reply lost) or
// failed before it ran (its dial refused), each key free, held by the
// caller (on a quorum, or as a stale copy on a minority), or by other
// clients, with every script of the grammar, one call or sequences of
// two. A call the decision allows to be tried again (mayRetry) is tried
// again on the world its first attempt and undo left, as the proxy does.
//
// Checked after each call, once the decision's undo is applied:
//   - a key decided held for the caller is held by its token, with the
//     ttl the validity was computed from, on a quorum of counted nodes;
//   - no two clients are told they hold one lock at once, and no more
//     clients than its limit are told they hold a semaphore (told: a
//     quorum held it in the world the call started from, or a call was
//     answered "held"; a release attempt gives it up);
//   - an undo removes, on a node that answered, only holders the run
//     added there; on a node that failed, only the caller's, and only of a
//     key the caller did not hold on a quorum before;
//   - a refused run leaves every node's holders as they were;
//   - one client command changes each node at most once: tried again, a
//     node ends as one run (from its state with an undo's removals of
//     the caller's holders) and an undo leave it;
//   - an answer is one a single Redis gives: some state of the keys the
//     nodes show (a quorum's holders always in it), run by the same
//     script, gives the same reply and did the same to every key;
//   - with every node up and alike, the call is answered (no NOQUORUM).

// avail is one node's part in a run.
type avail uint8

const (
	nodeUp avail = iota
	nodeQuarantined
	nodeLost // ran the script, its reply lost: failed
	nodeCut  // failed before the script reached it: its dial refused
)

// mNode is one node of a world.
type mNode struct {
	a avail
	s mState
}

// checkParams is one sweep: worlds of n nodes over one script family.
type checkParams struct {
	n       int
	avails  []avail
	scripts []mScript // one call, or two in a row (sequences)
	callers []string
	// multiset: nodes are enumerated as a multiset (non-decreasing
	// option index) rather than every order.
	multiset bool
	seq      bool
	// maxDown bounds how many nodes are not up: more only adds worlds
	// where nothing can be decided.
	maxDown int
	// elapsed is the run's time (mElapsed if zero): near the ttl, takes
	// have little or no validity left.
	elapsed time.Duration
}

// checkStats counts what a sweep covered.
type checkStats struct {
	worlds, runs, answered, noQuorum, refused, retried int
}

// checker runs sweeps against one decision and collects violations.
type checker struct {
	decide     decideFunc
	stats      checkStats
	violations []string
	stopAt     int // stop once this many violations are found; 0: never
}

func (c *checker) done() bool { return c.stopAt > 0 && len(c.violations) >= c.stopAt }

const (
	mTTL     = 10_000 // ms: what calls ask for
	mHeldExp = 8_000  // ms: what holds in a world have left
)

var (
	mElapsed     = 5 * time.Millisecond
	mNodeTimeout = 50 * time.Millisecond
	errLostReply = errors.New("i/o timeout")
	// errDialRefused proves the run never reached the node.
	errDialRefused = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
)

func (c *checker) fail(format string, args ...any) {
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// keyStates are the states a key of kind k may start in, over clients A,
// B (and C for a semaphore of 2).
func keyStates(k mKind, limit int) []mKey {
	e := func(toks ...string) mKey {
		var k mKey
		for _, t := range toks {
			k = k.put(mEntry{tok: t, exp: mHeldExp, n: 1})
		}
		return k
	}
	switch {
	case k == mHash:
		return []mKey{nil, e("A"), {{tok: "A", exp: mHeldExp, n: 2}}, e("B")}
	case k == mZset && limit >= 2:
		return []mKey{nil, e("A"), e("B"), e("C"), e("A", "B"), e("A", "C"), e("B", "C")}
	}
	return []mKey{nil, e("A"), e("B")}
}

// nodeOptions are every state one node may start in for the scripts'
// keys, with each availability.
func nodeOptions(sc mScript, avails []avail) []mNode {
	states := []mState{{}}
	for _, k := range sc.keys {
		var next []mState
		for _, s := range states {
			for _, ks := range keyStates(k, sc.limit) {
				next = append(next, append(s.clone(), slices.Clone(ks)))
			}
		}
		states = next
	}
	var out []mNode
	for _, a := range avails {
		for _, s := range states {
			out = append(out, mNode{a: a, s: s})
		}
	}
	return out
}

// sweep enumerates p's worlds and checks each call (or sequence) in them.
func (c *checker) sweep(p checkParams) {
	opts := nodeOptions(p.scripts[0], p.avails)
	w := make([]mNode, p.n)
	var rec func(i, from, down int)
	rec = func(i, from, down int) {
		if c.done() {
			return
		}
		if i == p.n {
			c.world(p, w)
			return
		}
		start := 0
		if p.multiset {
			start = from
		}
		for o := start; o < len(opts); o++ {
			d := down
			if opts[o].a != nodeUp {
				d++
			}
			if d > p.maxDown {
				continue
			}
			w[i] = opts[o] // never changed: a call works on clones
			rec(i+1, o, d)
		}
	}
	rec(0, 0, 0)
}

func (c *checker) world(p checkParams, w []mNode) {
	q := p.n/2 + 1
	sc := p.scripts[0]
	told := make([][]string, len(sc.keys))
	for j := range sc.keys {
		told[j] = quorumHolders(w, j, q, false)
		if l := sc.keyLimit(j); l > 0 && len(told[j]) > l {
			return // a world no correct proxy leads to
		}
	}
	c.stats.worlds++
	if !p.seq {
		for _, sc := range p.scripts {
			for _, tok := range p.callers {
				c.call(w, sc, tok, cloneTold(told), p.elapsed)
			}
		}
		return
	}
	for _, s1 := range p.scripts {
		for _, t1 := range p.callers {
			w1, told1 := c.call(w, s1, t1, cloneTold(told), p.elapsed)
			if w1 == nil {
				continue
			}
			for _, s2 := range p.scripts {
				for _, t2 := range p.callers {
					c.call(w1, s2, t2, cloneTold(told1), p.elapsed)
				}
			}
		}
	}
}

func cloneTold(t [][]string) [][]string {
	c := make([][]string, len(t))
	for i := range t {
		c[i] = slices.Clone(t[i])
	}
	return c
}

// quorumHolders are the clients holding key j on at least q nodes (only
// the counted ones, if counted).
func quorumHolders(w []mNode, j, q int, counted bool) []string {
	var out []string
	for _, t := range []string{"A", "B", "C"} {
		n := 0
		for _, nd := range w {
			if (!counted || nd.a == nodeUp) && nd.s[j].find(t) >= 0 {
				n++
			}
		}
		if n >= q {
			out = append(out, t)
		}
	}
	return out
}

// call runs sc for caller tok on world w as the proxy does: one attempt,
// decided and undone, and, where the decision allows it, one more on the
// world the first left. It checks each attempt and that the command
// changed each node at most once, and returns the world after and who is
// told what (nil when a violation ends the sequence).
func (c *checker) call(w []mNode, sc mScript, tok string, told [][]string, elapsed time.Duration) ([]mNode, [][]string) {
	if elapsed == 0 {
		elapsed = mElapsed
	}
	after, d, gaveUp := c.attempt(w, sc, tok, elapsed)
	if after == nil {
		return nil, nil
	}
	if d.retry {
		c.stats.retried++
		var gaveUp2 []bool
		w1 := after
		if after, d, gaveUp2 = c.attempt(w1, sc, tok, elapsed); after == nil {
			return nil, nil
		}
		for j := range gaveUp {
			gaveUp[j] = gaveUp[j] || gaveUp2[j]
		}
		if i := appliedTwice(w, after, sc, tok); i >= 0 {
			c.fail("%s by %s over %s: tried again over %s, node %d ends as %v, not what one run (and its undo) leaves",
				sc.name, tok, worldString(w), worldString(w1), i, after[i].s)
			return nil, nil
		}
	}
	where := func() string { return fmt.Sprintf("%s by %s over %s (%v)", sc.name, tok, worldString(w), elapsed) }

	// Who is told what: a key answered held is the caller's; a release
	// attempt gives it up, however it is answered.
	for j := range sc.keys {
		if gaveUp[j] {
			told[j] = slices.DeleteFunc(told[j], func(t string) bool { return t == tok })
		}
		if d.err == nil && d.keys[j] == keyHeld && !slices.Contains(told[j], tok) {
			told[j] = append(told[j], tok)
		}
		if limit := sc.keyLimit(j); limit > 0 && len(told[j]) > limit {
			c.fail("%s: %v are told they hold key %d (limit %d)", where(), told[j], j, limit)
			return nil, nil
		}
	}
	return after, told
}

// appliedTwice returns a node whose state after a command tried twice is
// not one that a single run of sc leaves, or -1. A single run may start
// from the node's state with the caller's holders of some keys removed
// (an undo of a node that failed may remove them), and the caller's
// holders of some keys may be removed after it (its undo).
func appliedTwice(w, after []mNode, sc mScript, tok string) int {
	nk := len(sc.keys)
	strip := func(s mState, keys int) mState {
		s = s.clone()
		for j := range nk {
			if keys&(1<<j) != 0 {
				s[j] = s[j].remove(tok)
			}
		}
		return s
	}
	same := func(a, b mState) bool {
		return slices.EqualFunc(a, b, func(x, y mKey) bool { return slices.Equal(x, y) })
	}
	for i, nd := range w {
		ok := false
		for from := 0; from < 1<<nk && !ok; from++ {
			b := strip(nd.s, from)
			r := &mRun{s: b.clone(), tok: tok, ttl: mTTL, limit: sc.limit}
			if _, refused := sc.run(r); refused {
				r.s = b
			}
			for undo := 0; undo < 1<<nk && !ok; undo++ {
				ok = same(after[i].s, strip(b, undo)) || same(after[i].s, strip(r.s, undo))
			}
		}
		if !ok {
			return i
		}
	}
	return -1
}

// attempt runs sc for caller tok once on world w, decides it, applies the
// undo and checks the result. It returns the world after (nil when a
// violation ends the sequence), the decision, and the keys the run took
// the caller's holder away from somewhere (a release attempt).
func (c *checker) attempt(w []mNode, sc mScript, tok string, elapsed time.Duration) ([]mNode, effectDecision, []bool) {
	c.stats.runs++
	n, q := len(w), len(w)/2+1
	after := make([]mNode, n)
	results := make([]result[NodeEffect], n)
	counted := make([]bool, n)
	refusedAny := false
	ran := make([]bool, n) // the script changed the node (not refused)
	for i, nd := range w {
		after[i] = mNode{a: nd.a, s: nd.s.clone()}
		counted[i] = nd.a == nodeUp
		if nd.a == nodeCut {
			results[i] = failedVote(errDialRefused)
			continue
		}
		r := &mRun{s: after[i].s, tok: tok, ttl: mTTL, limit: sc.limit}
		reply, refused := sc.run(r)
		if refused {
			after[i].s = nd.s.clone()
			refusedAny = true
			results[i] = result[NodeEffect]{v: NodeEffect{Refused: "it removes or overwrites another token's hold"}}
			continue
		}
		after[i].s, ran[i] = r.s, true
		results[i] = vote(reply, mEffects(nd.s, r.s, tok)...)
		if nd.a == nodeLost {
			results[i] = failedVote(errLostReply)
		}
	}
	d := c.decide(effectVotes{results: results, nkeys: len(sc.keys), counted: counted, quorum: q,
		elapsed: elapsed, nodeTimeout: mNodeTimeout, driftFactor: 0.01})
	where := func() string { return fmt.Sprintf("%s by %s over %s (%v)", sc.name, tok, worldString(w), elapsed) }

	// A release attempt: the run took the caller's holder away somewhere.
	gaveUp := make([]bool, len(sc.keys))
	for j := range sc.keys {
		for i := range w {
			gaveUp[j] = gaveUp[j] || ran[i] && w[i].s[j].find(tok) >= 0 && after[i].s[j].find(tok) < 0
		}
	}

	// The undo: only what the run took.
	beforeQ := make([][]string, len(sc.keys))
	for j := range sc.keys {
		beforeQ[j] = quorumHolders(w, j, q, false)
	}
	for i, us := range d.undo {
		for _, u := range us {
			k := after[i].s[u.Key]
			for _, e := range k {
				if !slices.Contains(u.Tokens, e.tok) {
					continue
				}
				switch {
				case w[i].a == nodeUp || w[i].a == nodeQuarantined:
					if w[i].s[u.Key].find(e.tok) >= 0 {
						c.fail("%s: the undo removes %s's hold of key %d on node %d, which the run did not take", where(), e.tok, u.Key, i)
						return nil, effectDecision{}, nil
					}
				case e.tok != tok:
					c.fail("%s: the undo removes another token (%s) of key %d on failed node %d", where(), e.tok, u.Key, i)
					return nil, effectDecision{}, nil
				case slices.Contains(beforeQ[u.Key], tok):
					c.fail("%s: the undo removes the caller's hold of key %d on failed node %d, held on a quorum before", where(), u.Key, i)
					return nil, effectDecision{}, nil
				}
			}
			after[i].s[u.Key] = mUndo(k, u.Tokens)
		}
	}

	var refusedErr *RefusedError
	switch {
	case errors.As(d.err, &refusedErr):
		c.stats.refused++
		for i := range w {
			if w[i].a == nodeLost || w[i].a == nodeCut {
				// What a node that failed holds is unknown to the proxy:
				// undone as after any denied take (landedKeys; the undo
				// check above), else it lasts until its TTL.
				continue
			}
			for j := range sc.keys {
				if !sameHolders(w[i].s[j], after[i].s[j]) {
					c.fail("%s: a refused run leaves node %d key %d as %v (was %v)", where(), i, j, after[i].s[j], w[i].s[j])
					return nil, effectDecision{}, nil
				}
			}
		}
	case d.err != nil:
		c.stats.noQuorum++
		if refusedAny {
			c.fail("%s: a node refused but the run is answered %v", where(), d.err)
		}
		var oe *OutcomeError
		if allAlike(w) && !(errors.As(d.err, &oe) && oe.Expired) {
			c.fail("%s: every node up and alike, but the call is answered %v", where(), d.err)
		}
	default:
		c.stats.answered++
		if refusedAny {
			c.fail("%s: a node refused but the run is answered", where())
			return nil, effectDecision{}, nil
		}
		if !c.oneRedis(w, sc, tok, d, results[d.reply].v.Reply) {
			c.fail("%s: answered %v with keys %v: no single Redis in a state the nodes show answers so", where(), results[d.reply].v.Reply, d.keys)
			return nil, effectDecision{}, nil
		}
		if d.granted {
			for j, k := range d.keys {
				if k != keyHeld {
					continue
				}
				holding := 0
				for _, nd := range after {
					if i := nd.s[j].find(tok); nd.a == nodeUp && i >= 0 && time.Duration(nd.s[j][i].exp)*time.Millisecond >= d.ttl {
						holding++
					}
				}
				if holding < q {
					c.fail("%s: key %d answered held (ttl %v) but %d counted nodes hold it", where(), j, d.ttl, holding)
					return nil, effectDecision{}, nil
				}
				if v := validity(d.ttl, elapsed, 0.01); v <= 0 || d.validity > v {
					c.fail("%s: key %d answered held with validity %v; %v is left", where(), j, d.validity, v)
					return nil, effectDecision{}, nil
				}
			}
		}
	}

	return after, d, gaveUp
}

// oneRedis reports whether some state of the keys that the nodes show,
// with every client holding a key on a quorum of counted nodes in it, run
// by sc for tok, replies reply and does to each key what d decided.
func (c *checker) oneRedis(w []mNode, sc mScript, tok string, d effectDecision, reply Value) bool {
	q := len(w)/2 + 1
	cands := make([][]mKey, len(sc.keys))
	for j := range sc.keys {
		must := quorumHolders(w, j, q, true)
		for _, nd := range w {
			if nd.a != nodeUp || slices.ContainsFunc(cands[j], func(k mKey) bool { return slices.Equal(k, nd.s[j]) }) {
				continue
			}
			if !slices.ContainsFunc(must, func(t string) bool { return nd.s[j].find(t) < 0 }) {
				cands[j] = append(cands[j], nd.s[j])
			}
		}
	}
	var try func(j int, s mState) bool
	try = func(j int, s mState) bool {
		if j == len(sc.keys) {
			r := &mRun{s: s.clone(), tok: tok, ttl: mTTL, limit: sc.limit}
			got, refused := sc.run(r)
			if refused || !got.equal(reply) {
				return false
			}
			for k, e := range mEffects(s, r.s, tok) {
				if o, _ := nodeKeyOutcome(e, 0.01); o != d.keys[k] {
					return false
				}
			}
			return true
		}
		for _, k := range cands[j] {
			if try(j+1, append(s, k)) {
				return true
			}
		}
		return false
	}
	return try(0, nil)
}

// allAlike reports whether every node is up and holds the same.
func allAlike(w []mNode) bool {
	for _, nd := range w {
		if nd.a != nodeUp || !slices.EqualFunc(nd.s, w[0].s, func(a, b mKey) bool { return slices.Equal(a, b) }) {
			return false
		}
	}
	return true
}

// sameHolders reports whether two states of a key have the same holders.
func sameHolders(a, b mKey) bool {
	return slices.EqualFunc(a, b, func(x, y mEntry) bool { return x.tok == y.tok })
}

func worldString(w []mNode) string {
	var b strings.Builder
	for i, nd := range w {
		if i > 0 {
			b.WriteString(" | ")
		}
		b.WriteString([]string{"up", "quarantined", "lost", "cut"}[nd.a])
		for _, k := range nd.s {
			b.WriteString(" ")
			if len(k) == 0 {
				b.WriteString("-")
			}
			for _, e := range k {
				b.WriteString(e.tok)
				if e.n > 1 {
					fmt.Fprintf(&b, "x%d", e.n)
				}
			}
		}
	}
	return b.String()
}

// familiesOf groups the grammar's scripts by the kinds of keys they use,
// so that a world's keys suit every script run in it.
func familiesOf(scripts []mScript) [][]mScript {
	var fams [][]mScript
	for _, sc := range scripts {
		i := slices.IndexFunc(fams, func(f []mScript) bool {
			return slices.Equal(f[0].keys, sc.keys) && f[0].limit == sc.limit
		})
		if i < 0 {
			fams = append(fams, []mScript{sc})
		} else {
			fams[i] = append(fams[i], sc)
		}
	}
	return fams
}

// runChecker sweeps every family of the grammar over worlds of 3 and 5
// nodes with decide, and returns what it covered and found.
func runChecker(decide decideFunc, scripts []mScript, sizes []int, stopAt int) *checker {
	c := &checker{decide: decide, stopAt: stopAt}
	all := []avail{nodeUp, nodeQuarantined, nodeLost, nodeCut}
	for _, fam := range familiesOf(scripts) {
		callers := []string{"A"}
		if fam[0].limit >= 2 {
			callers = []string{"A", "C"}
		}
		for _, n := range sizes {
			// One call: every order of 3 nodes, every multiset of 5 with
			// at most 2 not up (3 down decides nothing), 1 for two keys.
			down := n - n/2
			if n > 3 && len(fam[0].keys) > 1 {
				down = 1
			}
			c.sweep(checkParams{n: n, avails: all, scripts: fam, callers: callers, multiset: n > 3, maxDown: down})
			// Sequences of two calls by two clients, for single-key
			// families (at most 1 of 3 nodes not up, 2 of 5).
			if len(fam[0].keys) == 1 {
				c.sweep(checkParams{n: n, avails: all, scripts: fam, callers: []string{"A", "B"}, multiset: n > 3, seq: true, maxDown: (n - 1) / 2})
			}
		}
		// Runs that leave a take 8ms of validity, or none (ttl 10s,
		// drift 102ms), over every order of 3 nodes.
		for _, elapsed := range []time.Duration{9890 * time.Millisecond, 9900 * time.Millisecond} {
			c.sweep(checkParams{n: 3, avails: all, scripts: fam, callers: callers, maxDown: 2, elapsed: elapsed})
		}
	}
	return c
}

// TestEffectDecisionExhaustive runs the checker over the real decision.
func TestEffectDecisionExhaustive(t *testing.T) {
	start := time.Now()
	c := runChecker(decideEffect, mScripts, []int{3, 5}, 0)
	t.Logf("%d worlds, %d runs decided (%d answered, %d no quorum, %d refused; %d tried again) in %v",
		c.stats.worlds, c.stats.runs, c.stats.answered, c.stats.noQuorum, c.stats.refused, c.stats.retried, time.Since(start).Round(time.Millisecond))
	for _, v := range c.violations {
		t.Error(v)
	}
}

// TestEffectCheckerCatchesBrokenDecisions is the checker's negative
// control: decisions broken as the proxy's once were must fail it.
func TestEffectCheckerCatchesBrokenDecisions(t *testing.T) {
	semaphores := slices.DeleteFunc(slices.Clone(mScripts), func(sc mScript) bool { return sc.limit == 0 })
	hashes := slices.DeleteFunc(slices.Clone(mScripts), func(sc mScript) bool { return sc.keys[0] != mHash })
	for _, tt := range []struct {
		name    string
		decide  decideFunc
		scripts []mScript
	}{
		{"the first answering node's reply", decideFirstReply, mScripts},
		{"one verdict per node across keys", decidePerNode, mScripts},
		{"no rule for keys other tokens hold", decideNoShared, semaphores},
		{"validity not charged the run's time", decideNoElapsed, mScripts},
		{"no validity asked of a key held beside a release", decideReleaseNoValidity, mScripts},
		{"any split hold tried again", decideRetryAnySplit, mScripts},
		{"a split re-entry tried again", decideRetryAnySplit, hashes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := runChecker(tt.decide, tt.scripts, []int{3, 5}, 1)
			if len(c.violations) == 0 {
				t.Fatalf("the checker passes a broken decision (%d runs)", c.stats.runs)
			}
			t.Logf("%d runs; first violation: %s", c.stats.runs, c.violations[0])
		})
	}
}

// decideFirstReply decides as decideEffect but answers with the first
// answering node's reply.
func decideFirstReply(v effectVotes) effectDecision {
	d := decideEffect(v)
	if d.err == nil {
		d.reply = slices.IndexFunc(v.results, func(r result[NodeEffect]) bool { return r.err == nil && r.v.Refused == "" })
	}
	return d
}

// decideRetryAnySplit decides as decideEffect, but any hold that fails
// undecided with the answering nodes split is tried again, as the proxy
// did: a re-entry counted on some nodes and not undone is counted twice.
func decideRetryAnySplit(v effectVotes) effectDecision {
	d := decideEffect(v)
	var oe *OutcomeError
	if errors.As(d.err, &oe) && oe.Unavailable && oe.Outcome.Granted > 0 && oe.Outcome.Denied > 0 {
		d.retry = d.op == EffectHold
	}
	return d
}

// decideNoElapsed decides as decideEffect as if the run took no time.
func decideNoElapsed(v effectVotes) effectDecision {
	v.elapsed = 0
	return decideEffect(v)
}

// decideReleaseNoValidity decides as decideEffect, but a run that
// released a key somewhere is charged no time: a key it took beside the
// release (a hand-off) is answered held with validity it does not have.
func decideReleaseNoValidity(v effectVotes) effectDecision {
	for _, o := range perNodeOutcomes(v) {
		if slices.Contains(o, keyReleased) {
			v.elapsed = 0
		}
	}
	return decideEffect(v)
}

// decideNoShared decides as decideEffect with no node reporting other
// tokens' holders: a semaphore's key is decided by a quorum.
func decideNoShared(v effectVotes) effectDecision {
	rs := slices.Clone(v.results)
	for i := range rs {
		keys := slices.Clone(rs[i].v.Keys)
		for j := range keys {
			keys[j].Others = 0
		}
		rs[i].v.Keys = keys
	}
	v.results = rs
	return decideEffect(v)
}

// decidePerNode is the decision as it was before issue 16: one verdict
// per node across all keys (classifyEffect), a hold granted by a quorum
// of nodes that held anything, the first granting (or denying) node's
// reply, and every new take undone on a denial.
func decidePerNode(v effectVotes) effectDecision {
	n := len(v.results)
	d := effectDecision{reply: -1, keys: make([]keyOutcome, v.nkeys), landed: make([][]KeyUndo, n), undo: make([][]KeyUndo, n)}
	ops := make([]EffectOp, n)
	holds := make([]time.Duration, n)
	anyHold, anyRelease := false, false
	for i, r := range v.results {
		if r.err == nil && r.v.Refused != "" {
			d.err = &RefusedError{Reason: r.v.Refused}
		}
		if r.err == nil && r.v.Refused == "" {
			ops[i], holds[i] = classifyEffect(r.v.Keys, v.driftFactor)
			anyHold = anyHold || ops[i] == EffectHold
			anyRelease = anyRelease || ops[i] == EffectRelease
		}
	}
	d.landedKeys(v, perNodeOutcomes(v))
	if d.err != nil {
		d.undo = d.landed
		return d
	}
	op := EffectRead
	switch {
	case anyRelease:
		op = EffectRelease
	case anyHold:
		op = EffectHold
	}
	granted, first, firstDenied := 0, -1, -1
	var set []time.Duration
	for i, r := range v.results {
		switch {
		case r.err != nil, !v.counted[i]:
		case ops[i] == op:
			granted++
			set = append(set, holds[i])
			if first < 0 {
				first = i
			}
		case firstDenied < 0:
			firstDenied = i
		}
	}
	d.op = op
	if granted < v.quorum {
		d.reply = firstDenied
		if firstDenied < 0 {
			d.err = &OutcomeError{Unavailable: true}
		}
		d.undo = d.landed
		return d
	}
	d.granted, d.reply = true, first
	for i, r := range v.results {
		if i == first {
			for j := range v.nkeys {
				d.keys[j], _ = nodeKeyOutcome(keyOf(r.v, j), v.driftFactor)
			}
		}
	}
	if op == EffectHold {
		d.ttl, _ = quorumTTL(set, v.quorum)
		d.validity = validity(d.ttl, v.elapsed, v.driftFactor)
	}
	return d
}

// perNodeOutcomes are every answering node's outcome on every key.
func perNodeOutcomes(v effectVotes) [][]keyOutcome {
	outs := make([][]keyOutcome, len(v.results))
	for i, r := range v.results {
		if r.err != nil || r.v.Refused != "" {
			continue
		}
		outs[i] = make([]keyOutcome, v.nkeys)
		for j := range v.nkeys {
			outs[i][j], _ = nodeKeyOutcome(keyOf(r.v, j), v.driftFactor)
		}
	}
	return outs
}
