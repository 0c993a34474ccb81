package pubsub

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// node is the hub's subscriber connection to one master. Its fields are
// guarded by the hub's mutex; the connection is read only by run.
type node struct {
	h    *Hub
	i    int
	addr string

	conn      net.Conn      // nil while down
	up        bool          // conn answered its handshake
	pending   map[Topic]int // (un)subscribe commands sent, not yet confirmed
	confirmed map[Topic]bool
	wasDown   bool // the last dial failed: log the next success
	settled   bool // the first dial is over, one way or the other
}

// run dials the node, serves the connection until it fails, and dials
// again after RetryInterval, until ctx is done.
func (n *node) run(ctx context.Context) {
	for ctx.Err() == nil {
		conn, r, err := n.dial(ctx)
		if err == nil {
			err = n.serve(ctx, conn, r)
		}
		if ctx.Err() != nil {
			return
		}
		n.h.mu.Lock()
		n.settled = true
		n.dropLocked()
		logged := n.wasDown
		n.wasDown = true
		n.h.mu.Unlock()
		if !logged {
			n.h.cfg.Log.Warn("node subscription down", "node", n.i, "addr", n.addr, "err", err)
		}
		t := time.NewTimer(n.h.cfg.RetryInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// dial connects, authenticates and checks that the node answers.
func (n *node) dial(ctx context.Context) (net.Conn, *bufio.Reader, error) {
	cfg := n.h.cfg
	d := net.Dialer{Timeout: cfg.timeout}
	var conn net.Conn
	var err error
	if cfg.TLS != nil {
		td := tls.Dialer{NetDialer: &d, Config: cfg.TLS}
		conn, err = td.DialContext(ctx, "tcp", n.addr)
	} else {
		conn, err = d.DialContext(ctx, "tcp", n.addr)
	}
	if err != nil {
		return nil, nil, err
	}
	var b []byte
	switch {
	case cfg.Username != "":
		b = appendCommand(b, "AUTH", cfg.Username, cfg.Password)
	case cfg.Password != "":
		b = appendCommand(b, "AUTH", cfg.Password)
	}
	b = appendCommand(b, "PING")
	conn.SetDeadline(time.Now().Add(cfg.timeout))
	r := bufio.NewReaderSize(conn, 4096)
	if _, err := conn.Write(b); err != nil {
		conn.Close()
		return nil, nil, err
	}
	for range 1 + btoi(cfg.Username != "" || cfg.Password != "") {
		v, err := readValue(r, 0)
		if err == nil && v.kind == '-' {
			err = fmt.Errorf("pubsub: %s", v.str)
		}
		if err != nil {
			conn.Close()
			return nil, nil, err
		}
	}
	conn.SetDeadline(time.Time{})
	return conn, r, nil
}

// serve subscribes every topic on conn, then reads its replies until the
// connection fails or stays silent through three pings.
func (n *node) serve(ctx context.Context, conn net.Conn, r *bufio.Reader) error {
	h := n.h
	h.mu.Lock()
	if ctx.Err() != nil { // Close ran: it must find every connection
		h.mu.Unlock()
		conn.Close()
		return ctx.Err()
	}
	n.conn, n.up, n.settled = conn, true, true
	n.pending, n.confirmed = make(map[Topic]int), make(map[Topic]bool)
	topics := make([]Topic, 0, len(h.topics))
	for t := range h.topics {
		topics = append(topics, t)
	}
	n.sendLocked(true, topics)
	if n.wasDown {
		n.wasDown = false
		h.cfg.Log.Info("node subscription up", "node", n.i, "addr", n.addr, "topics", len(topics))
	}
	h.broadcastLocked()
	h.mu.Unlock()

	done := make(chan struct{})
	defer close(done)
	h.wg.Go(func() { n.ping(done) }) // ends with done
	for {
		conn.SetReadDeadline(time.Now().Add(3 * h.cfg.pingInterval))
		v, err := readValue(r, 0)
		if err != nil {
			return err
		}
		if err := n.handle(v); err != nil {
			return err
		}
	}
}

// ping sends PING every pingInterval until done, so that a silent node
// shows as a read timeout.
func (n *node) ping(done <-chan struct{}) {
	t := time.NewTicker(n.h.cfg.pingInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			n.h.mu.Lock()
			n.writeLocked(appendCommand(nil, "PING"))
			n.h.mu.Unlock()
		}
	}
}

// handle acts on one reply of a subscribed connection.
func (n *node) handle(v value) error {
	if v.kind == '-' {
		// A refused SUBSCRIBE (an ACL without the channel, say): that
		// topic stays unconfirmed on this node.
		n.h.cfg.Log.Warn("node refused a subscription", "node", n.i, "addr", n.addr, "err", v.str)
		return nil
	}
	if v.kind == '+' {
		return nil // PONG, while no topic is subscribed
	}
	if v.kind != '*' || len(v.items) < 2 || v.items[0].kind != '$' {
		return fmt.Errorf("%w: unexpected reply", errProtocol)
	}
	it := v.items
	switch kind := it[0].str; {
	case kind == "message" && len(it) == 3:
		n.h.deliver(n.i, Message{Topic: Topic{Channel, it[1].str}, Channel: it[1].str, Payload: it[2].str})
	case kind == "smessage" && len(it) == 3:
		n.h.deliver(n.i, Message{Topic: Topic{Shard, it[1].str}, Channel: it[1].str, Payload: it[2].str})
	case kind == "pmessage" && len(it) == 4:
		n.h.deliver(n.i, Message{Topic: Topic{Pattern, it[1].str}, Channel: it[2].str, Payload: it[3].str})
	case kind == "subscribe" || kind == "unsubscribe":
		n.confirm(Topic{Channel, it[1].str}, kind == "subscribe")
	case kind == "psubscribe" || kind == "punsubscribe":
		n.confirm(Topic{Pattern, it[1].str}, kind == "psubscribe")
	case kind == "ssubscribe" || kind == "sunsubscribe":
		n.confirm(Topic{Shard, it[1].str}, kind == "ssubscribe")
	case kind == "pong":
	default:
		return fmt.Errorf("%w: unexpected %q", errProtocol, kind)
	}
	return nil
}

// confirm records the node's answer to one (un)subscribe of t.
func (n *node) confirm(t Topic, subscribed bool) {
	n.h.mu.Lock()
	defer n.h.mu.Unlock()
	if n.confirmed == nil {
		return // a write failed and dropped the connection meanwhile
	}
	if n.pending[t]--; n.pending[t] <= 0 {
		delete(n.pending, t)
	}
	if subscribed {
		n.confirmed[t] = true
	} else {
		delete(n.confirmed, t)
	}
	n.h.broadcastLocked()
}

// sendLocked writes SUBSCRIBE (or UNSUBSCRIBE) commands for topics, if
// the node is up; a node that is down subscribes every topic when it is
// dialed again.
func (n *node) sendLocked(subscribe bool, topics []Topic) {
	if n.conn == nil || len(topics) == 0 {
		return
	}
	var b []byte
	for _, kind := range []Kind{Channel, Pattern, Shard} {
		args := []string{commandName(kind, subscribe)}
		for _, t := range topics {
			if t.Kind == kind {
				args = append(args, t.Name)
				n.pending[t]++
			}
		}
		if len(args) > 1 {
			b = appendCommand(b, args...)
		}
	}
	n.writeLocked(b)
}

func commandName(k Kind, subscribe bool) string {
	name := [...]string{Channel: "SUBSCRIBE", Pattern: "PSUBSCRIBE", Shard: "SSUBSCRIBE"}[k]
	if !subscribe {
		name = name[:len(name)-len("SUBSCRIBE")] + "UNSUBSCRIBE"
	}
	return name
}

// writeLocked writes b, within timeout. A failed write drops the
// connection: its reader then fails and dials again.
func (n *node) writeLocked(b []byte) {
	if n.conn == nil {
		return
	}
	n.conn.SetWriteDeadline(time.Now().Add(n.h.cfg.timeout))
	if _, err := n.conn.Write(b); err != nil {
		n.dropLocked()
	}
}

// dropLocked closes the connection and forgets what it confirmed.
func (n *node) dropLocked() {
	if n.conn != nil {
		n.conn.Close()
	}
	n.conn, n.up, n.pending, n.confirmed = nil, false, nil, nil
	n.h.broadcastLocked()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
