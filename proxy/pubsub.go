package proxy

import (
	"sync"

	"github.com/tidwall/redcon"

	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// maxEarly bounds the messages held for topics whose subscription is not
// yet confirmed to the client.
const maxEarly = 1024

// subscriber is a connection's pub/sub state. It is the hub's sink for
// the connection's topics; Deliver runs on the hub's node readers, so
// the topics are guarded by mu.
type subscriber struct {
	out *outbox

	mu    sync.Mutex
	proto resp.Proto // the connection's, as of its last (un)subscribe
	// active holds the connection's topics: true once the client was told
	// it subscribed, false while the nodes are still confirming.
	active map[pubsub.Topic]bool
	order  []pubsub.Topic   // in the order subscribed, for UNSUBSCRIBE
	early  []pubsub.Message // messages for topics not yet confirmed
	kinds  [3]int           // topics per kind, confirmed or not
}

// Deliver queues m for the client, unless it unsubscribed meanwhile.
func (sb *subscriber) Deliver(m pubsub.Message) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	switch active, ok := sb.active[m.Topic]; {
	case !ok:
	case !active:
		if len(sb.early) < maxEarly {
			sb.early = append(sb.early, m)
		}
	default:
		sb.out.push(messageReply(m), sb.proto, len(m.Topic.Name)+len(m.Channel)+len(m.Payload)+64)
	}
}

// pushReply queues a command's reply in p, the connection's protocol
// once the command ran, and makes the messages queued after it follow p.
// It returns what to wait for.
func (sb *subscriber) pushReply(rep resp.Reply, p resp.Proto) uint64 {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	sb.proto = p
	return sb.out.push(rep, p, 64)
}

// messageReply is how Redis pushes a message to a subscriber.
func messageReply(m pubsub.Message) resp.Reply {
	switch m.Topic.Kind {
	case pubsub.Pattern:
		return resp.Push(resp.Bulk("pmessage"), resp.Bulk(m.Topic.Name), resp.Bulk(m.Channel), resp.Bulk(m.Payload))
	case pubsub.Shard:
		return resp.Push(resp.Bulk("smessage"), resp.Bulk(m.Channel), resp.Bulk(m.Payload))
	}
	return resp.Push(resp.Bulk("message"), resp.Bulk(m.Channel), resp.Bulk(m.Payload))
}

// count is the number of topics, as Redis's confirmations count them.
func (sb *subscriber) countLocked(kind pubsub.Kind) int64 {
	if kind == pubsub.Shard {
		return int64(sb.kinds[pubsub.Shard]) // Redis counts shard channels apart
	}
	return int64(sb.kinds[pubsub.Channel] + sb.kinds[pubsub.Pattern])
}

// holdsTopics reports whether the connection holds any topic: Redis's
// client type pubsub, in either protocol.
func (c *client) holdsTopics() bool {
	if c.sub == nil {
		return false
	}
	c.sub.mu.Lock()
	defer c.sub.mu.Unlock()
	return len(c.sub.active) > 0
}

// subscribed reports whether the connection holds any topic and speaks
// RESP2: it may then only (un)subscribe, PING or QUIT. In RESP3 messages
// are pushes, and every command runs as usual.
func (c *client) subscribed() bool {
	return c.proto != resp.RESP3 && c.holdsTopics()
}

// subscribedOnly are the commands a subscribed RESP2 connection may run.
var subscribedOnly = map[string]bool{
	"subscribe": true, "psubscribe": true, "ssubscribe": true,
	"unsubscribe": true, "punsubscribe": true, "sunsubscribe": true,
	"ping": true, "quit": true, "reset": true,
}

// SUBSCRIBE channel [channel ...]
func (s *Server) subscribe(r *request) (resp.Reply, error) {
	return s.subscribeTopics(r, pubsub.Channel)
}

// PSUBSCRIBE pattern [pattern ...]
func (s *Server) psubscribe(r *request) (resp.Reply, error) {
	return s.subscribeTopics(r, pubsub.Pattern)
}

// UNSUBSCRIBE [channel ...]
func (s *Server) unsubscribe(r *request) (resp.Reply, error) {
	return s.unsubscribeTopics(r, pubsub.Channel)
}

// PUNSUBSCRIBE [pattern ...]
func (s *Server) punsubscribe(r *request) (resp.Reply, error) {
	return s.unsubscribeTopics(r, pubsub.Pattern)
}

// SSUBSCRIBE shardchannel [shardchannel ...]
func (s *Server) ssubscribe(r *request) (resp.Reply, error) {
	return s.subscribeTopics(r, pubsub.Shard)
}

// SUNSUBSCRIBE [shardchannel ...]
func (s *Server) sunsubscribe(r *request) (resp.Reply, error) {
	return s.unsubscribeTopics(r, pubsub.Shard)
}

var confirmWords = [3][2]string{{"unsubscribe", "subscribe"}, {"punsubscribe", "psubscribe"}, {"sunsubscribe", "ssubscribe"}}

// subscribeTopics subscribes on the nodes, then confirms each topic to
// the client in order, each followed by the messages that came for it
// while the nodes confirmed.
func (s *Server) subscribeTopics(r *request, kind pubsub.Kind) (resp.Reply, error) {
	if s.hub == nil {
		return resp.Reply{}, errNoPubSub
	}
	sb := s.subscriberOf(r)
	var fresh []pubsub.Topic
	sb.mu.Lock()
	sb.proto = r.c.proto
	for _, a := range r.args[1:] {
		t := pubsub.Topic{Kind: kind, Name: string(a)}
		if _, ok := sb.active[t]; !ok {
			sb.active[t] = false
			sb.order = append(sb.order, t)
			sb.kinds[kind]++
			fresh = append(fresh, t)
		}
	}
	sb.mu.Unlock()
	markSubscribed(r.conn.NetConn(), true)
	s.hub.Subscribe(r.ctx, sb, fresh...)

	sb.mu.Lock()
	defer sb.mu.Unlock()
	n := sb.countLocked(kind) - int64(len(fresh))
	for _, a := range r.args[1:] {
		t := pubsub.Topic{Kind: kind, Name: string(a)}
		if !sb.active[t] {
			sb.active[t] = true
			n++
		}
		r.last = sb.out.push(resp.Push(resp.Bulk(confirmWords[kind][1]), resp.Bulk(t.Name), resp.Int(n)), sb.proto, len(t.Name)+64)
		sb.flushEarlyLocked(t)
	}
	r.sent = true
	return resp.Reply{}, nil
}

// flushEarlyLocked queues the messages held for t, now confirmed.
func (sb *subscriber) flushEarlyLocked(t pubsub.Topic) {
	kept := sb.early[:0]
	for _, m := range sb.early {
		if m.Topic == t {
			sb.out.push(messageReply(m), sb.proto, len(m.Channel)+len(m.Payload)+64)
		} else {
			kept = append(kept, m)
		}
	}
	sb.early = kept
}

// unsubscribeTopics confirms each topic named (every topic of the kind
// when none is) and drops it; the nodes are unsubscribed once no client
// holds it. No message for a topic follows its confirmation.
func (s *Server) unsubscribeTopics(r *request, kind pubsub.Kind) (resp.Reply, error) {
	word := confirmWords[kind][0]
	if r.c.sub == nil {
		if len(r.args) == 1 {
			return resp.Push(resp.Bulk(word), resp.Null(), resp.Int(0)), nil
		}
		s.subscriberOf(r) // the confirmations go through the outbox from now on
	}
	sb := r.c.sub
	sb.mu.Lock()
	sb.proto = r.c.proto
	var names []pubsub.Topic
	for _, a := range r.args[1:] {
		names = append(names, pubsub.Topic{Kind: kind, Name: string(a)})
	}
	if len(r.args) == 1 {
		for _, t := range sb.order {
			if t.Kind == kind {
				names = append(names, t)
			}
		}
	}
	var gone []pubsub.Topic
	if len(names) == 0 {
		r.last = sb.out.push(resp.Push(resp.Bulk(word), resp.Null(), resp.Int(sb.countLocked(kind))), sb.proto, 64)
	}
	for _, t := range names {
		if _, ok := sb.active[t]; ok {
			delete(sb.active, t)
			sb.kinds[kind]--
			gone = append(gone, t)
		}
		r.last = sb.out.push(resp.Push(resp.Bulk(word), resp.Bulk(t.Name), resp.Int(sb.countLocked(kind))), sb.proto, len(t.Name)+64)
	}
	if len(gone) > 0 {
		kept := sb.order[:0]
		for _, t := range sb.order {
			if _, ok := sb.active[t]; ok {
				kept = append(kept, t)
			}
		}
		sb.order = kept
	}
	markSubscribed(r.conn.NetConn(), len(sb.active) > 0)
	sb.mu.Unlock()
	if len(gone) > 0 && s.hub != nil {
		s.hub.Unsubscribe(sb, gone...)
	}
	r.sent = true
	return resp.Reply{}, nil
}

// subscriberOf returns the connection's pub/sub state, making it on
// first use; from then on every reply goes through its outbox.
func (s *Server) subscriberOf(r *request) *subscriber {
	if r.c.sub == nil {
		if r.c.ob == nil {
			// What redcon holds for this connection goes out first.
			redcon.BaseWriter(r.conn).Flush()
			r.c.ob = newOutbox(r.conn.NetConn(), &s.running)
		}
		r.c.sub = &subscriber{out: r.c.ob, active: make(map[pubsub.Topic]bool)}
	}
	return r.c.sub
}

// leave drops every topic of a closed connection and its queue.
// forget drops every topic, telling the client nothing (RESET). The
// outbox stays: the connection goes on.
func (sb *subscriber) forget(hub *pubsub.Hub) {
	sb.mu.Lock()
	topics := sb.order
	sb.active, sb.order, sb.early, sb.kinds = map[pubsub.Topic]bool{}, nil, nil, [3]int{}
	sb.mu.Unlock()
	if hub != nil && len(topics) > 0 {
		hub.Unsubscribe(sb, topics...)
	}
}

func (sb *subscriber) leave(hub *pubsub.Hub) {
	sb.mu.Lock()
	topics := sb.order
	sb.active, sb.order, sb.early = nil, nil, nil
	sb.mu.Unlock()
	if hub != nil && len(topics) > 0 {
		hub.Unsubscribe(sb, topics...)
	}
	sb.out.close()
}
