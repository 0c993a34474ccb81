package pubsub

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
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
// its own, so a tagged message is one publish per topic, whichever nodes
// sent it, and is counted by its tag and topic alone; a node's second
// copy of it (a publish sent again) is dropped, as is one with the same
// tag and another payload (only a publisher that copies a tag sends one).
// An untagged message (a keyspace notification, another publisher's) is
// counted by its order per node alone: a node that missed a publish
// (down, not yet subscribed, its publisher's link cut) lags behind the
// others, and a later publish that only lagging nodes send reads as late
// copies of one already delivered, and is lost.
//
// Counts are forgotten after between window/2 and window without a copy.
// A copy that arrives later than that is delivered again: a duplicate
// wake-up, which lock clients tolerate (they try the lock and wait
// again), never a lost one. Untagged counts are also forgotten once max
// other untagged messages came; tagged ones, smaller, once maxTagged
// other tagged publishes came, a bound that only a flood reaches.
type collapser struct {
	nodes   int
	window  time.Duration
	counts  generations[digest, *copies]
	tagged  generations[tagKey, tagCopies]
	topicID maphash.Seed
}

// digest identifies one message: topic, channel, payload and tag, hashed
// so that an entry's size does not depend on the payload's.
type digest [sha256.Size]byte

type copies struct {
	seen      []uint32 // copies per node
	delivered uint32
}

// tagKey identifies one tagged publish to one topic: its tag's 16 bytes
// after pubid.Prefix and a hash of the topic (a channel and a pattern
// that matches it each deliver the publish).
type tagKey struct {
	id    [16]byte
	topic uint64
}

// tagCopies records a tagged publish's copies: bit i is set once node i
// sent its copy, and the top bit once the publish was delivered.
type tagCopies uint64

const delivered tagCopies = 1 << 63

// maxBitNodes is the most nodes tagCopies' bits can tell apart; a hub
// over more counts tagged messages as untagged ones with their tag.
const maxBitNodes = 63

// generations holds counts in two maps: cur takes new entries and prev
// the ones before, which cur takes back when they are seen again.
type generations[K comparable, V any] struct {
	max       int // entries in cur before it is rotated early
	cur, prev map[K]V
	rotated   time.Time
}

func newGenerations[K comparable, V any](max int) generations[K, V] {
	return generations[K, V]{max: max, cur: make(map[K]V), prev: make(map[K]V)}
}

// age forgets prev every window/2 (every entry after window), or once
// cur holds max entries.
func (g *generations[K, V]) age(now time.Time, window time.Duration) {
	switch age := now.Sub(g.rotated); {
	case age >= window:
		g.prev, g.cur, g.rotated = make(map[K]V), make(map[K]V), now
	case age >= window/2 || len(g.cur) >= g.max:
		g.prev, g.cur, g.rotated = g.cur, make(map[K]V), now
	}
}

func newCollapser(nodes int, window time.Duration, max, maxTagged int) *collapser {
	return &collapser{nodes: nodes, window: window,
		counts:  newGenerations[digest, *copies](max),
		tagged:  newGenerations[tagKey, tagCopies](maxTagged),
		topicID: maphash.MakeSeed()}
}

// note records one copy of m, tagged tag ("" for none), from node i at
// now. due is how many publishes of m this copy made due (need nodes
// sent them); wait is k when this is the first copy of a k-th publish
// not yet due, for the caller to flush later, and 0 otherwise.
func (c *collapser) note(now time.Time, i int, m Message, tag string, need int) (due int, wait uint32) {
	if tag != "" && c.nodes <= maxBitNodes {
		return c.noteTagged(now, i, c.tagKey(m, tag), need)
	}
	c.counts.age(now, c.window)
	d := digestOf(m, tag)
	e := c.counts.cur[d]
	if e == nil {
		if e = c.counts.prev[d]; e != nil {
			delete(c.counts.prev, d)
		} else {
			e = &copies{seen: make([]uint32, c.nodes)}
		}
		c.counts.cur[d] = e
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
	if tag != "" && c.nodes <= maxBitNodes {
		return c.flushTagged(c.tagKey(m, tag))
	}
	d := digestOf(m, tag)
	e := c.counts.cur[d]
	if e == nil {
		e = c.counts.prev[d]
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

// noteTagged is note for a tagged publish, keyed k: it is due once need
// nodes sent it, and a node's second copy is dropped.
func (c *collapser) noteTagged(now time.Time, i int, k tagKey, need int) (due int, wait uint32) {
	c.tagged.age(now, c.window)
	e, ok := c.tagged.cur[k]
	if !ok {
		if e, ok = c.tagged.prev[k]; ok {
			delete(c.tagged.prev, k)
		}
	}
	bit := tagCopies(1) << i
	if e&bit != 0 {
		return 0, 0 // a resend
	}
	e |= bit
	switch {
	case e&delivered != 0:
	case bits.OnesCount64(uint64(e)) >= need:
		e, due = e|delivered, 1
	case e == bit:
		wait = 1
	}
	c.tagged.cur[k] = e
	return due, wait
}

// flushTagged is flush for a tagged publish, keyed k.
func (c *collapser) flushTagged(k tagKey) int {
	g := c.tagged.cur
	e, ok := g[k]
	if !ok {
		g = c.tagged.prev
		e, ok = g[k]
	}
	switch {
	case !ok:
		return 1 // forgotten meanwhile: once, a duplicate at worst
	case e&delivered != 0:
		return 0
	}
	g[k] = e | delivered
	return 1
}

// tagKey keys m, tagged tag (as pubid.Split returns it).
func (c *collapser) tagKey(m Message, tag string) tagKey {
	k := tagKey{topic: maphash.Comparable(c.topicID, m.Topic)}
	copy(k.id[:], tag[len(pubid.Prefix):])
	return k
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
