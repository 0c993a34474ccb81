package proxy

import (
	"net"
	"sync"
	"time"

	"github.com/tidwall/redcon"

	"github.com/redlock-proxy/redlock-proxy/resp"
)

const (
	// maxOutbox bounds what a subscribed client may leave unread, as
	// Redis's client-output-buffer-limit for pub/sub clients does: past
	// it the client is closed.
	maxOutbox = 8 << 20
	// outboxWriteTimeout bounds one write to a subscribed client.
	outboxWriteTimeout = 30 * time.Second
)

// outbox writes a subscribed client's replies and messages in order.
// Messages come from the hub's node readers at any time, so once a
// connection subscribes, everything written to it goes through here: a
// drain goroutine, started when something is queued and none is running,
// writes the queue out and ends when it is empty. A command's replies are
// queued like messages, and the connection's redcon goroutine waits until
// they are written before it reads the next command.
type outbox struct {
	conn    net.Conn
	running *sync.WaitGroup // the server's: Close waits for the drains

	mu      sync.Mutex
	cond    *sync.Cond // signalled when written moves or the outbox closes
	queue   []queued
	size    int    // bytes queued, estimated
	queued  uint64 // replies ever queued
	written uint64 // replies ever written
	busy    bool   // a drain is running
	closed  bool
}

// queued is one reply with the protocol to write it in.
type queued struct {
	rep   resp.Reply
	proto resp.Proto
}

func newOutbox(conn net.Conn, running *sync.WaitGroup) *outbox {
	o := &outbox{conn: conn, running: running}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// push queues rep, whose encoding in proto takes about size bytes, and
// returns its place in the queue. A client that lets more than maxOutbox
// pile up is closed.
func (o *outbox) push(rep resp.Reply, proto resp.Proto, size int) uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return o.queued
	}
	if o.size+size > maxOutbox {
		o.closeLocked()
		return o.queued
	}
	o.queue = append(o.queue, queued{rep, proto})
	o.size += size
	o.queued++
	if !o.busy {
		o.busy = true
		o.running.Add(1) // the connection is open, so the count is above zero
		go o.drain()     // ends when the queue is empty; waited for by Server.Close
	}
	return o.queued
}

// offer queues rep, of about size bytes, unless more than limit bytes
// wait already; it never closes the client. For MONITOR, whose reader must
// never slow a command. It reports whether rep was queued.
func (o *outbox) offer(rep resp.Reply, proto resp.Proto, size, limit int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.size+size > limit {
		return false
	}
	o.queue = append(o.queue, queued{rep, proto})
	o.size += size
	o.queued++
	if !o.busy {
		o.busy = true
		o.running.Add(1) // the connection is open, so the count is above zero
		go o.drain()     // ends when the queue is empty; waited for by Server.Close
	}
	return true
}

// wait blocks until every reply up to seq is written, or the outbox
// closed.
func (o *outbox) wait(seq uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.written < seq && !o.closed {
		o.cond.Wait()
	}
}

// send queues rep and waits until it is written.
func (o *outbox) send(rep resp.Reply, proto resp.Proto) { o.wait(o.push(rep, proto, 64)) }

// drain writes the queue until it is empty.
func (o *outbox) drain() {
	defer o.running.Done()
	w := redcon.NewWriter(o.conn)
	for {
		o.mu.Lock()
		q := o.queue
		o.queue, o.size = nil, 0
		if len(q) == 0 || o.closed {
			o.busy = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		for _, q := range q {
			q.rep.WriteProto(w, q.proto)
		}
		o.conn.SetWriteDeadline(time.Now().Add(outboxWriteTimeout))
		err := w.Flush()
		o.mu.Lock()
		o.written += uint64(len(q))
		if err != nil {
			o.closeLocked()
		}
		o.cond.Broadcast()
		o.mu.Unlock()
	}
}

// close drops what is queued; the connection itself is redcon's to close.
func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	o.queue = nil
	o.cond.Broadcast()
}

// closeLocked gives up on a client that does not read: its connection is
// closed, which ends its redcon goroutine too.
func (o *outbox) closeLocked() {
	o.closed = true
	o.queue = nil
	o.conn.Close()
	o.cond.Broadcast()
}
