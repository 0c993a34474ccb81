package quorum

import (
	"slices"
	"strings"
	"sync/atomic"
)

// FENCE's round asks a quorum of the nodes first, and the others only
// when those do not agree (fence.go): while they agree, the others do no
// work for a FENCE, and on shared cores what every node does for a call
// is what the call waits for. Which nodes are asked is a hint, never a
// rule of safety: the decision counts answers only, and a node not asked
// is, to the design's argument, one whose message was lost; one asked
// after, one whose message came late (the model explores every choice,
// fencemodel_test.go). A quorum asked that does not agree, or does not
// all answer, is followed by the others and the write-back, which raises
// every seeded node's counter to the token, so that the next quorum
// asked agrees.
//
// The quorum asked is a window of the nodes in address order (every
// proxy over the same nodes orders them alike, so their windows agree),
// moving by one node every fenceRotate tokens, so that no node is left
// out for good; it passes over nodes known down or not counted, and
// those whose last counter answer failed or was not seeded. Those are
// asked as well, beside the quorum (down ones aside), as a round of every
// node asked them: one restarted empty is marked, and seeded after its
// wait, by the round (a failed answer is how a restart shows first). The
// monitor's counter round (tendCounters) reads every node, so a node
// left out is seen, marked and seeded all the same, and its hint kept.
type fenceHint struct {
	order  []int         // the nodes' indexes, by address
	behind []atomic.Bool // the node's last counter answer failed or was not seeded
	last   atomic.Int64  // the highest counter of the last round: the window's place
}

// fenceRotate is how many tokens apart the window moves by one node; the
// FENCE after a move may ask the others and write back, once.
const fenceRotate = 256

func newFenceHint(nodes []Node) fenceHint {
	order := make([]int, len(nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(nodes[a].Addr(), nodes[b].Addr()) })
	return fenceHint{order: order, behind: make([]atomic.Bool, len(nodes))}
}

// fenceAsk returns the nodes FENCE's round asks first, in buf: a quorum
// of the window's, and every node behind that is not down; nil, to ask
// every node, when fewer than a quorum are known seeded and up, or a
// quorum is every node.
func (e *Engine) fenceAsk(buf []bool) []bool {
	n := len(e.nodes)
	if e.quorum >= n {
		return nil
	}
	ask := buf[:0]
	monitored, k := e.monitored.Load(), 0
	for i := range n {
		ask = append(ask, e.hint.behind[i].Load() && !(monitored && e.health[i].down.Load()))
	}
	from := int(uint64(e.hint.last.Load()) / fenceRotate % uint64(n))
	for j := range n {
		i := e.hint.order[(from+j)%n]
		if !e.counts(i) || e.hint.behind[i].Load() || monitored && e.health[i].down.Load() {
			continue
		}
		ask[i] = true
		if k++; k == e.quorum {
			return ask
		}
	}
	return nil
}

// noteCounters keeps the hint from a counter round's answers: which
// nodes answered seeded, and the highest counter of the round. A node
// not asked is left as it was. The place follows the round, down too: a
// new deployment's counters start again from zero.
func (e *Engine) noteCounters(reads []result[CounterEntry]) {
	top := int64(-1)
	for i, r := range reads {
		if r.err == errNotAsked {
			continue
		}
		seeded := r.err == nil && r.v.State == CounterSeeded
		e.hint.behind[i].Store(!seeded)
		if seeded {
			top = max(top, r.v.Value)
		}
	}
	if top >= 0 {
		e.hint.last.Store(top)
	}
}
