package quorum

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// An exhaustive state explorer for a failed acquire's undo (acquire.go's
// undoOf) over 3 masters and one key, with two clients: A re-enters by
// its token's prefix (bsm/redislock's obtain: its tokens A1 and A2 share
// the prefix "A", and each acquire uses either), C takes the key with
// SET NX, each time with a new token, as a random one is (the first of
// C1, C2, C3 that no master holds). Every key is set with a TTL of ttl
// ticks (A may also use a shorter one, short); a granted client is told
// it holds the key for its TTL-1 ticks (the drift allowance), counted
// from its acquire; a granted re-entry's lease replaces the earlier one.
// A master takes A's key again keeping the longer TTL (acquireScript),
// and a set-back keeps the longer of the earlier TTL and the key's
// (undoScript). A granted re-entry keeps the longer TTL too: nothing is
// sent to shorten it. A second proxy for A, its messages landing in any
// order with the first's, is a world of its own (a known defect), and so
// is one where A's acquires are answered by every master and undone at
// once (no undo of A's on its way), which two proxies pass. C may also
// send again the token it holds (plainRepeats: a holder repeating its
// SET NX), to masters that say, when they deny it, whether the key holds
// it (SET NX GET), or (old) to masters older than Redis 7.0 that do not.
//
// Steps, in any order:
//   - an acquire by A or C, when its earlier acquire's messages are done
//     (one client's operations go out one after another on the proxy's
//     connection): on each master the script runs and answers, or runs
//     and its reply is lost, or the request never reaches it. A quorum
//     of answered grants is told it holds the key, unless its validity
//     ran out (a choice too); otherwise undoOf decides, per master, the
//     undo to send (nothing, a release, or Node.Undo with the answer),
//     with leavesSilent's answer for the masters that failed;
//   - one of those messages landing on its master, or lost;
//   - a tick: every TTL and every told validity goes down by one.
//
// The property, after every step: never two clients each told they hold
// the key at the same time. The broken rules are the undo before
// review28 F0b (release every master that granted or failed), the fix
// without its care for a master that failed (released although it may
// have taken the token's earlier grant again), and a re-entry that sets
// its shorter TTL on the key it takes again (newTTL: the earlier grant
// shortened where the set-back is lost or late), and a granted re-entry
// that sends the masters that kept a longer TTL the one asked, in a
// round of its own (settle: Engine.Settle before attack16 R2b; it lands
// after the same token's later, longer re-entry through another proxy).
// For plain repeats: a failed acquire that releases its silent masters
// (the undo before leavesSilent: the lost write may be on the earlier
// grant), one that leaves them only where a master revealed the token
// (not where fewer than a quorum answered), and one that reads an old
// master's denial as revealing no token.

const reMasters = 3

// Key values on a master.
const (
	reNone uint8 = iota
	reA1
	reA2
	reC1
	reC2
	reC3
)

var reNames = [...]string{"-", "A1", "A2", "C1", "C2", "C3"}

// reKey is the key on one master: its value and the ticks it has left.
type reKey struct{ val, left uint8 }

// reUndo is one undo message on its way to a master, or (world settle)
// a granted acquire's new TTL.
type reUndo struct {
	kind    undoing
	before  reKey // for undoSetBack: what the acquire took again (val reNone: taken free)
	shorten bool  // the new TTL, ttl ticks
	ttl     uint8
}

// pending reports whether u is a message on its way.
func (u reUndo) pending() bool { return u.kind != undoNothing || u.shorten }

// reState is the whole world.
type reState struct {
	keys  [reMasters]reKey
	valid [2]uint8 // ticks each client (A, C) is still told it holds the key
	// pending undo messages per client, and the token of the acquire they
	// undo.
	// pending messages per client (A, C, and A through a second proxy),
	// and the token of the acquire they follow.
	undo  [3][reMasters]reUndo
	token [3]uint8
	last  uint8 // C's last token
}

// reWorld is what the explorer lets happen beyond the steps above.
type reWorld struct {
	ttl   uint8 // every acquire's TTL, in ticks
	short uint8 // if above 0, A may acquire with this TTL too
	// newTTL is the design before its care for a shorter re-entry: the
	// script sets the new TTL on a key taken again (no longer one kept),
	// and a grant sends nothing more.
	newTTL bool
	// settle is the design before attack16 R2b's fix: a granted re-entry
	// sends each master that kept a longer TTL the one asked, in one
	// more round (extendScript, "set" mode).
	settle bool
	// answered makes every master answer each of A's acquires at once:
	// one granted by a quorum is told in time, a failed one's undo lands
	// at once (one on its way is twoProxies' known defect).
	answered bool
	// plainRepeats lets C send again the token it sent last (a holder
	// repeating its SET NX).
	plainRepeats bool
	// old masters do not reveal, when they deny C, whether the key holds
	// its token (Acquired.Revealed): SET NX GET needs Redis 7.0.
	old bool
	// leave is the rule under test for a failed plain acquire's silent
	// masters; nil: the engine's, leavesSilent.
	leave reLeave
	// twoProxies lets A acquire through a second proxy too, while its
	// messages through the first are still on their way (and the other
	// way round): they land on the masters in any order.
	twoProxies bool
	// deadline is the engine's: each undo carries a deadline on its
	// master's clock, before the proxy tells its client the acquire
	// failed, and does nothing past it (lateCheck). A's next acquire,
	// through either proxy, starts after it was told, so A's undo
	// messages have landed or are void by then.
	deadline bool
}

// reRule is an undo rule under test: undoOf, or a broken one.
type reRule func(l Lock, a Acquired, err error, leave bool) undoing

// reLeave is a rule for leaving a failed plain acquire's silent masters
// to their TTL: leavesSilent, or a broken one.
type reLeave func(l Lock, results []result[Acquired], ballots []ballot, quorum int) bool

// reLock is client c's lock with token tok.
func reLock(c int, tok uint8) Lock {
	if c != 1 {
		return Lock{Keys: []string{"k"}, Token: reNames[tok], PrefixLen: 1}
	}
	return Lock{Keys: []string{"k"}, Token: reNames[tok]}
}

// grants runs the acquire script of client c with token tok on k: the key
// free, or (for A) held with A's prefix, which is taken again.
func (k reKey) grants(c int) (ok, again bool) {
	switch {
	case k.val == reNone:
		return true, false
	case c != 1 && (k.val == reA1 || k.val == reA2):
		return true, true
	}
	return false, false
}

// Outcomes of one master's part of an acquire.
const (
	reAnswered = iota
	reLostReply
	reNotReached
)

var errReFailed = errors.New("explorer: no answer")

// reCheck explores every state reachable from the empty one under rule.
// It returns the number of states, and a violation's trace, or "".
func reCheck(rule reRule, w reWorld) (states int, violation string) {
	parent := map[reState]reState{}
	how := map[reState]reMove{}
	start := reState{}
	parent[start] = start
	queue := []reState{start}
	trace := func(s reState) string {
		var steps []string
		for s != start {
			steps = append(steps, how[s].describe(parent[s])+" -> "+s.String())
			s = parent[s]
		}
		var b strings.Builder
		for i := len(steps) - 1; i >= 0; i-- {
			b.WriteString("\n  " + steps[i])
		}
		return b.String()
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, n := range s.next(rule, w) {
			n.s = n.s.canonical()
			if _, seen := parent[n.s]; seen {
				continue
			}
			parent[n.s], how[n.s] = s, n.how
			if n.s.valid[0] > 0 && n.s.valid[1] > 0 {
				return len(parent), "A and C are each told they hold the key:" + trace(n.s)
			}
			queue = append(queue, n.s)
		}
	}
	return len(parent), ""
}

type reStep struct {
	s   reState
	how reMove
}

// reMove is a step, as a trace names it.
type reMove struct {
	kind     uint8 // reTick, reUndoLost, reUndoLands, reAcquire
	c, i     uint8 // the client; the master of an undo
	tok, ttl uint8 // an acquire's token and TTL
	outcomes uint8 // an acquire's outcome per master, in base 3
	won      bool  // an acquire told it holds the key
}

const (
	reTick uint8 = iota
	reUndoLost
	reUndoLands
	reAcquire
)

// describe is m as a trace shows it, made from s, the state it left.
func (m reMove) describe(s reState) string {
	c := reClient(int(m.c))
	switch m.kind {
	case reTick:
		return "tick"
	}
	what := "undo"
	if s.undo[m.c][m.i].shorten {
		what = "new TTL"
	}
	switch m.kind {
	case reUndoLost:
		return fmt.Sprintf("%s's %s to %d lost", c, what, m.i)
	case reUndoLands:
		return fmt.Sprintf("%s's %s lands on %d", c, what, m.i)
	}
	desc := make([]string, reMasters)
	code := int(m.outcomes)
	for i := range reMasters {
		outcome := code % 3
		code /= 3
		if outcome == reNotReached {
			desc[i] = "x"
			continue
		}
		ok, _ := s.keys[i].grants(int(m.c))
		desc[i] = map[bool]string{true: "granted", false: "denied"}[ok]
		if outcome == reLostReply {
			desc[i] += ", reply lost"
		}
	}
	end := ": failed"
	if m.won {
		end = ": granted"
	}
	return fmt.Sprintf("%s acquires with %s, TTL %d: %s%s", c, reNames[m.tok], m.ttl, strings.Join(desc, "; "), end)
}

// next is every state one step from s.
func (s reState) next(rule reRule, w reWorld) []reStep {
	var out []reStep
	// A tick.
	t := s
	for i := range t.keys {
		if t.keys[i].left > 0 {
			t.keys[i].left--
			if t.keys[i].left == 0 {
				t.keys[i] = reKey{}
			}
		}
	}
	for c := range t.valid {
		if t.valid[c] > 0 {
			t.valid[c]--
		}
	}
	out = append(out, reStep{t, reMove{kind: reTick}})
	for c := range 3 {
		if c == 2 && !w.twoProxies {
			break
		}
		busy := false
		if w.deadline && c != 1 && s.undo[2-c] != [reMasters]reUndo{} {
			busy = true // A's messages through the other proxy
		}
		for i, u := range s.undo[c] {
			if !u.pending() {
				continue
			}
			busy = true
			lost := s
			lost.undo[c][i] = reUndo{}
			out = append(out, reStep{lost.idle(c), reMove{kind: reUndoLost, c: uint8(c), i: uint8(i)}})
			landed := lost
			landed.keys[i] = s.keys[i].undone(u, s.token[c])
			out = append(out, reStep{landed.idle(c), reMove{kind: reUndoLands, c: uint8(c), i: uint8(i)}})
		}
		if busy {
			continue
		}
		toks := []uint8{reA1, reA2}
		if c == 1 {
			toks = nil
			for tok := reC1; tok <= reC3 && toks == nil; tok++ {
				if !s.holds(tok) {
					toks = append(toks, tok)
				}
			}
			if w.plainRepeats && s.last != reNone && s.holds(s.last) {
				toks = append(toks, s.last)
			}
		}
		ttls := []uint8{w.ttl}
		if c != 1 && w.short > 0 {
			ttls = append(ttls, w.short)
		}
		for _, tok := range toks {
			for _, ttl := range ttls {
				out = append(out, s.acquires(rule, w, c, tok, ttl)...)
			}
		}
	}
	return out
}

// canonical is s with its masters sorted: the masters are alike, so
// states that differ only in their order are one state. (A trace shows
// each state so sorted.)
func (s reState) canonical() reState {
	type master struct {
		k       reKey
		a, c, q reUndo
	}
	var ms [reMasters]master
	for i := range ms {
		ms[i] = master{s.keys[i], s.undo[0][i], s.undo[1][i], s.undo[2][i]}
	}
	slices.SortFunc(ms[:], func(x, y master) int {
		return cmp.Or(cmp.Compare(x.k.val, y.k.val), cmp.Compare(x.k.left, y.k.left),
			cmp.Compare(x.a.kind, y.a.kind), cmp.Compare(x.a.before.val, y.a.before.val), cmp.Compare(x.a.before.left, y.a.before.left),
			cmp.Compare(x.a.ttl, y.a.ttl), cmp.Compare(x.c.kind, y.c.kind),
			cmp.Compare(x.q.kind, y.q.kind), cmp.Compare(x.q.before.val, y.q.before.val), cmp.Compare(x.q.before.left, y.q.before.left),
			cmp.Compare(x.q.ttl, y.q.ttl))
	})
	for i, m := range ms {
		s.keys[i], s.undo[0][i], s.undo[1][i], s.undo[2][i] = m.k, m.a, m.c, m.q
	}
	return s
}

// holds reports whether a master holds tok.
func (s reState) holds(tok uint8) bool {
	for _, k := range s.keys {
		if k.val == tok {
			return true
		}
	}
	return false
}

// idle clears c's token once none of its undo messages is pending.
func (s reState) idle(c int) reState {
	if s.undo[c] == [reMasters]reUndo{} {
		s.token[c] = reNone
	}
	return s
}

// undone is k after undo u of an acquire with token tok lands: the
// scripts' rule (releaseScript, undoScript), each only where k still
// holds tok.
func (k reKey) undone(u reUndo, tok uint8) reKey {
	if k.val != tok {
		return k
	}
	if u.shorten {
		return reKey{tok, u.ttl} // extendScript
	}
	if u.kind == undoSetBack && u.before.val != reNone {
		return reKey{u.before.val, max(u.before.left, k.left)} // undoScript
	}
	return reKey{}
}

// acquires is every outcome of an acquire by client c with token tok.
func (s reState) acquires(rule reRule, w reWorld, c int, tok, ttl uint8) []reStep {
	var out []reStep
	l := reLock(c, tok)
	for o := range 27 { // each master's outcome, in base 3
		if w.answered && c != 1 && o != 0 {
			break // 0: every master reAnswered
		}
		n := s
		var answers [reMasters]Acquired
		var errs [reMasters]error
		granted := 0
		code := o
		for i := range reMasters {
			outcome := code % 3
			code /= 3
			if outcome == reNotReached {
				errs[i] = errReFailed
				continue
			}
			ok, again := s.keys[i].grants(c)
			if !ok && c == 1 && !w.old {
				answers[i].Revealed, answers[i].Held = true, reNames[s.keys[i].val] // SET NX GET
			}
			if ok {
				n.keys[i] = reKey{tok, ttl}
				if again && !w.newTTL && s.keys[i].left > ttl {
					n.keys[i].left = s.keys[i].left // acquireScript keeps it
				}
				answers[i].Granted = true
				if again {
					answers[i].Before = []Entry{{Present: true, Token: reNames[s.keys[i].val], TTL: time.Duration(s.keys[i].left) * time.Millisecond}}
				}
			}
			if outcome == reLostReply {
				answers[i], errs[i] = Acquired{}, errReFailed
				continue
			}
			if ok {
				granted++
			}
		}
		m := reMove{kind: reAcquire, c: uint8(c), tok: tok, ttl: ttl, outcomes: uint8(o)}
		if granted >= Quorum(reMasters) {
			won := n
			won.valid[c%2] = ttl - 1 // the new lease replaces the earlier one, as on one Redis
			for i := range reMasters {
				if w.settle && errs[i] == nil && answers[i].Before != nil && s.keys[i].left > ttl {
					won.undo[c][i] = reUndo{shorten: true, ttl: ttl}
					won.token[c] = tok
				}
			}
			m.won = true
			out = append(out, reStep{won, m})
			m.won = false
			if w.answered && c != 1 {
				continue
			}
			// or, too slow, its validity ran out: failed below
		}
		var results [reMasters]result[Acquired]
		var ballots [reMasters]ballot
		for i := range reMasters {
			results[i] = result[Acquired]{v: answers[i], err: errs[i]}
			ballots[i] = ballot{err: errs[i], granted: answers[i].Granted, counts: true}
		}
		leaves := w.leave
		if leaves == nil {
			leaves = leavesSilent
		}
		leave := leaves(l, results[:], ballots[:], Quorum(reMasters))
		for i := range reMasters {
			u := reUndo{kind: rule(l, answers[i], errs[i], leave)}
			if u.kind == undoSetBack {
				u.before = s.keys[i]
			}
			if w.answered && c != 1 {
				if u.kind != undoNothing {
					n.keys[i] = n.keys[i].undone(u, tok) // lands at once
				}
				continue
			}
			n.undo[c][i] = u
		}
		n.token[c] = tok
		out = append(out, reStep{n.idle(c), m})
	}
	if c == 1 {
		for i := range out {
			out[i].s.last = tok
		}
	}
	return out
}

func reClient(c int) string { return [...]string{"A", "C", "A through proxy 2"}[c] }

func (s reState) String() string {
	var b strings.Builder
	for i, k := range s.keys {
		fmt.Fprintf(&b, "m%d=%s/%d ", i, reNames[k.val], k.left)
	}
	fmt.Fprintf(&b, "A told %d, C told %d", s.valid[0], s.valid[1])
	return b.String()
}

// reUndoBeforeF0b is the undo before the fix: every master that granted
// or failed is released.
func reUndoBeforeF0b(_ Lock, a Acquired, err error, _ bool) undoing {
	if err == nil && !a.Granted || errors.Is(err, ErrNodeDown) {
		return undoNothing
	}
	return undoRelease
}

// reUndoReleasesFailed is the fix without its care for a master that
// failed: released even when the lock re-enters.
func reUndoReleasesFailed(l Lock, a Acquired, err error, leave bool) undoing {
	if err != nil {
		return undoRelease
	}
	return undoOf(l, a, err, leave)
}

// reLeaveNever is the undo before leavesSilent: a failed plain acquire
// releases its silent masters.
func reLeaveNever(Lock, []result[Acquired], []ballot, int) bool { return false }

// reLeaveOnlyHeld is leavesSilent without its care for an acquire that
// fewer than a quorum of masters answered: it leaves the silent masters
// only where a master revealed the token.
func reLeaveOnlyHeld(l Lock, results []result[Acquired], _ []ballot, _ int) bool {
	return slices.ContainsFunc(results, func(r result[Acquired]) bool { return r.err == nil && r.v.holds(l.Token) })
}

// reLeaveOldReadsFree is leavesSilent reading an old master's denial,
// which reveals nothing, as one that revealed no token there.
func reLeaveOldReadsFree(l Lock, results []result[Acquired], ballots []ballot, quorum int) bool {
	revealed := slices.Clone(results)
	for i := range revealed {
		revealed[i].v.Revealed = true
	}
	return leavesSilent(l, revealed, ballots, quorum)
}

// TestReentryNeverTwoHolders: with undoOf, no reachable state tells A and
// C that each holds the key.
func TestReentryNeverTwoHolders(t *testing.T) {
	for _, w := range []reWorld{{ttl: 2}, {ttl: 2, short: 1}, {ttl: 3, short: 1}, {ttl: 3, short: 1, twoProxies: true, answered: true}, {ttl: 2, short: 1, twoProxies: true, deadline: true}} {
		if (w.ttl == 3 && !w.twoProxies || w.deadline) && (testing.Short() || modelUnderRace) {
			continue // millions of states: seconds, ten times that under -race
		}
		t.Run(fmt.Sprintf("TTL %d, short %d, two proxies %v, deadline %v", w.ttl, w.short, w.twoProxies, w.deadline), func(t *testing.T) {
			states, violation := reCheck(undoOf, w)
			if violation != "" {
				t.Fatalf("after %d states: %s", states, violation)
			}
			t.Logf("%d states, none with two holders", states)
		})
	}
}

// TestReentryPlainRepeatKeepsTheEarlierGrant: C sends again the token
// it holds, with SET NX (a holder repeating its acquire), and a master
// holding its grant may lose the reply. With leavesSilent no reachable
// state tells A and C that each holds the key, over masters that reveal
// whether a denied key holds the token and over old ones that do not.
func TestReentryPlainRepeatKeepsTheEarlierGrant(t *testing.T) {
	for _, w := range []reWorld{{ttl: 2, plainRepeats: true}, {ttl: 2, short: 1, plainRepeats: true}, {ttl: 2, plainRepeats: true, old: true}, {ttl: 2, short: 1, plainRepeats: true, old: true}} {
		if (w.short > 0 || w.old) && (testing.Short() || modelUnderRace) {
			continue // seconds each, ten times that under -race
		}
		t.Run(fmt.Sprintf("TTL %d, short %d, old masters %v", w.ttl, w.short, w.old), func(t *testing.T) {
			states, violation := reCheck(undoOf, w)
			if violation != "" {
				t.Fatalf("after %d states: %s", states, violation)
			}
			t.Logf("%d states, none with two holders", states)
		})
	}
}

// TestReentryTwoProxiesLateUndoNeedsItsDeadline: A acquires through two
// proxies with the same token. Without the undo's deadline (attack17
// F4's defect before it) the undo of the first one's failed take, still
// on its way, lands after the second one's grant took the key again, and
// releases it (or sets it back) there: nothing tells one acquire's write
// from another's of the same token. With it (TestReentryNeverTwoHolders'
// deadline world) no state has two holders.
func TestReentryTwoProxiesLateUndoNeedsItsDeadline(t *testing.T) {
	states, violation := reCheck(undoOf, reWorld{ttl: 2, short: 1, twoProxies: true})
	if violation == "" {
		t.Fatalf("%d states, none with two holders; want the late undo caught", states)
	}
	t.Logf("caught without the deadline, after %d states: %s", states, violation)
}

// TestReentryCheckerCatchesBrokenUndos: each broken rule is caught.
func TestReentryCheckerCatchesBrokenUndos(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rule  reRule
		world reWorld
	}{
		{"the undo before review28 F0b: release where granted or failed", reUndoBeforeF0b, reWorld{ttl: 2}},
		{"a failed master released although the lock re-enters", reUndoReleasesFailed, reWorld{ttl: 2}},
		{"a re-entry sets its shorter TTL where its reply is lost", undoOf, reWorld{ttl: 3, short: 1, newTTL: true}},
		{"a granted re-entry's round to its shorter TTL lands after the same token's later grant (attack16 R2b)", undoOf, reWorld{ttl: 3, short: 1, twoProxies: true, answered: true, settle: true}},
		{"a failed plain repeat releases its silent masters (the undo before leavesSilent)", undoOf, reWorld{ttl: 2, plainRepeats: true, leave: reLeaveNever}},
		{"a failed plain repeat releases its silent masters where fewer than a quorum answered", undoOf, reWorld{ttl: 2, plainRepeats: true, leave: reLeaveOnlyHeld}},
		{"an old master's denial read as revealing no token", undoOf, reWorld{ttl: 2, plainRepeats: true, old: true, leave: reLeaveOldReadsFree}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			states, violation := reCheck(tt.rule, tt.world)
			if violation == "" {
				t.Fatalf("%d states explored, no violation found; want the broken rule caught", states)
			}
			t.Logf("caught after %d states: %s", states, violation)
		})
	}
}
