package quorum

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// An exhaustive state explorer for Redisson's RCountDownLatch over
// independent nodes (latchdecide.go, latch.go). It starts from every way a
// trySetCount(2) can have been granted (a quorum of nodes set 2; each
// other node has no count, maybe an older latch's claim, or an older
// latch's count, 1 or 3, that the set found there and resets by a message
// of its own, which may be lost), then explores up to 3 countDowns, each
// sent to every node at most once and never sent again, every message its
// own step: landing in any order among other countDowns' messages,
// answering, with its reply lost (it ran; if it lands after its countDown
// decided, a late landing), or never reaching the node. A decrement names
// the set its countDown read on the node (latch.go: the nonce): one that
// lands after the node's count was reset, or the node restarted, misses.
//
// A node restarts empty. Its count and claim are gone; the messages on
// their way to it are not: a countDown whose read came before the restart
// may send its decrement after it, and a claim sent while the node is
// pending may land after its seed (attack10's K2 and K1); such a message
// lands at any later step and is not waited for. It does not count until
// seeded again from any quorum or more of the counted nodes
// (latchSeedFields: the highest count, a fresh nonce, the claim answered
// as nobody's unless every source has a count and a claim to take), which
// the engine does only once every operation older than its mark has ended
// (the wait of fenceseed.go: no message of a round that read it counted
// in flight to it).
//
// The zero message is decided by a rule (latchRule); the design's is the
// claim (latchClaimWon): a countDown whose answers read the latch open
// (whether it counted one down or not) claims the message on every node, in
// a second round whose messages are steps too. A node's claim slot has a
// tag (the set's, an older latch's, a seed's, a delete's tombstone, or
// none); a claim that read no tag on a node with no field of the slot
// creates it, of its ballot (the tag its countDown read on a quorum),
// and one that read no tag takes a slot of its ballot; any other claim
// in a slot not of the tag it read is nobody's (latch_claim.lua). A
// node holding a vote of another ballot keeps it by that ballot (where it
// keeps none yet) and votes for the claim's (L3); a vote answered to a
// claim of none answers any from then on. A seed drops a count whose tag
// another source counted down to 0 (latchSeedCount), and carries that
// tag as evidence, in no ballot (latchCarried). An opened latch keeps its slots (their tags are that
// evidence). A delete's tombstone remembers the ballots its node voted
// for and keeps no vote of (rem; so does a set replacing a kept vote): a
// claim of another ballot votes there, of its own slot (L4), as does a
// claim that creates a slot; a seeded node remembers any. A node
// keeping a vote by its ballot that votes for a third forgets it, its
// ballot remembered apart (fgt, "x:"; a delete moves it into rem): a
// claim of such a ballot that it keeps no vote of is nobody's there, as
// is one of none beside such a memory (rem plays no part). The deletes world sends a delete() once n countDowns were
// made, landing on each node at any step; the undos worlds land a denied
// trySetCount and its undo on up to N-Q nodes with no count (one, with
// no fault, before the countDowns on a node with no slot, or with an
// older latch's: where the set found no field of the slot, or a free
// one, its undo takes "m:" too, L6 and L6').
//
// Properties, checked after every step:
//   - never early: no read of a quorum or more of counted nodes reads the
//     latch open (latchCount), and no zero message is sent, before 2
//     countDowns were made;
//   - once: at most one zero message (for the claim rule);
//   - a waiter is not left waiting (liveness): without faults, no state
//     with nothing in flight reads open (all nodes answering) without a
//     zero message, also where a node missed the set with no slot
//     (counted apart; by 1924247's rule alone its claims were nobody's,
//     so the tie-break could not run: latch20c, the negative control).
//     With faults it can: the last countDowns' answers never showed the
//     opening to anyone (the explorer counts those states); so can an
//     older latch's claim landing after this latch's set and countDowns
//     (a message late past later operations), which may take a slotless
//     node's slot first, of its own tag (counted, not checked);
//   - open for good (the allSet world: every node got the set, or, in
//     the lateSet world, a minority has it in flight, landing at any
//     step): once a read of a quorum of counted nodes read it open with
//     no set in flight, none reads it above 0 (attack12 S1; review27: a
//     reclaim of the opened latch's slots, then the late set and a
//     restart, closed it again). Before a late set lands a read can open
//     it and one after read it shut, as beside a node that missed it;
//   - it opens (liveness, the restart world): with every message
//     answered and one restart, once 3 countDowns landed and nothing is in
//     flight, a read of all nodes reads it open (attack9's L1: a seed
//     from an older latch's count above n kept it shut); and where every
//     claim round began after a seed that left the claim to take, no
//     state with nothing in flight reads open without a zero message
//     (every node votes: the rest of L3's rule reading a seed's memory
//     of any, l4fix-l3, answered there nobody's, the negative control).
//
// With faults, countDowns are explored one at a time (their messages
// still land late, among later ones), with at most one restart; without
// faults, 3 at once over 3 nodes and 2 at once over 5; over 5 nodes at
// most 2 are not up in one round, at most one reply of a countDown is
// lost and none of a claim, and the older latch's counts are 1 only; the
// 5-node world with faults, and the one with an older latch's decrements
// in flight, and the one with an older latch's claim in flight, make 2
// countDowns; the deletes world and the healed ones have no restart.
// The newer world sends a newer trySetCount once n countDowns were
// made (review28 F0), landing on a minority at any step: a vote given in
// a slot it replaces is kept by its ballot (a claim's vb), and answers
// that ballot's claims, or claims of none. The L5 world resets an
// older latch's count holding that latch's claim, the tie-break taking
// it as the least; the L6' world undoes a denied set on a node holding
// an older latch's free slot; the L3 worlds start nodes that missed the
// set holding an older opening's vote, taken as the least; the L4
// worlds start nodes that missed the set holding an older latch's
// tombstone (its node's vote for that latch remembered, or none given);
// the rest-of-L3 worlds start them holding an older opening's vote beside
// one kept of another ballot (the one without faults is
// TestLatchTwoVotesOnMissedMasterLeaveNoWaiter). -short and -race run
// fifteen 3-node worlds and two 5-node ones (about 1.74 million
// states); without, eight more (about 15.1 million states, 26 minutes
// at load about 10, about 3 GB at most).

// latchRule is how a countDown decides to send the zero message.
type latchRule uint8

const (
	ruleFlip     latchRule = iota // a quorum of its answers above 0 before, a quorum at 0 after
	ruleCrossed                   // its decrement took a quorum of nodes from 1 to 0
	ruleClaim                     // its answers read open, then a quorum of claims
	ruleNodeZero                  // each node publishes when its count hits 0 (Redisson's script as is)
)

// latchVariant breaks one rule of the design on purpose (negative
// controls): each must be caught.
type latchVariant uint8

const (
	latchCorrect           latchVariant = iota
	latchReadKthLarge                   // read the quorum-th largest count, open at 0 (the sketch's first rule)
	latchSeedKthLarge                   // seed with the quorum-th largest count
	latchCountRestart                   // a node restarted empty counts at once (no count: open)
	latchSeedNoWait                     // seed with decrements still in flight to the node
	latchClaimNoTieBreak                // a claim wins only with a quorum
	latchUntagged                       // a decrement counts whatever set made the count
	latchSeedCopyNonce                  // the seed copies the set's nonce (K2)
	latchSeedCopyClaim                  // the seed copies the highest claim (K1)
	latchSeedClaimable                  // the seed leaves the claim to take
	latchNoReset                        // a granted set leaves an older latch's count (L1)
	latchClaimUntagged                  // a claim takes a slot whatever latch it is (Z1)
	latchSeedNoDrop                     // the seed copies a count of a set another source counted to 0 (S1)
	latchReclaimOpened                  // a decided countDown that read every node at 0 deletes the slots (review27)
	latchClaimNoCreate                  // a claim in a node with no slot is nobody's (1924247's rule alone: latch20c's split)
	latchDeleteNoTombstone              // delete() takes the slot with no trace, no tombstone nor memory (U1b, with slots a claim creates)
	latchUndoBare                       // a denied set's undo takes its "m:" too, the vote it replaced not kept (U1, with slots a claim creates)
	latchUndoLeavesClaim                // the undo leaves "m:" "0" where the set found no slot field, or a free one (L6, L6')
	latchClaimCountedOnly               // only a countDown that counted a node down claims (a later one cannot repair)
	latchClaimInSlotRead                // a claim counts in the slot it read, whatever its ballot (review28 F0: a new set's slot gave a second vote)
	latchResetKeepsClaim                // the reset keeps a claim given for another ballot (attack15 L5)
	latchClaimOneBallot                 // a node holding a vote of another ballot answers it to every claim (L3, before latch20h)
	latchBallotCarried                  // a seed's carried tag counts in a ballot (then one latch has two ballots, and a node votes twice for it)
	latchTombForgets                    // a tombstone forgets the ballots its node voted for: a claim of any ballot votes there (L4's fix without its memory)
	latchClaimTwoBallots                // a node keeping a vote of another ballot answers its slot's vote to a claim of a third (the rest of L3, before l3fix)
	latchForgotAnyMemory                // the rest of L3's rule reads every memory of votes, a seed's "any" too (branch l4fix-l3: a reseeded node answers claims nobody's)
)

// Message states of one node in one countDown in flight.
const (
	msgNone    uint8 = iota // not sent, failed, or landed without an answer
	msgAnswer               // in flight, will answer
	msgLost                 // in flight, its reply will be lost
	msgMiss                 // in flight, will answer, names a set the node no longer has
	msgOld0                 // landed and answered by a counted node: msgOld0 + 2*old + decremented
	msgPending = 250        // landed on a node that does not count: answered, not counted
	// A claim in flight to a node whose slot had no tag when its
	// countDown read it (the nonce "0"): it may create the slot, of its
	// ballot (latch_claim.lua).
	msgAnswerNone = 200
	msgLostNone   = 201
	// A claim in flight to a node whose slot was replaced since its
	// countDown read it (a later set, reset, or a newer set): only a vote
	// of its ballot answers it (latch_claim.lua).
	msgAnswerGone = 202
	msgLostGone   = 203
)

// claimFlying: a claim message in flight (ans: its answer will come).
func claimFlying(m uint8) (flying, ans bool) {
	switch m {
	case msgAnswer, msgAnswerNone, msgAnswerGone:
		return true, true
	case msgLost, msgLostNone, msgLostGone:
		return true, false
	}
	return false, false
}

// slotGone: the node's claim slot was replaced; each claim in flight to
// it read the slot before (msgAnswerGone, msgLostGone).
func slotGone(nd *latchNode) {
	for k, m := range nd.cmsg {
		if flying, ans := claimFlying(m); flying {
			nd.cmsg[k] = msgLostGone
			if ans {
				nd.cmsg[k] = msgAnswerGone
			}
		}
	}
}

// vote: the node gives its vote, claim, for a ballot ("b:" where the
// slot is of another tag; tagAny for none).
func (nd *latchNode) vote(claim, ballot uint8) {
	nd.claim, nd.vb = claim, tagNone
	switch {
	case ballot == tagNone:
		nd.vb = tagAny
	case ballot != nd.tag:
		nd.vb = ballot
	}
}

// keepVote: a set of tag t (or its reset) replaces the node's claim
// slot: a vote given in it is kept by its ballot ("p:", "q:"), or, given
// for t, is the new slot's claim (kept true).
func keepVote(nd *latchNode, t uint8) (kept bool) {
	if nd.tag != tagNone && nd.tag != tagDead && nd.claim > claimFree {
		b := nd.vb
		if b == tagNone {
			b = nd.tag
		}
		if b == t {
			kept = true
		} else {
			if nd.ptag != tagNone && nd.ptag != b {
				nd.rem |= remBit(nd.ptag) // the vote it replaces, remembered
			}
			nd.ptag, nd.pclaim = b, nd.claim
		}
	}
	nd.vb = tagNone
	return kept
}

// remAny: a node that may have voted for any ballot (rem): seeded after
// a restart, or it gave a vote of no ballot.
const remAny uint8 = 0x80

// remBit is ballot t's bit in a node's rem (tagAny, tagNone: any).
func remBit(t uint8) uint8 {
	if t == tagNone || t >= 7 {
		return remAny
	}
	return 1 << t
}

// votes are the ballots node nd voted for, as its delete remembers them
// (latch_del.lua): its slot's vote's (vb, else its tag), a kept one's
// (ptag); any where it answers nobody's after a restart.
func (nd latchNode) votes() uint8 {
	var r uint8
	if nd.claim > claimFree {
		b := nd.vb
		if b == tagNone {
			b = nd.tag
		}
		r |= remBit(b)
	}
	if nd.claim == claimNone && nd.marked {
		r |= remAny
	}
	if nd.ptag != tagNone {
		r |= remBit(nd.ptag)
	}
	return r
}

// mayVote: a claim of ballot t may vote where node nd remembers its
// votes (rem: at a tombstone, or with no field of the slot): a ballot it
// never voted for (L4).
func (c *latchChecker) mayVote(nd latchNode, t uint8) bool {
	return t != tagNone && (c.variant == latchTombForgets || nd.rem&(remBit(t)|remAny) == 0)
}

// Claims a node holds: none (it takes the first; on a node seeded after a
// restart, it answers nobody's), free (a set made it this latch's to
// take), a countDown's (claimOf), or an older latch's.
const (
	claimNone uint8 = 0
	claimFree uint8 = 1
	claimOld  uint8 = 8
	// answers of a claim message: msgLost + 1 + the claim, or nobody's
	claimNobody uint8 = 250
)

func claimOf(id uint8) uint8 { return id + 1 }

// Tags of a node's claim slot ("o:", the nonce of the set, reset or seed
// that made it; a count's nonce "n:" is the same while it lasts): none,
// this latch's set, an older latch's, or a seed's (tagSeed + the
// restarts so far: each seed's nonce is fresh). A slot's tag outlives its
// count: a node at 0 with a tag counted that set (or seed) down to 0.
const (
	tagNone uint8 = iota
	tagSet
	tagOld
	tagDead // a delete's tombstone ("o:" -1): every claim there is nobody's
	tagNew  // a newer set's (newer)
	tagSeed
	// tagAny is the ballot of a vote given for none ("0"): kept, it
	// answers a claim of any.
	tagAny uint8 = 255
)

type latchNode struct {
	v      uint8 // the count; 0: none
	seeded bool
	marked bool  // seeded after a restart: claimNone is nobody's (latchNobody)
	tag    uint8 // the nonce of its claim slot ("o:"): tagNone, tagSet, tagOld, tagSeed
	stale  bool  // the count is an older latch's, the set's reset not landed
	lset   bool  // the set's message in flight to it (lateSet): it lands late
	del    bool  // a delete() of the opened latch in flight to it (deletes)
	reset  bool  // the set's reset of the older count in flight
	late   uint8 // decrements in flight whose countDown decided already
	across uint8 // decrements read before the node's restart, in flight
	older  uint8 // an older latch's decrements in flight (olderLate)
	oclaim uint8 // an older latch's claim in flight (olderClaim): ocFlight, then its answer
	claim  uint8 // the zero message's claim
	vb     uint8 // the ballot its claim was given for, if not its tag ("b:")
	ptag   uint8 // the ballot of a vote given in a slot a later set replaced ("p:")
	pclaim uint8 // that vote ("q:")
	nset   bool  // a newer trySetCount in flight to it (newer)
	// carried: its tag is a seed's carried evidence (a tag counted down
	// to 0 elsewhere, stored negated: latchSeedFields), in no ballot.
	carried bool
	// rem: the ballots the node voted for before a delete ("d:", one bit
	// each, remAny: any); a claim of another ballot votes at its
	// tombstone (L4), or where it has no field of the slot.
	rem uint8
	// fgt: the ballots of kept votes it forgot while its slot lived, to
	// vote for a third ballot ("x:", the rest of L3): a claim of one, or
	// of none, is nobody's there. A delete moves them into rem.
	fgt  uint8
	msg  [3]uint8 // its messages of the countDowns in flight
	cmsg [3]uint8 // claim messages in flight (ruleClaim): msgAnswer/msgLost, or the answer
}

// ours: the node's claim slot is this latch's (its set's, its reset's,
// or a seed's of it).
func (nd latchNode) ours() bool { return nd.tag == tagSet || nd.tag >= tagSeed }

// bare: the node has no field of the claim slot ("o:" nor "m:"): a claim
// that read no tag there creates it (latch_claim.lua).
func (nd latchNode) bare() bool { return nd.tag == tagNone && nd.claim == claimNone && !nd.marked }

// latchFlight is a countDown in flight.
type latchFlight struct {
	id    uint8 // 1, 2, ...: which countDown
	claim bool  // in its claim round
	// allZero: every node answered its decrement at 0 after (kept for
	// latchReclaimOpened only).
	allZero bool
	// ballot: the slot tag its read found on a quorum of counted nodes
	// (tagNone: none); its claim creates a slot of that tag where it read
	// none.
	ballot uint8
}

type latchWorld struct {
	nodes    []latchNode
	ops      [3]latchFlight // id 0: free slot
	made     uint8
	msgs     uint8
	restarts uint8
	early    bool // a node sent the zero message early (ruleNodeZero)
	opened   bool // a read of a quorum of counted nodes read it open (allSet)
	// slotless: a node missed the set with no claim slot of the name
	// (no "o:"): a claim that read it so creates it, of its ballot
	// (latch_claim.lua); by 1924247's rule alone (latchClaimNoCreate)
	// every claim there is nobody's, and the claims' tie-break cannot run.
	slotless bool
	deleted  bool  // a delete() was sent (deletes)
	undos    uint8 // denied sets undone (undos)
	newer    uint8 // 1: a newer set was sent (newer); 1 + the nodes it landed on
	// claimed: a claim round started; seededFree: before that, a node
	// was seeded with the claim to take (restartOnly only).
	claimed, seededFree bool
}

func (w latchWorld) clone() latchWorld {
	w.nodes = slices.Clone(w.nodes)
	return w
}

func (w latchWorld) key() string {
	codes := make([]string, len(w.nodes))
	for i, n := range w.nodes {
		codes[i] = string([]byte{n.v, btob(n.seeded) | btob(n.marked)<<1 | btob(n.stale)<<2 | btob(n.reset)<<3 | btob(n.lset)<<4 | btob(n.del)<<5 | btob(n.nset)<<6 | btob(n.carried)<<7, n.tag, n.vb, n.ptag, n.pclaim, n.late, n.across, n.older, n.claim, n.msg[0], n.msg[1], n.msg[2], n.cmsg[0], n.cmsg[1], n.cmsg[2], n.oclaim, n.rem, n.fgt})
	}
	slices.Sort(codes)
	b := make([]byte, 0, 12*len(codes)+11)
	for _, c := range codes {
		b = append(b, c...)
	}
	for _, o := range w.ops {
		b = append(b, o.id, btob(o.claim)|btob(o.allZero)<<1, o.ballot)
	}
	b = append(b, w.made, min(w.msgs, 2), w.restarts, btob(w.early), btob(w.opened), btob(w.slotless), btob(w.deleted), w.undos, w.newer, btob(w.claimed)|btob(w.seededFree)<<1)
	return string(b)
}

func (w latchWorld) String() string {
	var b strings.Builder
	for i, n := range w.nodes {
		fmt.Fprintf(&b, "node%d{count %d seeded %v marked %v stale %v reset %v late %d across %d claim %d} ", i, n.v, n.seeded, n.marked, n.stale, n.reset, n.late, n.across, n.claim)
	}
	fmt.Fprintf(&b, "made %d messages %d", w.made, w.msgs)
	return b.String()
}

type latchChecker struct {
	n, quorum   int
	count       uint8 // the latch's n
	maxMade     uint8
	maxRestarts uint8
	maxNotUp    int // nodes not answering in one countDown
	rule        latchRule
	variant     latchVariant
	checkOnce   bool
	states      int
	steps       int
	stuck       int // quiescent states open by a full read, with no message
	// stuckSlotless: such states from a start where a node missed the
	// set with no slot (latchWorld.slotless), counted apart.
	stuckSlotless int
	// stuckSeeded: such states in the restart world where every claim
	// round began after a node was seeded with the claim to take (every
	// message answered: every node votes, and the tie-break decides).
	stuckSeeded      int
	stuckSeededTrace string
	noFaults         bool // every message answered, no restart
	inFlight         int  // countDowns in flight at once, at most 3
	// olderLate starts with an older latch's decrements still in flight
	// to a minority (a countDown answered by a quorum before the set):
	// each names that set's nonce, and counts for no other.
	olderLate   bool
	staleCounts []uint8 // the older latch's counts the set may find (1, 3)
	oldClaims   bool    // nodes that missed the set may hold an older latch's claim
	// staleClaims: a node with an older latch's count may hold that
	// latch's claim too (it missed a countDown of it, not the opening);
	// oldLeast: the tie-break takes an older latch's claim as the least
	// (a claim is random: attack15 L5).
	staleClaims, oldLeast bool
	// olderClaim starts with an older latch's countDown in its claim
	// round, its claim in flight to every node (it read that latch open
	// and counted one down before the set): it lands after the set, or
	// never, and the older countDown sends "0" if its claim wins.
	olderClaim bool
	// restartOnly: every message answered, one restart; checks it opens.
	restartOnly bool
	// allSet starts with every node holding the set's count; an opened
	// latch must then stay open (attack12 S1): no read of a quorum of
	// counted nodes reads it closed after one read it open.
	allSet bool
	// lateSet: with allSet, a minority of nodes may have the set's
	// message in flight instead (it lands at any step: a late landing).
	lateSet bool
	// deletes: once countDowns of n were made, a delete() of the latch
	// may be sent, landing on each node at any step (latch_del.lua: the
	// count goes, the slot's tag becomes a tombstone; U1b).
	deletes bool
	// undos: a denied trySetCount may land on up to N-Q nodes with no
	// count, and be undone there (latch_undo.lua: "m:" is left "0", with
	// no tag; U1), each as one step.
	undos bool
	// undosFirst: with undos, they land before the first countDown, on
	// a node with no field of the slot (a denied set of another
	// participant where the set missed: L6).
	undosFirst bool
	// undosOld: with undosFirst, a node holding an older latch's slot
	// gets the denied set too (attack15 L6'): the set keeps its vote by
	// its ballot, the undo leaves "m:" "0" with no tag.
	undosOld bool
	// tombs: a node that missed the set may hold an older latch's
	// delete() tombstone (attack15 L4).
	tombs bool
	// kept: a node that missed the set may hold an older opening's vote
	// beside one it keeps of another ballot (the rest of L3).
	kept bool
	// newer: once countDowns of n were made, a newer trySetCount (count
	// 1 or 2, a tag of its own) may be sent, landing on at most N-Q nodes
	// (each a step; latch_set.lua): where a node has no count, it replaces
	// the claim slot, its vote kept (review28 F0). Its later countDowns
	// are not made: it stays a minority's.
	newer bool
	// healed: only the countDowns before the last meet faults (their
	// decrements; claims meet none, and no node restarts); the last is
	// made once every earlier message landed or was never sent, and
	// meets none. Checks that it sends the zero message when the earlier
	// ones left the latch open with none (a repair by a later countDown).
	healed      bool
	unrepaired  int    // quiescent states after the healed countDown, open, no message
	closed      int    // quiescent states after 3 countDowns that do not read open
	closedTrace string // the first one
	stuckTrace  string // the first such state
	violation   string
	limit       int
}

func newLatchChecker(n int, rule latchRule, variant latchVariant) *latchChecker {
	c := &latchChecker{n: n, quorum: Quorum(n), count: 2, maxMade: 3, maxRestarts: 1, maxNotUp: n, rule: rule, variant: variant}
	if n > 3 {
		c.maxNotUp = 2 // and at most one reply lost
	}
	c.checkOnce = rule != ruleFlip && rule != ruleNodeZero
	c.inFlight = 1
	c.staleCounts = []uint8{1}
	return c
}

// starts are every granted trySetCount(n): a quorum of nodes set n, each
// other one has no count (maybe an older latch's claim) or an older
// latch's count (staleCounts) with the set's reset in flight.
func (c *latchChecker) starts() []latchWorld {
	var out []latchWorld
	var gen func(nodes []latchNode)
	gen = func(nodes []latchNode) {
		if len(nodes) == c.n {
			set, late := 0, 0
			for _, nd := range nodes {
				if nd.v == c.count && !nd.stale {
					set++
				}
				late += int(nd.older)
			}
			if set >= c.quorum && late <= c.n-c.quorum {
				slotless := slices.ContainsFunc(nodes, func(nd latchNode) bool { return nd.tag == tagNone })
				out = append(out, latchWorld{nodes: slices.Clone(nodes), slotless: slotless})
			}
			return
		}
		opts := []latchNode{{v: c.count, claim: claimFree, tag: tagSet}}
		if c.lateSet {
			opts = append(opts, latchNode{lset: true})
		}
		if !c.allSet {
			// It missed the set: no slot of the name, or an older
			// latch's still to take (a claim that read it takes it).
			opts = append(opts, latchNode{}, latchNode{tag: tagOld, claim: claimFree})
		}
		if c.oldClaims {
			opts = append(opts, latchNode{claim: claimOld, tag: tagOld})
		}
		if c.tombs {
			// An older latch's tombstone, its node's vote for it
			// remembered, or none given.
			opts = append(opts, latchNode{tag: tagDead}, latchNode{tag: tagDead, rem: remBit(tagOld)})
		}
		if c.kept {
			opts = append(opts, latchNode{tag: tagOld, claim: claimOld, ptag: tagNew, pclaim: claimOld})
		}
		for _, v := range c.staleCounts {
			// The reset lands at some step, or is lost (with faults).
			opts = append(opts, latchNode{v: v, stale: true, reset: c.variant != latchNoReset, claim: claimFree, tag: tagOld})
			if c.staleClaims {
				opts = append(opts, latchNode{v: v, stale: true, reset: c.variant != latchNoReset, claim: claimOld, tag: tagOld})
			}
			if !c.noFaults && !c.restartOnly && c.variant != latchNoReset {
				opts = append(opts, latchNode{v: v, stale: true, claim: claimFree, tag: tagOld})
			}
		}
		for _, o := range opts {
			o.seeded = true
			if c.olderClaim {
				o.oclaim = ocFlight
			}
			gen(append(nodes, o))
			if c.olderLate {
				o.older = 1
				gen(append(nodes, o))
			}
		}
	}
	gen(nil)
	return out
}

func (c *latchChecker) run() {
	type origin struct{ prev, step string }
	from := map[string]origin{}
	trace := func(k, last string) string {
		steps := []string{last}
		for ; from[k].step != ""; k = from[k].prev {
			steps = append(steps, from[k].step)
		}
		slices.Reverse(steps)
		return strings.Join(steps, "; ")
	}
	var queue []latchWorld
	for _, w := range c.starts() {
		if k := w.key(); from[k] == (origin{}) {
			from[k] = origin{step: "start " + w.String()}
			queue = append(queue, w)
		}
	}
	for len(queue) > 0 && c.violation == "" {
		if c.limit > 0 && c.states >= c.limit {
			c.violation = fmt.Sprintf("limit: %d states, %d queued", c.states, len(queue))
			return
		}
		w := queue[0]
		queue = queue[1:]
		c.states++
		wk := w.key()
		if c.quiescentStuck(w) {
			slotless := w.slotless && c.rule == ruleClaim
			switch {
			case slotless:
				c.stuckSlotless++
			default:
				c.stuck++
			}
			if c.stuckTrace == "" {
				c.stuckTrace = trace(wk, "(stuck) "+w.String())
			}
			if w.seededFree && w.claimed {
				c.stuckSeeded++
				if c.stuckSeededTrace == "" {
					c.stuckSeededTrace = trace(wk, "(stuck after a seed) "+w.String())
				}
			}
		}
		if c.healed && w.made == c.maxMade && c.quiescentStuck(w) {
			c.unrepaired++
			if c.unrepaired == 1 {
				c.stuckTrace = trace(wk, "(not repaired) "+w.String())
			}
		}
		if c.restartOnly && c.quiescentClosed(w) {
			c.closed++
			if c.closedTrace == "" {
				c.closedTrace = trace(wk, "(shut) "+w.String())
			}
		}
		for _, s := range c.successors(w) {
			c.steps++
			msg := s.bad
			if msg == "" {
				msg = c.check(&s.w)
			}
			if msg != "" {
				c.violation = fmt.Sprintf("%s, by: %s", msg, trace(wk, s.step))
				return
			}
			if k := s.w.key(); from[k] == (origin{}) {
				from[k] = origin{wk, s.step}
				queue = append(queue, s.w)
			}
		}
	}
}

// counted reports whether node i counts in a read.
func (c *latchChecker) counted(nd latchNode) bool {
	return nd.seeded || c.variant == latchCountRestart
}

// reads are what every read of a quorum or more of counted nodes
// decides: a read that reads the latch open (open), one that reads it
// above 0 (shut).
func (c *latchChecker) reads(w latchWorld) (open, shut []int64) {
	var counted []int64
	for _, nd := range w.nodes {
		if c.counted(nd) {
			counted = append(counted, int64(nd.v))
		}
	}
	for mask := 1; mask < 1<<len(counted); mask++ {
		var sub []int64
		for i, v := range counted {
			if mask&(1<<i) != 0 {
				sub = append(sub, v)
			}
		}
		if len(sub) < c.quorum {
			continue
		}
		v, ok := c.read(sub)
		switch {
		case ok && v == 0 && open == nil:
			open = sub
		case ok && v > 0 && shut == nil:
			shut = sub
		}
	}
	return open, shut
}

// check is never early (reads), once, and (allSet) open for good once
// read open; it marks w opened.
func (c *latchChecker) check(w *latchWorld) string {
	open, shut := c.reads(*w)
	if open != nil && w.made < c.count {
		return fmt.Sprintf("a read of %v opens the latch after %d countDowns of %d: %v", open, w.made, c.count, w)
	}
	if c.allSet {
		// With a set in flight a read can open the latch before it lands
		// (as with a node that missed it): open for good counts from a
		// read with no set in flight.
		inFlight := slices.ContainsFunc(w.nodes, func(nd latchNode) bool { return nd.lset })
		w.opened = w.opened || open != nil && !inFlight
		if w.opened && shut != nil {
			return fmt.Sprintf("a read of %v reads the opened latch shut again: %v", shut, w)
		}
	}
	if w.early {
		return fmt.Sprintf("a node sent the zero message after %d countDowns of %d: %v", w.made, c.count, w)
	}
	if c.checkOnce && w.msgs > 1 {
		return fmt.Sprintf("%d zero messages: %v", w.msgs, w)
	}
	return ""
}

func (c *latchChecker) read(counts []int64) (int64, bool) {
	if c.variant == latchReadKthLarge {
		return kthLargest(counts, c.quorum), true
	}
	return latchCount(counts, c.quorum)
}

// quiet: nothing in flight, every node counted; the counts of all.
func (c *latchChecker) quiet(w latchWorld) ([]int64, bool) {
	if w.ops != [3]latchFlight{} {
		return nil, false
	}
	all := make([]int64, 0, c.n)
	for _, nd := range w.nodes {
		if !nd.seeded || nd.late > 0 || nd.across > 0 || nd.older > 0 || nd.reset || nd.oclaim > 0 || nd.lset || nd.del || nd.nset {
			return nil, false
		}
		all = append(all, int64(nd.v))
	}
	return all, true
}

// quiescentStuck: nothing in flight, every node counted, a read of all
// nodes opens the latch, and no zero message was sent.
func (c *latchChecker) quiescentStuck(w latchWorld) bool {
	all, ok := c.quiet(w)
	if !ok || w.msgs > 0 {
		return false
	}
	v, ok := latchCount(all, c.quorum)
	return ok && v == 0
}

// quiescentClosed: nothing in flight, every node counted, every
// countDown made, and a read of all nodes does not read it open.
func (c *latchChecker) quiescentClosed(w latchWorld) bool {
	all, ok := c.quiet(w)
	if !ok || w.made < c.maxMade {
		return false
	}
	v, ok := latchCount(all, c.quorum)
	return !ok || v > 0
}

type latchStep struct {
	w         latchWorld
	step, bad string
}

func (c *latchChecker) successors(w latchWorld) []latchStep {
	var out []latchStep
	// Send a countDown, with each node's fate.
	slot := slices.IndexFunc(w.ops[:c.inFlight], func(o latchFlight) bool { return o.id == 0 })
	// Without lost messages the set's resets land before it answers.
	resetting := (c.noFaults || c.restartOnly) && slices.ContainsFunc(w.nodes, func(nd latchNode) bool { return nd.reset })
	_, settled := c.quiet(w)
	if w.made < c.maxMade && slot >= 0 && !resetting && (!c.healed || w.made+1 < c.maxMade || settled) {
		for _, fates := range c.fates() {
			if c.healed && w.made+1 == c.maxMade && slices.ContainsFunc(fates, func(f uint8) bool { return f != msgAnswer }) {
				continue // the last countDown meets no fault, once every earlier message landed
			}
			next := w.clone()
			next.made++
			next.ops[slot] = latchFlight{id: next.made, ballot: c.ballot(w)}
			for i, f := range fates {
				next.nodes[i].msg[slot] = f
			}
			out = append(out, latchStep{next, fmt.Sprintf("countDown %d sent %v", next.made, fates), ""})
		}
	}
	for k, op := range w.ops {
		if op.id == 0 {
			continue
		}
		inFlight := false
		for i, nd := range w.nodes {
			if !op.claim && (nd.msg[k] == msgAnswer || nd.msg[k] == msgLost || nd.msg[k] == msgMiss) {
				out = append(out, latchStep{c.land(w, k, i), fmt.Sprintf("countDown %d lands on node %d", op.id, i), ""})
				inFlight = inFlight || nd.msg[k] != msgLost
			}
			if flying, ans := claimFlying(nd.cmsg[k]); op.claim && flying {
				out = append(out, latchStep{c.landClaim(w, k, i), fmt.Sprintf("countDown %d's claim lands on node %d", op.id, i), ""})
				inFlight = inFlight || ans
			}
		}
		if !inFlight {
			out = append(out, c.decide(w, k)...)
		}
	}
	if c.olderClaim && slices.ContainsFunc(w.nodes, func(nd latchNode) bool { return nd.oclaim > ocNone }) &&
		!slices.ContainsFunc(w.nodes, func(nd latchNode) bool { return nd.oclaim == ocFlight }) {
		out = append(out, c.decideOlderClaim(w))
	}
	if c.deletes && !w.deleted && w.made >= c.count {
		next := w.clone()
		next.deleted = true
		for i := range next.nodes {
			next.nodes[i].del = true
		}
		out = append(out, latchStep{next, "delete() sent", ""})
	}
	if c.newer && w.newer == 0 && w.made >= c.count {
		next := w.clone()
		next.newer = 1
		for i := range next.nodes {
			next.nodes[i].nset = true
		}
		out = append(out, latchStep{next, "a newer trySetCount sent", ""})
	}
	for i, nd := range w.nodes {
		if nd.nset {
			for _, v := range []uint8{1, 2} {
				next := w.clone()
				c.landNewer(&next, i, v)
				out = append(out, latchStep{next, fmt.Sprintf("the newer set (%d) lands on node %d", v, i), ""})
			}
		}
		if nd.del {
			next := w.clone()
			c.landDelete(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("the delete lands on node %d", i), ""})
		}
		if c.undos && int(w.undos) < c.n-c.quorum && nd.seeded && nd.v == 0 && !nd.lset && (!c.undosFirst || w.made == 0 && (nd.bare() || c.undosOld && nd.tag == tagOld)) {
			// A denied set lands and is undone: its "m:" "0" stays, with
			// no tag (claims there are nobody's, as in between), but
			// where the set found no field of the slot or a free one.
			next := w.clone()
			next.undos++
			nn := &next.nodes[i]
			// The set found no field of the slot, or a free one (a tag
			// and "m:" "0"; latch_set.lua's "bare"): its undo takes "m:"
			// too (attack15 L6, L6').
			bare := nd.bare() || nd.claim == claimFree && nd.tag != tagNone && nd.tag != tagDead
			if c.variant != latchClaimInSlotRead && c.variant != latchUndoBare {
				keepVote(nn, tagNone) // the set keeps a vote it replaces
			}
			nn.tag, nn.claim, nn.marked, nn.carried = tagNone, claimFree, false, false
			if c.variant == latchUndoBare || bare && c.variant != latchUndoLeavesClaim {
				nn.claim = claimNone
			}
			out = append(out, latchStep{next, fmt.Sprintf("a denied set lands on node %d and is undone", i), ""})
		}
		if nd.late > 0 {
			next := w.clone()
			next.nodes[i].late--
			c.decr(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("a late decrement lands on node %d", i), ""})
		}
		if nd.across > 0 {
			// It names the set its countDown read before the restart.
			next := w.clone()
			next.nodes[i].across--
			if c.variant == latchSeedCopyNonce && next.nodes[i].seeded {
				c.decr(&next, i)
			}
			out = append(out, latchStep{next, fmt.Sprintf("a decrement read before node %d's restart lands on it", i), ""})
		}
		if nd.older > 0 {
			// It names the older set's nonce: no count of this latch.
			next := w.clone()
			next.nodes[i].older--
			if c.variant == latchUntagged {
				c.decr(&next, i)
			}
			out = append(out, latchStep{next, fmt.Sprintf("an older latch's decrement lands on node %d", i), ""})
		}
		if nd.oclaim == ocFlight {
			next := w.clone()
			c.landOlderClaim(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("the older latch's claim lands on node %d", i), ""})
			if !c.noFaults {
				lost := w.clone()
				lost.nodes[i].oclaim = ocNone
				out = append(out, latchStep{lost, fmt.Sprintf("the older latch's claim to node %d is lost", i), ""})
			}
		}
		if nd.lset {
			next := w.clone()
			c.landLateSet(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("the set lands late on node %d", i), ""})
		}
		if nd.reset {
			next := w.clone()
			c.landReset(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("the set's reset lands on node %d", i), ""})
		}
		if w.restarts < c.maxRestarts && (!c.noFaults || c.restartOnly) {
			next := w.clone()
			c.restart(&next, i)
			out = append(out, latchStep{next, fmt.Sprintf("node %d restarts empty", i), ""})
		}
		if !nd.seeded && c.variant != latchCountRestart && (c.variant == latchSeedNoWait || c.idle(nd)) {
			out = append(out, c.seeds(w, i)...)
		}
	}
	return out
}

// ballot is the claim slot tag a countDown's read finds on a quorum or
// more of the counted nodes (tagNone: none), as latch.go's latchBallot.
func (c *latchChecker) ballot(w latchWorld) uint8 {
	by := map[uint8]int{}
	for _, nd := range w.nodes {
		if c.counted(nd) && nd.tag != tagNone && nd.tag != tagDead && (!nd.carried || c.variant == latchBallotCarried) {
			by[nd.tag]++
		}
	}
	for t, k := range by {
		if k >= c.quorum {
			return t
		}
	}
	return tagNone
}

// landDelete: a delete() lands on node i (latch_del.lua): the count and
// the claim go, the slot's tag becomes a tombstone where it had a slot
// (with latchDeleteNoTombstone it goes too). A decrement in flight misses.
func (c *latchChecker) landDelete(w *latchWorld, i int) {
	nd := &w.nodes[i]
	nd.del = false
	if !nd.seeded {
		return
	}
	if !nd.bare() {
		if c.variant != latchTombForgets && c.variant != latchDeleteNoTombstone {
			nd.rem |= nd.votes() | nd.fgt
		}
		nd.fgt = 0
		nd.tag, nd.claim, nd.marked, nd.vb, nd.ptag, nd.pclaim = tagDead, claimNone, false, tagNone, tagNone, claimNone
		nd.carried = false
		if c.variant == latchDeleteNoTombstone {
			nd.tag = tagNone
		}
	}
	nd.v, nd.stale, nd.reset, nd.late = 0, false, false, 0
	for k := range nd.msg {
		switch nd.msg[k] {
		case msgAnswer:
			nd.msg[k] = msgMiss
		case msgLost:
			nd.msg[k] = msgNone
		}
	}
}

// restart empties node i: what was on its way to it stays on its way,
// and a decrement names the set its countDown read before.
func (c *latchChecker) restart(w *latchWorld, i int) {
	nd := &w.nodes[i]
	across := nd.across + nd.late
	for k, m := range nd.msg {
		if m == msgAnswer || m == msgLost || m == msgMiss {
			// Its countDown stops waiting for it (the connection died);
			// it may land yet (a miss lands without effect).
			across += btob(m != msgMiss)
			nd.msg[k] = msgNone
		}
	}
	*nd = latchNode{across: across, older: nd.older, oclaim: nd.oclaim, lset: nd.lset, del: nd.del, msg: nd.msg, cmsg: nd.cmsg}
	w.restarts++
}

// landReset: the set's reset lands on node i; it sets the count only
// while the older latch's count it found is still there.
func (c *latchChecker) landReset(w *latchWorld, i int) {
	nd := &w.nodes[i]
	nd.reset = false
	if !nd.seeded || !nd.stale || nd.v == 0 {
		return
	}
	switch {
	case c.variant == latchClaimInSlotRead, c.variant == latchResetKeepsClaim:
		if nd.claim == claimNone {
			nd.claim = claimFree
		}
	case nd.tag != tagSet:
		// A claim given for another ballot is kept as such; the slot is
		// this latch's to take (attack15 L5).
		if !keepVote(nd, tagSet) {
			nd.claim = claimFree
		}
		slotGone(nd)
	}
	nd.v, nd.stale, nd.tag, nd.carried = c.count, false, tagSet, false
	// A decrement of the older count's set misses now.
	nd.late = 0
	for k := range nd.msg {
		switch nd.msg[k] {
		case msgAnswer:
			nd.msg[k] = msgMiss
		case msgLost:
			nd.msg[k] = msgNone
		}
	}
}

// landLateSet: the set's message lands on node i late (latch_set.lua):
// where it is counted and has no count, it sets the count and its tag,
// and the slot to take, unless the slot is already of this set (a claim
// created it, or a seed kept its tag): that claim stays. A decrement in
// flight read the node before: it misses, as had it landed first; so
// does a claim, unless it read no tag and its ballot is this set's.
func (c *latchChecker) landLateSet(w *latchWorld, i int) {
	nd := &w.nodes[i]
	nd.lset = false
	if !nd.seeded || nd.v > 0 {
		return
	}
	kept := nd.tag == tagSet && c.variant != latchClaimNoCreate
	if !kept && c.variant != latchClaimInSlotRead {
		// A vote kept of this set's slot is its claim again; the one
		// given in the slot it replaces is kept.
		restored := claimFree
		if nd.ptag == tagSet {
			restored, nd.ptag, nd.pclaim = nd.pclaim, tagNone, claimNone
		}
		if keepVote(nd, tagSet) {
			restored = nd.claim
		}
		nd.v, nd.tag, nd.claim, nd.carried = c.count, tagSet, restored, false
		for k, m := range nd.cmsg {
			// A claim that read another slot misses; one that read none
			// may take this one, of its ballot (latch_claim.lua).
			switch m {
			case msgAnswer:
				nd.cmsg[k] = msgAnswerGone
			case msgLost:
				nd.cmsg[k] = msgLostGone
			}
		}
		for k := range nd.msg {
			switch nd.msg[k] {
			case msgAnswer:
				nd.msg[k] = msgMiss
			case msgLost:
				nd.msg[k] = msgNone
			}
		}
		nd.late = 0
		return
	}
	nd.v, nd.tag, nd.carried = c.count, tagSet, false
	if !kept {
		nd.claim = claimFree
	}
	nd.late = 0
	for k := range nd.msg {
		switch nd.msg[k] {
		case msgAnswer:
			nd.msg[k] = msgMiss
		case msgLost:
			nd.msg[k] = msgNone
		}
		if kept {
			continue
		}
		switch m := nd.cmsg[k]; {
		case (m == msgAnswerNone || m == msgLostNone) && w.ops[k].ballot == tagSet && c.variant != latchClaimNoCreate:
		case m == msgAnswer || m == msgAnswerNone:
			nd.cmsg[k] = claimNobody
		case m == msgLost || m == msgLostNone:
			nd.cmsg[k] = msgNone
		}
	}
}

// landNewer: the newer set (count v) lands on node i (latch_set.lua, its
// own tag): where the node counts and has no count, it sets v and a slot
// of its tag, to take; a vote given in the slot it replaces is kept
// (with latchClaimInSlotRead: lost). A decrement or claim in flight read
// the node before. Once it landed on N-Q nodes it lands nowhere else.
func (c *latchChecker) landNewer(w *latchWorld, i int, v uint8) {
	nd := &w.nodes[i]
	nd.nset = false
	w.newer++
	if int(w.newer)-1 >= c.n-c.quorum {
		for j := range w.nodes {
			w.nodes[j].nset = false
		}
	}
	if !nd.seeded || nd.v > 0 {
		return
	}
	if c.variant != latchClaimInSlotRead {
		keepVote(nd, tagNew)
	}
	nd.v, nd.tag, nd.claim, nd.marked, nd.stale, nd.vb, nd.carried = v, tagNew, claimFree, false, false, tagNone, false
	slotGone(nd)
	nd.late = 0
	for k := range nd.msg {
		switch nd.msg[k] {
		case msgAnswer:
			nd.msg[k] = msgMiss
		case msgLost:
			nd.msg[k] = msgNone
		}
	}
}

// idle: no decrement of a round that read it counted in flight to it
// (the seeding's wait). A decrement read before its restart, and a claim,
// need not have ended: they are sent after the mark (K2, K1).
func (c *latchChecker) idle(nd latchNode) bool {
	if nd.late > 0 || nd.lset {
		return false
	}
	for k := range nd.msg {
		if nd.msg[k] == msgAnswer || nd.msg[k] == msgLost || nd.msg[k] == msgMiss {
			return false
		}
	}
	return true
}

// seeds: node i seeded from every subset of a quorum or more of counted
// nodes.
func (c *latchChecker) seeds(w latchWorld, i int) []latchStep {
	var idx []int
	for j, nd := range w.nodes {
		if j != i && nd.seeded {
			idx = append(idx, j)
		}
	}
	var out []latchStep
	for mask := 1; mask < 1<<len(idx); mask++ {
		var srcs []latchNode
		for b, j := range idx {
			if mask&(1<<b) != 0 {
				srcs = append(srcs, w.nodes[j])
			}
		}
		if len(srcs) < c.quorum {
			continue
		}
		var counts, tags []int64
		var claim uint8
		claimable, named := true, false
		for _, src := range srcs {
			counts, tags = append(counts, int64(src.v)), append(tags, int64(src.tag))
			claim = max(claim, src.claim)
			claimable = claimable && src.v > 0 && src.claim == claimFree
			named = named || src.v > 0 || src.claim != claimNone || src.tag != tagNone
		}
		// A count's nonce is its slot's tag while it lasts.
		v, zeros, dropped := latchSeedCount(counts, tags, tags, c.quorum)
		switch c.variant {
		case latchSeedKthLarge:
			v = kthLargest(counts, c.quorum)
		case latchSeedNoDrop:
			v, zeros, dropped = latchSeed(counts, c.quorum), nil, nil
		}
		// Seeded with none, it keeps a tag counted down to 0 as the
		// evidence: one whose leftover it dropped, else any (latchSeedFields
		// takes the largest nonce; each is explored).
		carries := []uint8{tagNone}
		if v == 0 && len(zeros) > 0 {
			from := zeros
			if len(dropped) > 0 {
				from = dropped
			}
			carries = nil
			for _, t := range from {
				carries = append(carries, uint8(t))
			}
		}
		for _, carry := range carries {
			next := w.clone()
			nn := &next.nodes[i]
			nn.v, nn.seeded, nn.marked, nn.claim, nn.tag = uint8(v), true, true, claimNone, carry
			nn.vb, nn.ptag, nn.pclaim = tagNone, tagNone, claimNone
			nn.carried = carry != tagNone
			nn.rem, nn.fgt = remAny, 0 // it may have voted for any ballot before
			if v > 0 {
				nn.tag, nn.carried = tagSeed+w.restarts, false
			}
			switch {
			case c.variant == latchSeedCopyClaim:
				nn.marked = false
				if claim > claimFree {
					nn.claim = claim
				}
			case claimable || c.variant == latchSeedClaimable:
				nn.claim = claimFree
				next.seededFree = c.restartOnly && !w.claimed
			case !named:
				nn.marked = false // no field of the latch to seed: none
			}
			out = append(out, latchStep{next, fmt.Sprintf("node %d seeded from %v: %d, claim %d, tag %d", i, counts, v, nn.claim, nn.tag), ""})
		}
	}
	return out
}

// fates: every node answers, loses its reply, or is not reached; at most
// maxNotUp nodes not answering.
func (c *latchChecker) fates() [][]uint8 {
	var out [][]uint8
	var gen func(v []uint8)
	gen = func(v []uint8) {
		if len(v) == c.n {
			notUp, lost := 0, 0
			for _, f := range v {
				if f != msgAnswer {
					notUp++
				}
				if f == msgLost {
					lost++
				}
			}
			if notUp <= c.maxNotUp && (c.n <= 3 || lost <= 1) {
				out = append(out, slices.Clone(v))
			}
			return
		}
		for _, f := range []uint8{msgAnswer, msgLost, msgNone} {
			if f == msgAnswer || !c.noFaults && !c.restartOnly {
				gen(append(v, f))
			}
		}
	}
	gen(nil)
	return out
}

// decr is the countDown's script on node i: its old count, and whether
// the node counts.
func (c *latchChecker) decr(w *latchWorld, i int) (old uint8, counted bool) {
	nd := &w.nodes[i]
	if !c.counted(*nd) {
		return 0, false
	}
	old = nd.v
	if nd.v > 0 {
		nd.v--
		if nd.v == 0 {
			nd.stale = false // the count and its nonce are deleted
			if c.rule == ruleNodeZero {
				w.msgs++ // each node publishes as Redisson's script does
				w.early = w.early || w.made < c.count
			}
		}
	}
	return old, true
}

func (c *latchChecker) land(w latchWorld, k, i int) latchWorld {
	next := w.clone()
	nd := &next.nodes[i]
	m := nd.msg[k]
	var old uint8
	counted, dec := c.counted(*nd), uint8(0)
	switch {
	case m == msgMiss || !counted:
		old = nd.v
	default:
		old, _ = c.decr(&next, i)
		dec = 1
	}
	nd = &next.nodes[i]
	switch {
	case m == msgLost:
		nd.msg[k] = msgNone
	case counted:
		nd.msg[k] = msgOld0 + 2*old + dec
	default:
		nd.msg[k] = msgPending
	}
	return next
}

// An older latch's claim in flight (olderClaim): none, in flight, or
// landed with the claim the node answered (ocAnswer + the claim).
const (
	ocNone   uint8 = 0
	ocFlight uint8 = 1
	ocAnswer uint8 = 2
)

// landOlderClaim lands the older latch's claim on node i as landClaim
// does: it takes a free slot (claimOld), else the node answers its claim;
// in a slot of this latch it names another's nonce, and is nobody's.
func (c *latchChecker) landOlderClaim(w *latchWorld, i int) {
	nd := &w.nodes[i]
	if c.counted(*nd) && (nd.ptag == tagOld || nd.ptag == tagAny) && c.variant != latchClaimInSlotRead {
		nd.oclaim = ocAnswer + nd.pclaim // a vote kept for its ballot
		return
	}
	switch {
	case c.counted(*nd) && (nd.bare() && c.variant != latchClaimNoCreate || nd.tag == tagDead && nd.claim == claimNone) && c.mayVote(*nd, tagOld):
		// It may have read no tag there too: it creates a slot of the
		// older latch's tag; so does it at a tombstone of a delete
		// that no vote of that latch came before (L4).
		nd.tag = tagOld
		nd.vote(claimOld, tagOld)
	case !c.counted(*nd), nd.tag == tagNone, nd.tag == tagDead, nd.claim == claimNone && nd.marked, nd.ours() && c.variant != latchClaimUntagged:
		nd.oclaim = ocNone // not seeded, nobody's, or this latch's slot: no answer
		return
	case nd.claim == claimNone || nd.claim == claimFree:
		nd.vote(claimOld, tagOld)
	}
	nd.oclaim = ocAnswer + nd.claim
}

// decideOlderClaim: the older countDown decides its claim once every
// message landed or was lost; its "0" goes to the channel this latch
// shares.
func (c *latchChecker) decideOlderClaim(w latchWorld) latchStep {
	next := w.clone()
	var claims []uint8
	for i := range next.nodes {
		if a := next.nodes[i].oclaim; a >= ocAnswer {
			claims = append(claims, a-ocAnswer)
		}
		next.nodes[i].oclaim = ocNone
	}
	publish := latchClaimWon(claims, claimOld, c.n, c.quorum)
	bad := ""
	if publish {
		next.msgs++
		if next.made < c.count {
			bad = fmt.Sprintf("the older latch's countDown sends the zero message, after %d countDowns of %d of this latch: %v", next.made, c.count, next)
		}
	}
	return latchStep{next, fmt.Sprintf("the older latch's countDown decides its claim on %v (message %v)", claims, publish), bad}
}

// landClaim: the first claim stays; the answer is the claim the node has,
// or nobody's on a node seeded after a restart that got no set since.
func (c *latchChecker) landClaim(w latchWorld, k, i int) latchWorld {
	next := w.clone()
	nd := &next.nodes[i]
	_, answer := claimFlying(nd.cmsg[k])
	none := nd.cmsg[k] == msgAnswerNone || nd.cmsg[k] == msgLostNone
	gone := nd.cmsg[k] == msgAnswerGone || nd.cmsg[k] == msgLostGone
	nd.cmsg[k] = msgNone
	if !c.counted(*nd) {
		return next
	}
	got, ballot := nd.claim, w.ops[k].ballot
	create := c.variant != latchClaimNoCreate && ballot != tagNone
	b := nd.vb
	if b == tagNone {
		b = nd.tag
	}
	fgt := nd.fgt
	if c.variant == latchForgotAnyMemory {
		fgt |= nd.rem
	}
	switch {
	case nd.tag != tagDead && fgt != 0 && (ballot == tagNone || ballot != b && ballot != nd.ptag && fgt&(remBit(ballot)|remAny) != 0):
		// A ballot whose vote its node forgot while its slot lived (or
		// none, which may be such a one): nobody's.
		got = claimNobody
	case nd.tag == tagDead:
		got = claimNobody // a tombstone: of a ballot its node voted for, or of none
		if nd.claim == claimNone && c.mayVote(*nd, ballot) {
			// A ballot its node never voted for gets a slot of its
			// own (L4: else the tombstone of a master the set missed
			// split the claims).
			nd.tag = ballot
			nd.vote(claimOf(w.ops[k].id), ballot)
			got = nd.claim
		}
	case nd.ptag != tagNone && (nd.ptag == ballot || nd.ptag == tagAny || ballot == tagNone) && c.variant != latchClaimInSlotRead:
		got = nd.pclaim // a vote kept for its ballot, or any (review28 F0)
		if ballot == tagNone && nd.ptag != tagAny && c.variant != latchClaimOneBallot {
			// A claim of none may be of either ballot: beside a vote in
			// the slot it is nobody's; else the kept vote answers any
			// from now on (L3).
			if nd.claim > claimFree {
				got = claimNobody
			} else {
				nd.ptag = tagAny
			}
		}
	case gone:
		got = claimNobody // the slot it read was replaced
	case none && create && nd.bare() && c.mayVote(*nd, ballot):
		// It read no tag, and the node has no slot: it creates one of
		// its ballot, with its claim.
		nd.tag = ballot
		nd.vote(claimOf(w.ops[k].id), ballot)
		got = nd.claim
	case none && (!create || nd.tag != ballot):
		got = claimNobody // not this ballot's slot
	case nd.tag == tagNone, nd.tag == tagDead, nd.claim == claimNone && nd.marked:
		got = claimNobody // no slot (latch_claim.lua), a tombstone, or nobody's
	case nd.claim == claimNone || nd.claim == claimFree:
		nd.vote(claimOf(w.ops[k].id), ballot)
		got = nd.claim
	case c.variant != latchClaimOneBallot:
		// A vote. One given for another ballot (an older latch's: a
		// ballot is a set's tag, never a seed's carried one) is kept by
		// its ballot where no vote is kept yet, and the node votes for
		// this one, its slot's tag left (L3: the older vote split the
		// claims, and the tie-break took it). One shown to a claim of
		// none answers any from now on.
		switch {
		case ballot != tagNone && b != tagAny && b != ballot && (nd.ptag == tagNone || c.variant != latchClaimTwoBallots):
			// A vote kept already (of a third ballot) is forgotten,
			// its ballot remembered apart (fgt: the rest of L3).
			if nd.ptag != tagNone {
				nd.fgt |= remBit(nd.ptag)
			}
			nd.ptag, nd.pclaim = b, nd.claim
			nd.vote(claimOf(w.ops[k].id), ballot)
			got = nd.claim
		case ballot == tagNone && b != tagAny:
			nd.vb = tagAny
		}
	}
	if answer {
		nd.cmsg[k] = msgLost + 1 + got
		if got == claimNobody {
			nd.cmsg[k] = claimNobody
		}
	}
	return next
}

// decide: the countDown's decision once every answer is in; a claim
// round starts with every fate of its messages.
func (c *latchChecker) decide(w latchWorld, k int) []latchStep {
	next := w.clone()
	op := next.ops[k]
	var step string // each branch names what it decided
	next.ops[k] = latchFlight{}
	publish := false
	if op.claim {
		var claims []uint8
		for i := range next.nodes {
			nd := &next.nodes[i]
			if m := nd.cmsg[k]; m > msgLost && m < msgAnswerNone {
				claims = append(claims, m-msgLost-1)
			}
			nd.cmsg[k] = msgNone
		}
		if c.oldLeast {
			for j, cl := range claims {
				if cl == claimOld {
					claims[j] = claimFree // below every countDown's
				}
			}
		}
		publish = latchClaimWon(claims, claimOf(op.id), c.n, c.quorum)
		if c.variant == latchClaimNoTieBreak {
			publish = latchClaimWon(claims, claimOf(op.id), c.n+1, c.quorum)
		}
		if c.variant == latchReclaimOpened && op.allZero && (publish || slices.ContainsFunc(claims, func(cl uint8) bool {
			return sameCount(claims, cl) >= c.quorum
		})) {
			// latch20c's reclaim, landed at once: no slot left where no count.
			for i := range next.nodes {
				if nd := &next.nodes[i]; nd.seeded && nd.v == 0 {
					nd.tag, nd.claim = tagNone, claimNone
				}
			}
		}
		step = fmt.Sprintf("countDown %d decides its claim on %v (message %v)", op.id, claims, publish)
	} else {
		var before, after []int64
		counted, allZero := false, true
		for i := range next.nodes {
			nd := &next.nodes[i]
			if m := nd.msg[k]; m >= msgOld0 && m != msgPending {
				old, dec := int64((m-msgOld0)/2), int64((m-msgOld0)%2)
				before = append(before, old)
				after = append(after, max(old-dec, 0))
				counted = counted || old > 0 && dec == 1
				allZero = allZero && old-dec <= 0
			}
			if nd.msg[k] == msgLost {
				nd.late++ // it lands after the decision, if at all
			}
			nd.msg[k] = msgNone
		}
		if len(before) >= c.quorum {
			switch c.rule {
			case ruleFlip:
				above, zeros := 0, 0
				for j := range before {
					above += int(btob(before[j] > 0))
					zeros += int(btob(after[j] == 0))
				}
				publish = above >= c.quorum && zeros >= c.quorum
			case ruleCrossed:
				crossed := 0
				for j := range before {
					if before[j] > 0 && after[j] == 0 {
						crossed++
					}
				}
				publish = crossed >= c.quorum
			case ruleClaim:
				if v, ok := latchCount(after, c.quorum); ok && v == 0 && (counted || c.variant != latchClaimCountedOnly) {
					var out []latchStep
					for _, fates := range c.fates() {
						if c.n > 3 && slices.Contains(fates, msgLost) {
							continue // over 5 nodes a claim's reply is not lost
						}
						if c.healed && slices.ContainsFunc(fates, func(f uint8) bool { return f != msgAnswer }) {
							continue // claims meet no fault
						}
						cl := next.clone()
						cl.ops[k] = latchFlight{id: op.id, claim: true, allZero: c.variant == latchReclaimOpened && allZero && len(before) == c.n, ballot: op.ballot}
						cl.claimed = c.restartOnly
						for i, f := range fates {
							if cl.nodes[i].tag == tagNone {
								// It read no tag there (nonce "0").
								f = map[uint8]uint8{msgAnswer: msgAnswerNone, msgLost: msgLostNone, msgNone: msgNone}[f]
							}
							cl.nodes[i].cmsg[k] = f
						}
						out = append(out, latchStep{cl, fmt.Sprintf("countDown %d reads open %v, claims %v", op.id, after, fates), ""})
					}
					return out
				}
			}
		}
		step = fmt.Sprintf("countDown %d decides on %v -> %v (message %v)", op.id, before, after, publish)
	}
	bad := ""
	if publish {
		next.msgs++
		if next.made < c.count {
			bad = fmt.Sprintf("zero message after %d countDowns of %d: %v", next.made, c.count, next)
		}
	}
	return []latchStep{{next, step, bad}}
}

// latchConfig is one exploration.
type latchConfig struct {
	name        string
	nodes       int
	rule        latchRule
	variant     latchVariant
	noFaults    bool // every message answered, no restart: countDowns in flight at once
	restartOnly bool // every message answered, one restart (checks it opens)
	inFlight    int
	olderLate   bool    // as latchChecker's
	staleCounts []uint8 // as latchChecker's; default 1
	oldClaims   bool    // as latchChecker's
	olderClaim  bool    // as latchChecker's
	allSet      bool    // as latchChecker's
	lateSet     bool    // as latchChecker's
	deletes     bool    // as latchChecker's
	undos       bool    // as latchChecker's
	undosFirst  bool    // as latchChecker's
	undosOld    bool    // as latchChecker's
	tombs       bool    // as latchChecker's
	kept        bool    // as latchChecker's
	newer       bool    // as latchChecker's
	staleClaims bool    // as latchChecker's
	oldLeast    bool    // as latchChecker's
	healed      bool    // as latchChecker's
	restarts    uint8   // at most; default 1
	noRestart   bool    // no node restarts
	maxMade     uint8   // countDowns made; default 3
	long        bool    // left out under -short
}

func (cfg latchConfig) run() *latchChecker {
	c := newLatchChecker(cfg.nodes, cfg.rule, cfg.variant)
	c.noFaults, c.inFlight, c.olderLate = cfg.noFaults, max(cfg.inFlight, 1), cfg.olderLate
	c.restartOnly, c.oldClaims, c.olderClaim, c.allSet = cfg.restartOnly, cfg.oldClaims, cfg.olderClaim, cfg.allSet
	c.lateSet, c.deletes, c.undos, c.undosFirst, c.healed = cfg.lateSet, cfg.deletes, cfg.undos, cfg.undosFirst, cfg.healed
	c.newer, c.staleClaims, c.oldLeast = cfg.newer, cfg.staleClaims, cfg.oldLeast
	c.undosOld, c.tombs, c.kept = cfg.undosOld, cfg.tombs, cfg.kept
	if cfg.restarts > 0 {
		c.maxRestarts = cfg.restarts
	}
	if cfg.noRestart {
		c.maxRestarts = 0
	}
	if cfg.staleCounts != nil {
		c.staleCounts = cfg.staleCounts
	}
	if cfg.maxMade > 0 {
		c.maxMade = cfg.maxMade
	}
	c.limit = 4000000 // about 3 GB: a bound, not a result (the largest world, the delete world, is 3.48 million)
	c.run()
	return c
}

// stale13 starts from an older latch's counts below n (2) and above n+1.
var stale13 = []uint8{1, 4}

// noStale starts with no older latch's count.
var noStale = []uint8{}

// TestLatchNeverOpensEarly explores the design: reads by latchCount, seeding
// by latchSeedFields after the wait, the zero message by claims. Without
// faults the zero message is sent exactly once, whatever the order in
// which three countDowns at once land on the nodes; with faults, at most
// once. With a restart (and no message lost) it can be sent by no one: a
// countDown's decrement to the node was cut by the restart, and the seed
// read the latch open. With a restart it opens after its countDowns.
func TestLatchNeverOpensEarly(t *testing.T) {
	for _, cfg := range []latchConfig{
		{name: "3 nodes, faults, 2 countDowns", nodes: 3, rule: ruleClaim, maxMade: 2},
		{name: "3 nodes, 3 countDowns at once", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, staleCounts: stale13, oldClaims: true},
		{name: "3 nodes, a restart, 2 countDowns at once", nodes: 3, rule: ruleClaim, restartOnly: true, inFlight: 2, staleCounts: stale13, oldClaims: true},
		{name: "3 nodes, faults", nodes: 3, rule: ruleClaim, oldClaims: true, long: true},
		{name: "3 nodes, faults, older counts 1 and 4", nodes: 3, rule: ruleClaim, staleCounts: stale13, long: true},
		{name: "3 nodes, an older latch's decrements in flight, 2 countDowns", nodes: 3, rule: ruleClaim, olderLate: true, maxMade: 2, long: true},
		{name: "5 nodes, faults, 2 countDowns", nodes: 5, rule: ruleClaim, maxMade: 2, long: true},
		{name: "5 nodes, 2 countDowns at once", nodes: 5, rule: ruleClaim, noFaults: true, inFlight: 2, staleCounts: stale13, long: true},
		{name: "3 nodes, every node set, faults, a restart: open for good", nodes: 3, rule: ruleClaim, allSet: true, staleCounts: noStale},
		{name: "5 nodes, every node set, faults, a restart, 2 countDowns: open for good", nodes: 5, rule: ruleClaim, allSet: true, staleCounts: noStale, maxMade: 2},
		{name: "3 nodes, a set landing late, faults, a restart: open for good", nodes: 3, rule: ruleClaim, allSet: true, lateSet: true, staleCounts: noStale, long: true},
		{name: "3 nodes, faults on the first 2 countDowns' decrements, a third with none: it sends the zero message", nodes: 3, rule: ruleClaim, healed: true, noRestart: true},
		{name: "5 nodes, faults on the first 2 countDowns' decrements, a third with none: it sends the zero message", nodes: 5, rule: ruleClaim, healed: true, noRestart: true, staleCounts: noStale},
		{name: "3 nodes, an older latch's claim in flight, 2 countDowns at once", nodes: 3, rule: ruleClaim, noFaults: true, olderClaim: true, inFlight: 2, maxMade: 2},
		{name: "3 nodes, a denied set undone before 3 countDowns at once (L6)", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, undos: true, undosFirst: true, staleCounts: noStale},
		{name: "3 nodes, faults, a delete of the opened latch, a denied set undone, no restart", nodes: 3, rule: ruleClaim, deletes: true, undos: true, staleCounts: noStale, noRestart: true, long: true},
		{name: "3 nodes, an older latch's count and claim reset, 3 countDowns at once (L5)", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, staleClaims: true, oldLeast: true},
		{name: "3 nodes, a denied set undone on a master holding an older latch's slot, 3 countDowns at once (L6')", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, undos: true, undosFirst: true, undosOld: true, staleCounts: noStale},
		{name: "3 nodes, a master that missed the set holding an older opening's claim, 3 countDowns at once (L3)", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, oldClaims: true, oldLeast: true, staleCounts: noStale},
		{name: "3 nodes, faults, 2 countDowns, masters that missed the set holding an older opening's claim (L3)", nodes: 3, rule: ruleClaim, oldClaims: true, oldLeast: true, staleCounts: noStale, maxMade: 2},
		{name: "3 nodes, a master that missed the set holding an older latch's delete() tombstone, 3 countDowns at once (L4)", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, tombs: true, staleCounts: noStale},
		{name: "3 nodes, faults, 2 countDowns, masters that missed the set holding an older latch's tombstone or its opening's claim (L4)", nodes: 3, rule: ruleClaim, tombs: true, oldClaims: true, staleCounts: noStale, maxMade: 2},
		{name: "3 nodes, faults, 2 countDowns, masters that missed the set holding older openings' votes, one beside a kept one (the rest of L3)", nodes: 3, rule: ruleClaim, kept: true, oldClaims: true, oldLeast: true, staleCounts: noStale, maxMade: 2},
		{name: "3 nodes, a delete of the opened latch, 2 countDowns at once", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 2, maxMade: 2, deletes: true, staleCounts: noStale},
		{name: "3 nodes, faults, a newer set landing on a minority after the opening, no restart (F0)", nodes: 3, rule: ruleClaim, newer: true, staleCounts: noStale, noRestart: true, long: true},
	} {
		if (testing.Short() || modelUnderRace) && cfg.long {
			continue // the explorer runs on one goroutine: slow under -race
		}
		c := cfg.run()
		if c.limit > 0 && c.states >= c.limit {
			t.Fatalf("%s: more than %d states", cfg.name, c.limit)
		}
		t.Logf("%s: %d states, %d steps; %d quiescent states open without a zero message (%d more where a node missed the set with no slot)", cfg.name, c.states, c.steps, c.stuck, c.stuckSlotless)
		if c.violation != "" {
			t.Errorf("%s: %s", cfg.name, c.violation)
		}
		if c.closed > 0 {
			t.Errorf("%s: %d quiescent states after every countDown read shut: %s", cfg.name, c.closed, c.closedTrace)
		}
		// An older latch's claim landing after this latch's set and
		// countDowns is a message late past later operations: it may
		// take a slot this latch's claims need (counted, not checked).
		if c.unrepaired > 0 {
			t.Errorf("%s: %d quiescent states after a countDown with no fault read open without a zero message: %s", cfg.name, c.unrepaired, c.stuckTrace)
		}
		if cfg.noFaults && !cfg.olderClaim && c.stuck+c.stuckSlotless > 0 {
			t.Errorf("%s: the latch opened and no zero message was sent: %s", cfg.name, c.stuckTrace)
		}
		if c.stuckSeeded > 0 {
			t.Errorf("%s: %d quiescent states open without a zero message, every claim made after a seed left the claim to take: %s", cfg.name, c.stuckSeeded, c.stuckSeededTrace)
		}
	}
}

// TestLatchCheckerCatchesBrokenVariants: each broken rule is caught.
func TestLatchCheckerCatchesBrokenVariants(t *testing.T) {
	for _, cfg := range []latchConfig{
		{name: "read the quorum-th largest count", nodes: 3, rule: ruleClaim, variant: latchReadKthLarge},
		{name: "seed with the quorum-th largest count", nodes: 3, rule: ruleClaim, variant: latchSeedKthLarge},
		{name: "a node restarted empty counts at once", nodes: 3, rule: ruleClaim, variant: latchCountRestart},
		{name: "seed with decrements in flight", nodes: 3, rule: ruleClaim, variant: latchSeedNoWait, maxMade: 2},
		{name: "each node publishes at its zero (Redisson's script)", nodes: 3, rule: ruleNodeZero},
		{name: "the countDown that took a quorum to 0 publishes", nodes: 3, rule: ruleCrossed, noFaults: true, inFlight: 3},
		{name: "claims without the tie-break", nodes: 3, rule: ruleClaim, variant: latchClaimNoTieBreak, noFaults: true, inFlight: 3},
		{name: "a quorum above 0 before, at 0 after", nodes: 3, rule: ruleFlip, noFaults: true, inFlight: 3},
		{name: "decrements not tagged with their set's nonce", nodes: 3, rule: ruleClaim, variant: latchUntagged, olderLate: true},
		{name: "the seed copies the set's nonce (K2)", nodes: 3, rule: ruleClaim, variant: latchSeedCopyNonce},
		{name: "the seed copies the highest claim (K1)", nodes: 3, rule: ruleClaim, variant: latchSeedCopyClaim, restartOnly: true, inFlight: 2, staleCounts: stale13},
		{name: "the seed leaves the claim to take", nodes: 3, rule: ruleClaim, variant: latchSeedClaimable, restartOnly: true, inFlight: 2, staleCounts: stale13},
		{name: "a claim takes a slot of another latch (Z1)", nodes: 3, rule: ruleClaim, variant: latchClaimUntagged, noFaults: true, olderClaim: true, maxMade: 2},
		{name: "a granted set leaves an older latch's count (L1)", nodes: 3, rule: ruleClaim, variant: latchNoReset, restartOnly: true, staleCounts: stale13},
		{name: "the seed copies a leftover of a set counted to 0 (S1)", nodes: 3, rule: ruleClaim, variant: latchSeedNoDrop, allSet: true, staleCounts: noStale},
		{name: "a decided countDown that read every node at 0 reclaims the slots (review27)", nodes: 3, rule: ruleClaim, variant: latchReclaimOpened, allSet: true, lateSet: true, staleCounts: noStale},
		{name: "a claim where a node has no slot is nobody's (latch20c's split)", nodes: 3, rule: ruleClaim, variant: latchClaimNoCreate, noFaults: true, inFlight: 3},
		{name: "delete() leaves no tombstone, a claim creates the slot again (U1b)", nodes: 3, rule: ruleClaim, variant: latchDeleteNoTombstone, deletes: true, staleCounts: noStale, noRestart: true, long: true},
		{name: "only a countDown that counted a node down claims (no repair by a later one)", nodes: 3, rule: ruleClaim, variant: latchClaimCountedOnly, healed: true, noRestart: true},
		{name: "a denied set's undo takes its claim too, a claim creates the slot again (U1)", nodes: 3, rule: ruleClaim, variant: latchUndoBare, undos: true, staleCounts: noStale, noRestart: true, long: true},
		{name: "a denied set's undo leaves its claim where the set found no slot (L6)", nodes: 3, rule: ruleClaim, variant: latchUndoLeavesClaim, noFaults: true, inFlight: 3, undos: true, undosFirst: true, staleCounts: noStale},
		{name: "the reset keeps an older latch's claim (L5)", nodes: 3, rule: ruleClaim, variant: latchResetKeepsClaim, noFaults: true, inFlight: 3, staleClaims: true, oldLeast: true},
		{name: "a claim counts in the slot it read, whatever its ballot (review28 F0)", nodes: 3, rule: ruleClaim, variant: latchClaimInSlotRead, newer: true, staleCounts: noStale, noRestart: true, long: true},
		{name: "a denied set's undo leaves its claim where the set found an older latch's free slot (L6')", nodes: 3, rule: ruleClaim, variant: latchUndoLeavesClaim, noFaults: true, inFlight: 3, undos: true, undosFirst: true, undosOld: true, staleCounts: noStale},
		{name: "a seed's carried tag counts in a ballot (one latch with two ballots: a second vote)", nodes: 3, rule: ruleClaim, variant: latchBallotCarried, restartOnly: true, inFlight: 2, staleCounts: stale13, oldClaims: true},
		{name: "a vote of another ballot answers every claim (L3)", nodes: 3, rule: ruleClaim, variant: latchClaimOneBallot, noFaults: true, inFlight: 3, oldClaims: true, oldLeast: true, staleCounts: noStale},
		{name: "a tombstone forgets its node's votes: a claim of any ballot votes there (L4's fix without its memory)", nodes: 3, rule: ruleClaim, variant: latchTombForgets, noFaults: true, inFlight: 2, maxMade: 2, deletes: true, staleCounts: noStale},
		{name: "a node keeping a vote of another ballot answers its slot's vote to a third (the rest of L3)", nodes: 3, rule: ruleClaim, variant: latchClaimTwoBallots, noFaults: true, inFlight: 3, kept: true, oldLeast: true, staleCounts: noStale},
		{name: "the rest of L3's rule reads a seed's memory of any: a reseeded node answers claims nobody's (l4fix-l3)", nodes: 3, rule: ruleClaim, variant: latchForgotAnyMemory, restartOnly: true, inFlight: 2, staleCounts: noStale},
		{name: "the seed copies a leftover of a set counted to 0 (S1), 5 nodes", nodes: 5, rule: ruleClaim, variant: latchSeedNoDrop, allSet: true, staleCounts: noStale, maxMade: 2},
	} {
		if (testing.Short() || modelUnderRace) && cfg.long {
			continue
		}
		c := cfg.run()
		switch {
		case c.violation != "":
			t.Logf("%s: caught after %d states: %s", cfg.name, c.states, c.violation)
		case c.closed > 0:
			t.Logf("%s: caught after %d states, never opens: %s", cfg.name, c.states, c.closedTrace)
		case c.stuck+c.stuckSlotless > 0 && cfg.noFaults, c.unrepaired > 0:
			t.Logf("%s: caught after %d states, left a waiter: %s", cfg.name, c.states, c.stuckTrace)
		case c.stuckSeeded > 0:
			t.Logf("%s: caught after %d states, left a waiter after a seed: %s", cfg.name, c.states, c.stuckSeededTrace)
		default:
			t.Errorf("%s: not caught in %d states", cfg.name, c.states)
		}
	}
}

// sameCount is how many of claims are c.
func sameCount(claims []uint8, c uint8) int {
	n := 0
	for _, x := range claims {
		if x == c {
			n++
		}
	}
	return n
}

// TestLatchTwoVotesOnMissedMasterLeaveNoWaiter: a master the set missed
// that holds an older opening's vote beside one it keeps by its ballot
// (p:) forgets the kept one, its ballot remembered apart (x:), and votes
// for the new latch's, so two or three last countDowns at once whose
// claims split the other masters, the older vote the least, send the
// zero message (the rest of L3; before, it answered its slot's vote and
// the latch read open with no zero message, as the negative control
// latchClaimTwoBallots still does). The same on real masters:
// TestLatchTwoOlderVotesOnMissedMasterSplitClaimsSendOneZeroMessage.
func TestLatchTwoVotesOnMissedMasterLeaveNoWaiter(t *testing.T) {
	cfg := latchConfig{name: "the rest of L3", nodes: 3, rule: ruleClaim, noFaults: true, inFlight: 3, kept: true, oldLeast: true, staleCounts: noStale}
	c := cfg.run()
	if c.violation != "" {
		t.Fatalf("%s: %s", cfg.name, c.violation)
	}
	if c.stuck+c.stuckSlotless > 0 {
		t.Fatalf("%s: %d of %d states open without a zero message: %s", cfg.name, c.stuck+c.stuckSlotless, c.states, c.stuckTrace)
	}
	t.Logf("%s: %d states, none open without a zero message", cfg.name, c.states)
}
