package quorum

import (
	"cmp"
	"slices"
)

// Redisson's RCountDownLatch over independent nodes: the pure decisions
// (latchcheck_test.go explores them).
//
// Each node keeps the latch's count, or none (0: the latch is open there,
// or was never set). A trySetCount(n) is granted when a quorum of counted
// nodes set it, so at most N-Q counted nodes missed it; a countDown sends
// one decrement to each node, at most once, of the count that set made
// there (by its nonce), and a node's count only goes down by decrements
// really sent. So every counted node that got the set
// reads at least n minus the countDowns made, and any quorum of counted
// nodes includes one of them. A node restarted empty does not count until
// it is seeded again, with the highest count that the counted nodes
// answering have (a quorum at least), once every operation older than its
// mark has ended.

// latchCount is a latch read's decision over the counts of the counted
// nodes that answered (0 for none): 0 when a quorum of them read 0 (one of
// them got the set and counted down to 0: the latch opened); else, when a
// quorum read above 0, the quorum-th largest count; else no decision (ok
// false): the answers missing could go either way.
//
// The quorum-th largest alone is not enough: of exactly a quorum of
// answers it is the smallest, and one node that missed the set would
// read the latch open (the explorer's negative control).
func latchCount(counts []int64, quorum int) (count int64, ok bool) {
	zeros, above := 0, 0
	for _, c := range counts {
		if c <= 0 {
			zeros++
		} else {
			above++
		}
	}
	switch {
	case zeros >= quorum:
		return 0, true
	case above >= quorum:
		return kthLargest(counts, quorum), true
	}
	return 0, false
}

// kthLargest is the k-th largest of counts (k from 1, k <= len(counts)).
func kthLargest(counts []int64, k int) int64 {
	c := make([]int64, len(counts))
	copy(c, counts)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] > c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return c[k-1]
}

// latchClaimWon is whether a countDown sends the zero message. A
// countDown whose answers read the latch open (latchCount) claims the
// message on every node; a node keeps the first claim it gets, so each
// answer (claims: the counted nodes' answers) is final. The claimer sends
// it when a quorum of nodes hold its claim; or, when every node answered
// and no claim holds a quorum, when its claim holds the most nodes (the
// lowest id of those that tie): every claimer that sees every node sees
// the same claims. So the message is sent at most once, and, without
// faults, exactly once however the claims of countDowns at once land.
// With faults (a claim's reply lost, a node down) it can be sent by no
// one: latchcheck_test.go counts those states.
func latchClaimWon[T cmp.Ordered](claims []T, id T, nodes, quorum int) bool {
	by := map[T]int{}
	for _, c := range claims {
		by[c]++
	}
	if by[id] >= quorum {
		return true
	}
	if len(claims) < nodes {
		return false
	}
	var best T
	most := 0
	for c, k := range by {
		if k >= quorum {
			return false
		}
		if k > most || k == most && c < best {
			best, most = c, k
		}
	}
	return best == id
}

// latchSeedCount is the count of one latch a node restarted empty is
// seeded with, from each dump's count (0: none), that count's nonce
// ("n:") and the dump's claim slot tag ("o:", 0: none). A dump with a
// slot tag and no count counted that set (or seed) down to 0: n
// countDowns of it were made, so the latch opened, and a count of the
// same nonce elsewhere is a leftover of a master that missed some of
// them; it counts as none (attack12 S1: copied, it closed the opened
// latch again). Then latchSeed. zeros are the tags counted down to 0,
// dropped those of the leftovers.
func latchSeedCount(counts, nonces, slots []int64, quorum int) (count int64, zeros, dropped []int64) {
	for i, c := range counts {
		if c <= 0 && slots[i] != 0 && !slices.Contains(zeros, slots[i]) {
			zeros = append(zeros, slots[i])
		}
	}
	kept := make([]int64, len(counts))
	for i, c := range counts {
		kept[i] = c
		if c > 0 && slices.Contains(zeros, nonces[i]) {
			kept[i] = 0
			if !slices.Contains(dropped, nonces[i]) {
				dropped = append(dropped, nonces[i])
			}
		}
	}
	return latchSeed(kept, quorum), zeros, dropped
}

// latchSeed is the count a node restarted empty is seeded with, from the
// counts of the counted nodes that answered (at least a quorum): none (0)
// when a quorum of them have none, as a read finds the latch open then
// (attack12 S1: the highest, a node's that missed the opening countDown,
// closed an open latch again); else the highest. At most N-Q counted
// nodes missed the latch's set, so the highest is at least what a node
// that got it reads.
func latchSeed(counts []int64, quorum int) int64 {
	var m int64
	zeros := 0
	for _, c := range counts {
		m = max(m, c)
		if c <= 0 {
			zeros++
		}
	}
	if zeros >= quorum {
		return 0
	}
	return m
}
