package quorum

import (
	"fmt"
	"testing"
)

// Issue 20's semaphore math. A semaphore of n permits over N independent
// nodes, each of which grants a permit only while it has fewer than n
// holders, grants a holder that q nodes granted. Nodes decide alone, and
// a take may reach any subset of them (the others cut off), so any
// assignment of holders to q nodes each, with at most n holders per
// node, can happen. n+1 holders take (n+1)q grants where the nodes have
// room for N·n: none can happen when (n+1)q > N·n, so the smallest safe
// q is ⌊N·n/(n+1)⌋ + 1. For n = 1 that is a quorum; for n ≥ N-1 it is
// every node (docs/compatibility.md, Redisson).
func semaphoreQuorum(nodes, permits int) int { return nodes*permits/(permits+1) + 1 }

// overfilled reports whether permits+1 holders can each be granted by q
// of nodes nodes, with at most permits holders on any node: every
// choice of q nodes per holder, tried in turn.
func overfilled(nodes, permits, q int) bool {
	var subsets [][]int
	for m := range 1 << nodes {
		var s []int
		for i := range nodes {
			if m&(1<<i) != 0 {
				s = append(s, i)
			}
		}
		if len(s) == q {
			subsets = append(subsets, s)
		}
	}
	load := make([]int, nodes)
	var place func(holder, from int) bool
	place = func(holder, from int) bool {
		if holder == permits+1 {
			return true
		}
		for k := from; k < len(subsets); k++ { // holders are alike: subsets in order
			s, fits := subsets[k], true
			for _, i := range s {
				fits = fits && load[i] < permits
			}
			if !fits {
				continue
			}
			for _, i := range s {
				load[i]++
			}
			ok := place(holder+1, k)
			for _, i := range s {
				load[i]--
			}
			if ok {
				return true
			}
		}
		return false
	}
	return place(0, 0)
}

// TestSemaphoreQuorum checks the formula by search over 3 and 5 nodes
// and 1 to 3 permits: with q it never grants n+1 holders, with q-1 it can.
func TestSemaphoreQuorum(t *testing.T) {
	want := map[[2]int]int{{3, 1}: 2, {3, 2}: 3, {3, 3}: 3, {5, 1}: 3, {5, 2}: 4, {5, 3}: 4}
	for _, nodes := range []int{3, 5} {
		for permits := 1; permits <= 3; permits++ {
			t.Run(fmt.Sprintf("%d nodes, %d permits", nodes, permits), func(t *testing.T) {
				q := semaphoreQuorum(nodes, permits)
				if q != want[[2]int{nodes, permits}] {
					t.Fatalf("q = %d; want %d", q, want[[2]int{nodes, permits}])
				}
				if overfilled(nodes, permits, q) {
					t.Errorf("%d holders each granted by %d of %d nodes; want at most %d", permits+1, q, nodes, permits)
				}
				if !overfilled(nodes, permits, q-1) {
					t.Errorf("q-1 = %d never overfills; want q the smallest", q-1)
				}
			})
		}
	}
}
