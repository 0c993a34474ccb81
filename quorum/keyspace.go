package quorum

import (
	"context"
	"slices"
)

// KeyCount is what one node holds in database 0, the proxies' membership
// record and counters left out (the fencing hold records, which expire
// with their locks, are counted): keys, and how many of them have a TTL.
type KeyCount struct {
	Keys, Expires int64
}

// KeyView is the nodes' key counts, and the lock view of them.
type KeyView struct {
	// Keys and Expires are the largest counts that a quorum of nodes each
	// reach: when the nodes agree, how many keys the locks hold.
	Keys, Expires int64
	// Nodes is each node's count, in node order; nil for a node that did
	// not answer.
	Nodes []*KeyCount
}

// keyCounter is the part of Node that counts its keys.
type keyCounter interface {
	KeyCount(ctx context.Context) (KeyCount, error)
}

// Keyspace counts the keys on every node and returns the lock view: the
// counts a quorum of the counting nodes each reach. The error matches
// ErrUnavailable when fewer than a quorum answered.
func (e *Engine) Keyspace(ctx context.Context) (KeyView, error) {
	results := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (KeyCount, error) {
		return n.KeyCount(ctx)
	})
	v := KeyView{Nodes: make([]*KeyCount, len(results))}
	var keys, expires []int64
	o := Outcome{Total: len(e.nodes)}
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
			continue
		case e.counts(i):
			o.Granted++
			keys = append(keys, r.v.Keys)
			expires = append(expires, r.v.Expires)
		default:
			o.Quarantined++
		}
		v.Nodes[i] = &r.v
	}
	if err := verdict(o, e.quorum, failures(results)); err != nil {
		return v, err
	}
	v.Keys, v.Expires = quorumCount(keys, e.quorum), quorumCount(expires, e.quorum)
	return v, nil
}

// quorumCount is the largest count that q of counts reach.
func quorumCount(counts []int64, q int) int64 {
	slices.Sort(counts)
	slices.Reverse(counts)
	return counts[q-1]
}
