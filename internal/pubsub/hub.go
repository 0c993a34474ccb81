package pubsub

import (
	"context"
	"crypto/tls"
	"log/slog"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
)

// Kind says whether a Topic names a channel or a pattern.
type Kind uint8

const (
	Channel Kind = iota // SUBSCRIBE channel
	Pattern             // PSUBSCRIBE pattern
	Shard               // SSUBSCRIBE shard channel (Redis 7's sharded pub/sub)
)

// Topic is what a client subscribes to.
type Topic struct {
	Kind Kind
	Name string
}

// Message is one publish, delivered once however many nodes sent a copy.
// For a pattern topic, Channel is the channel it was published to.
type Message struct {
	Topic            Topic
	Channel, Payload string
}

// Sink receives the messages of the topics it subscribed to. Deliver is
// called from a node's reader and must not block.
type Sink interface {
	Deliver(m Message)
}

// Config holds the hub's settings. The zero value of a field means its
// default, as each comment says.
type Config struct {
	// Nodes are the masters' addresses, host:port, in the engine's order.
	Nodes []string
	// Username and Password are sent with AUTH; empty means no AUTH.
	Username, Password string
	// TLS, if set, wraps every node connection.
	TLS *tls.Config
	// timeout bounds a dial with its AUTH, and each write. If zero, 1s is
	// used.
	timeout time.Duration
	// RetryInterval is the wait before a down node is dialed again. If
	// zero, 500ms is used.
	RetryInterval time.Duration
	// pingInterval is how often an idle subscriber connection is pinged;
	// one silent for three intervals is dropped and dialed again. If zero,
	// 1s is used.
	pingInterval time.Duration
	// grace is how long Subscribe waits, once a quorum of nodes confirmed,
	// for the other nodes that are up. If zero, 50ms is used.
	grace time.Duration
	// window is how long the copies of one publish are counted. If zero,
	// 20s is used: the engine's copies run within 5s of their send
	// (quorum's publishWithin), and a count lasts at least half of it.
	window time.Duration
	// settle is how long a publish that fewer than a quorum of the nodes
	// up sent waits for more copies before it is delivered anyway. If
	// zero, 50ms is used.
	settle time.Duration
	// Log receives the hub's logs. If nil, logs are discarded.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.timeout == 0 {
		c.timeout = time.Second
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = 500 * time.Millisecond
	}
	if c.pingInterval == 0 {
		c.pingInterval = time.Second
	}
	if c.grace == 0 {
		c.grace = 50 * time.Millisecond
	}
	if c.window == 0 {
		c.window = 20 * time.Second
	}
	if c.settle == 0 {
		c.settle = 50 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// maxCounted bounds the untagged messages whose copies are counted at
// once (about 140 bytes each), and maxTagged the tagged publishes (about
// 80 bytes each, 90MB at most): past maxTagged/(window/2) tagged
// publishes a second (52,000 at the 20s window), a flood, a count lasts
// less than window/2.
const (
	maxCounted = 1 << 16
	maxTagged  = 1 << 19
)

// Hub keeps one subscriber connection per node, shared by every client of
// the proxy: a topic is subscribed on the nodes while at least one sink
// holds it, and each message is handed to its sinks once per publish. It
// is safe for concurrent use.
type Hub struct {
	cfg    Config
	quorum int
	nodes  []*node
	cancel context.CancelFunc
	wg     sync.WaitGroup // each node's reader and pinger

	mu      sync.Mutex
	topics  map[Topic]map[Sink]struct{}
	counted *collapser
	changed chan struct{} // closed and replaced when a node confirms or comes up
	closed  bool          // set by Close: a settle timer that fires later delivers nothing
}

// New starts a hub over cfg.Nodes: one goroutine per node dials it and
// reads its messages until Close.
func New(cfg Config) *Hub {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		cfg:     cfg,
		quorum:  len(cfg.Nodes)/2 + 1,
		cancel:  cancel,
		topics:  make(map[Topic]map[Sink]struct{}),
		counted: newCollapser(len(cfg.Nodes), cfg.window, maxCounted, maxTagged),
		changed: make(chan struct{}),
	}
	for i, addr := range cfg.Nodes {
		n := &node{h: h, i: i, addr: addr}
		h.nodes = append(h.nodes, n)
		h.wg.Go(func() { n.run(ctx) })
	}
	return h
}

// Close drops every node connection and waits for the hub's goroutines.
func (h *Hub) Close() error {
	h.cancel()
	h.mu.Lock()
	h.closed = true
	for _, n := range h.nodes {
		n.dropLocked()
	}
	h.mu.Unlock()
	h.wg.Wait()
	return nil
}

// Subscribe adds s to topics, subscribing on the nodes those no sink held
// yet. It returns once every node that is up confirmed every topic, or a
// quorum did and grace passed, or ctx is done: from then on a publish on
// any of those nodes reaches s. A node still on its first dial counts as
// up.
func (h *Hub) Subscribe(ctx context.Context, s Sink, topics ...Topic) {
	h.mu.Lock()
	var fresh []Topic
	for _, t := range topics {
		sinks := h.topics[t]
		if sinks == nil {
			sinks = make(map[Sink]struct{})
			h.topics[t] = sinks
			fresh = append(fresh, t)
		}
		sinks[s] = struct{}{}
	}
	for _, n := range h.nodes {
		n.sendLocked(true, fresh)
	}
	h.mu.Unlock()
	h.wait(ctx, topics)
}

// Unsubscribe removes s from topics, and unsubscribes on the nodes the
// topics no sink holds any more. It does not wait for the nodes.
func (h *Hub) Unsubscribe(s Sink, topics ...Topic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []Topic
	for _, t := range topics {
		sinks := h.topics[t]
		if sinks == nil {
			continue
		}
		delete(sinks, s)
		if len(sinks) == 0 {
			delete(h.topics, t)
			gone = append(gone, t)
		}
	}
	for _, n := range h.nodes {
		n.sendLocked(false, gone)
	}
}

// Stats is what INFO reports of the hub.
type Stats struct {
	Channels, Patterns, Shards int // topics subscribed on the nodes, by kind
	NodesUp                    int // nodes whose subscriber connection is up
}

// Stats returns the hub's topics and how many node connections are up.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	var st Stats
	for t := range h.topics {
		switch t.Kind {
		case Pattern:
			st.Patterns++
		case Shard:
			st.Shards++
		default:
			st.Channels++
		}
	}
	for _, n := range h.nodes {
		if n.up {
			st.NodesUp++
		}
	}
	return st
}

// wait blocks until topics are confirmed as Subscribe says.
func (h *Hub) wait(ctx context.Context, topics []Topic) {
	var grace <-chan time.Time
	for {
		h.mu.Lock()
		confirmed, all := h.confirmedLocked(topics)
		changed := h.changed
		h.mu.Unlock()
		if all {
			return
		}
		if confirmed >= h.quorum && grace == nil {
			t := time.NewTimer(h.cfg.grace)
			defer t.Stop()
			grace = t.C
		}
		select {
		case <-changed:
		case <-grace:
			return
		case <-ctx.Done():
			return
		}
	}
}

// confirmedLocked returns on how many nodes every topic is confirmed, and
// whether every node that is up, or not yet dialed once, confirmed them
// all.
func (h *Hub) confirmedLocked(topics []Topic) (confirmed int, all bool) {
	all = true
	for _, n := range h.nodes {
		ok := n.up
		for _, t := range topics {
			ok = ok && n.confirmed[t] && n.pending[t] == 0
		}
		if ok {
			confirmed++
		} else if n.up || !n.settled {
			all = false // up, or still on its first dial
		}
	}
	return confirmed, all
}

// broadcastLocked wakes every waiting Subscribe.
func (h *Hub) broadcastLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// deliver counts node i's copy of m, and hands m to its sinks once per
// publish that a quorum of the nodes up has now sent. The first copy of a
// publish fewer nodes sent starts a settle timer that delivers it anyway.
// A tagged payload (internal/pubid) is counted by its tag and delivered
// without it.
func (h *Hub) deliver(i int, m Message) {
	h.mu.Lock()
	sinks := h.topics[m.Topic]
	if len(sinks) == 0 {
		h.mu.Unlock()
		return
	}
	tag, payload, _ := pubid.Split(m.Payload)
	m.Payload = payload
	due, wait := h.counted.note(time.Now(), i, m, tag, h.needLocked())
	if wait > 0 {
		// The timer's goroutine ends with settle, which returns at once
		// after Close; nothing waits for it.
		time.AfterFunc(h.cfg.settle, func() { h.settle(m, tag, wait) })
	}
	to := h.sinksLocked(m.Topic, due)
	h.mu.Unlock()
	hand(to, m, due)
}

// settle delivers the publishes of m, tagged tag, up to the k-th that
// are not yet.
func (h *Hub) settle(m Message, tag string, k uint32) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	due := h.counted.flush(m, tag, k)
	to := h.sinksLocked(m.Topic, due)
	h.mu.Unlock()
	hand(to, m, due)
}

// needLocked is how many nodes must send a publish before it is due: a
// quorum, or every node up when fewer are up.
func (h *Hub) needLocked() int {
	up := 0
	for _, n := range h.nodes {
		if n.up {
			up++
		}
	}
	return max(1, min(h.quorum, up))
}

// sinksLocked returns topic's sinks, or none when nothing is due.
func (h *Hub) sinksLocked(topic Topic, due int) []Sink {
	if due == 0 {
		return nil
	}
	to := make([]Sink, 0, len(h.topics[topic]))
	for s := range h.topics[topic] {
		to = append(to, s)
	}
	return to
}

// hand gives m to every sink in to, n times.
func hand(to []Sink, m Message, n int) {
	for range n {
		for _, s := range to {
			s.Deliver(m)
		}
	}
}
