package pubsub

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// A lock script that publishes runs on every node, so one release reaches
// a subscriber up to N times, once from each node. collapser turns those
// copies back into one delivery per publish, while distinct publishes of
// the same payload (two releases in a row) still each count: it counts,
// per message, how many copies each node sent, and the k-th message is
// due once need nodes sent their k-th copy. The caller sets need to a
// quorum (or to every node up, if fewer are), so that a waiter woken by a
// release finds it done on a quorum of nodes, as one Redis publishes only
// once it deleted; a message that fewer nodes sent is delivered by flush
// when the caller stops waiting for more copies.
//
// A message is its topic, channel and payload, and its tag (internal/
// pubid) when a proxy tagged it: each publish a proxy causes has a tag of
// its own, so a tagged message is one publish, whichever nodes sent it,
// and a node's second copy of it (a publish sent again) is dropped.
// An untagged message (a keyspace notification, another publisher's) is
// counted by its order per node alone: a node that missed a publish
// (down, not yet subscribed, its publisher's link cut) lags behind the
// others, and a later publish that only lagging nodes send reads as late
// copies of one already delivered, and is lost.
//
// Counts are forgotten after between window/2 and window without a copy.
// A copy that arrives later than that is delivered again: a duplicate
// wake-up, which lock clients tolerate (they try the lock and wait
// again), never a lost one.
type collapser struct {
	nodes     int
	window    time.Duration
	max       int // entries in cur before it is rotated early
	cur, prev map[digest]*copies
	rotated   time.Time
}

// digest identifies one message: topic, channel, payload and tag, hashed
// so that an entry's size does not depend on the payload's.
type digest [sha256.Size]byte

type copies struct {
	seen      []uint32 // copies per node
	delivered uint32
}

func newCollapser(nodes int, window time.Duration, max int) *collapser {
	return &collapser{nodes: nodes, window: window, max: max,
		cur: make(map[digest]*copies), prev: make(map[digest]*copies)}
}

// note records one copy of m, tagged tag ("" for none), from node i at
// now. due is how many publishes of m this copy made due (need nodes
// sent them); wait is k when this is the first copy of a k-th publish
// not yet due, for the caller to flush later, and 0 otherwise.
func (c *collapser) note(now time.Time, i int, m Message, tag string, need int) (due int, wait uint32) {
	switch age := now.Sub(c.rotated); {
	case age >= c.window:
		c.prev, c.cur, c.rotated = make(map[digest]*copies), make(map[digest]*copies), now
	case age >= c.window/2 || len(c.cur) >= c.max:
		c.prev, c.cur, c.rotated = c.cur, make(map[digest]*copies), now
	}
	d := digestOf(m, tag)
	e := c.cur[d]
	if e == nil {
		if e = c.prev[d]; e != nil {
			delete(c.prev, d)
		} else {
			e = &copies{seen: make([]uint32, c.nodes)}
		}
		c.cur[d] = e
	}
	if tag != "" && e.seen[i] > 0 {
		return 0, 0 // a node sends one copy of a tagged publish: a resend
	}
	e.seen[i]++
	k := e.seen[i]
	if k <= e.delivered {
		return 0, 0 // another node's copy of a publish already delivered
	}
	for e.sentBy(e.delivered+1) >= need {
		e.delivered++
		due++
	}
	if k > e.delivered && e.sentBy(k) == 1 {
		wait = k
	}
	return due, wait
}

// flush makes every publish of m, tagged tag, up to the k-th due that is
// not yet, and returns how many.
func (c *collapser) flush(m Message, tag string, k uint32) int {
	d := digestOf(m, tag)
	e := c.cur[d]
	if e == nil {
		e = c.prev[d]
	}
	switch {
	case e == nil:
		return 1 // forgotten meanwhile: once, a duplicate at worst
	case e.delivered >= k:
		return 0
	}
	n := int(k - e.delivered)
	e.delivered = k
	return n
}

// sentBy is how many nodes sent at least k copies.
func (e *copies) sentBy(k uint32) int {
	n := 0
	for _, s := range e.seen {
		if s >= k {
			n++
		}
	}
	return n
}

func digestOf(m Message, tag string) digest {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{m.Topic.Name, m.Channel, m.Payload, tag} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	h.Write([]byte{byte(m.Topic.Kind)})
	var d digest
	h.Sum(d[:0])
	return d
}
