package redisnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
)

// unboundedWait is how long an operation without a deadline may wait for
// its reply before its connection counts as hung (go-redis's default
// read timeout).
const unboundedWait = 3 * time.Second

// errClosed is a node's answer once Close has begun.
var errClosed = errors.New("node closed")

// errOverdue fails the operations without a deadline on a connection
// dropped because a reply is overdue. It is a timeout, for the breaker.
var errOverdue = fmt.Errorf("node reply overdue: %w", os.ErrDeadlineExceeded)

// pipeline sends one node's operations over one connection, with any
// number of them in flight. A caller queues its operation; the first
// caller to find no write under way writes everything queued, its own
// included, as one write, then what queued meanwhile, until the queue is
// empty. The connection's reader (one goroutine per connection) matches
// the replies to the operations in order, and hands each its reply. No
// goroutine or channel stands between a caller and its write.
//
// A caller waits only until its own deadline: an operation whose deadline
// passed before it was written is not written, and a reply that arrives
// after it is dropped. A reply overdue past its operation's deadline
// drops the connection (the node is stalled, or the link is); the other
// operations on it wait out their own deadlines.
type pipeline struct {
	addr string
	log  *slog.Logger // for what the node refuses of the proxy's setup
	// dial opens a connection to the node, ready for commands (AUTH, and
	// the run_id watch, done): a *nodeConn's first bytes are replies.
	dial func(ctx context.Context) (net.Conn, *wire.Reader, error)
	// stale asks the next write to retire the connection: the node was
	// marked down, and it may lead to a process that is gone.
	stale atomic.Bool
	// late says that p's writes may land after their callers gave up:
	// its connections are never killed (settle). The node's decided
	// publishes, latch rounds and the counters' marking, naming and
	// seeding go on such a pipeline, apart from its lock operations and
	// FENCE's rounds, whose dropped connections are: a kill would lose a
	// late zero message that shared a connection with a lock operation
	// (attack18 A4), and their explorers allow a late landing. A FENCE
	// write-back landing late could set a later hold's record back (A7).
	late bool
	// noFunctions is set once the node refused FUNCTION LOAD or FCALL
	// (an ACL without them, a server without functions): scripts with a
	// library then run as scripts.
	noFunctions atomic.Bool
	readers     sync.WaitGroup

	mu    sync.Mutex
	queue []*op // waiting for the writer
	// nqueued is len(queue) and conn the connection operations go out
	// on, nil until dialed: both change under mu, and are read without
	// it by the writers gathering (gatherWrites).
	nqueued atomic.Int32
	conn    atomic.Pointer[nodeConn]
	spare   []*op // the last batch's slice, for the next queue
	// unsettled are the node's client IDs of connections dropped or
	// retired with operations unanswered: their writes may still reach
	// the node. The next connection has the node kill them before it
	// carries a command (settle), so none lands after a later one.
	unsettled []clientRef
	writing   bool // a caller is writing; it writes what queues meanwhile
	closed    bool
	conns     map[*nodeConn]bool // every connection with a reader, retired ones too
	buf       []byte             // the writer's encoding buffer
}

// op is one command, its caller's context, and, once finished, its reply:
// a caller waiting on the op alone gets it on done, a fan-out's ops
// report to their fan (fanpipe.go).
type op struct {
	ctx   context.Context
	cmd   []byte    // the command, encoded
	limit time.Time // its deadline, or when its reply is overdue if none
	val   any
	err   error
	done  chan struct{}
	fan   *fan
	at    time.Time   // when it finished, if its fan is timed
	fin   atomic.Bool // set once val and err are, for a fan that stopped waiting
	// resent: the op is a script's body sent after NOSCRIPT, or got that
	// reply and waits for its fan to send it (fanpipe.go)
	resent bool
}

// finish hands o its reply; whoever calls it touches o no more.
func (o *op) finish(v any, err error) {
	o.val, o.err = v, err
	if f := o.fan; f != nil {
		f.finished(o)
		return
	}
	o.done <- struct{}{}
}

// gaveUp is o's context's error at now, given its deadline d (if ok):
// the deadline is judged by now, not by another reading of the clock.
func (o *op) gaveUp(now, d time.Time, ok bool) error {
	switch {
	case ok && !now.Before(d):
		return context.DeadlineExceeded
	case o.fan != nil:
		// The caller's; the fan's own deadline is d. One that nothing
		// ends before its deadline, which is d or later, is not asked
		// (its Err reads the clock again): an op of its fan is written
		// before d or not at all, as the fan's wait ends only when every
		// op finished or at d.
		if e, ok := o.fan.ctx.Context.(endsAtDeadline); ok && e.EndsAtDeadline() {
			return nil
		}
		return o.fan.ctx.Context.Err()
	}
	return o.ctx.Err()
}

// ops keeps the operations whose callers took their replies, for reuse.
// One a caller gave up on may still be finished later, and is left to the
// garbage collector.
var ops = sync.Pool{New: func() any { return &op{done: make(chan struct{}, 1)} }}

// newPipeline returns the pipeline to the node at addr, which dial
// connects to.
func newPipeline(addr string, dial func(ctx context.Context) (net.Conn, *wire.Reader, error), log *slog.Logger) *pipeline {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &pipeline{addr: addr, log: log, dial: dial, conns: map[*nodeConn]bool{}}
}

// close fails every operation queued or in flight with errClosed, closes
// the connections and waits for their readers.
func (p *pipeline) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	for _, o := range p.queue {
		o.finish(nil, errClosed)
	}
	clear(p.queue)
	p.queue = p.queue[:0]
	p.nqueued.Store(0)
	conns := make([]*nodeConn, 0, len(p.conns))
	for cn := range p.conns {
		conns = append(conns, cn)
	}
	p.mu.Unlock()
	for _, cn := range conns {
		p.fail(cn, errClosed)
	}
	p.readers.Wait()
}

// do sends args as one command and returns it with its reply.
func (p *pipeline) do(ctx context.Context, args ...any) (*redis.Cmd, error) {
	cmd := redis.NewCmd(ctx, args...)
	p.process(ctx, cmd)
	return cmd, cmd.Err()
}

// process sends cmd and sets its reply.
func (p *pipeline) process(ctx context.Context, cmd *redis.Cmd) {
	v, err := p.send(ctx, wire.AppendCommand(nil, cmd.Args()))
	switch v := v.(type) {
	case nil:
		if err == nil {
			err = redis.Nil
		}
		cmd.SetErr(err)
	case wire.Error:
		cmd.SetErr(v)
	default:
		cmd.SetVal(v)
	}
}

// reply is send with an error reply as the error, and a nil reply as
// redis.Nil, as go-redis returns them.
func (p *pipeline) reply(ctx context.Context, cmd []byte) (any, error) {
	v, err := p.send(ctx, cmd)
	switch e := v.(type) {
	case nil:
		if err == nil {
			err = redis.Nil
		}
		return nil, err
	case wire.Error:
		return nil, e
	}
	return v, err
}

// send sends cmd, one encoded command, and returns its reply: an error
// reply as a wire.Error value, and an I/O failure, a deadline or
// errClosed as the error.
func (p *pipeline) send(ctx context.Context, cmd []byte) (any, error) {
	o := ops.Get().(*op)
	o.ctx, o.cmd = ctx, cmd
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		o.ctx, o.cmd = nil, nil
		ops.Put(o)
		return nil, errClosed
	}
	p.queue = append(p.queue, o)
	p.nqueued.Store(int32(len(p.queue)))
	if p.writing {
		p.mu.Unlock()
	} else {
		p.writing = true
		p.mu.Unlock()
		p.flush()
	}
	// close finishes every operation it does not leave to the writer,
	// so that a wait needs no third channel (one shared by every caller).
	select {
	case <-o.done:
		v, err := o.val, o.err
		*o = op{done: o.done}
		ops.Put(o)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr // a late reply is not an answer
		}
		return v, err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// enqueue queues o, or finishes it with errClosed. It reports whether
// the caller is now the writer (no write was under way), which must call
// drain.
func (p *pipeline) enqueue(o *op) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		o.finish(nil, errClosed)
		return false
	}
	p.queue = append(p.queue, o)
	p.nqueued.Store(int32(len(p.queue)))
	mine := !p.writing
	p.writing = true
	p.mu.Unlock()
	return mine
}

// flush is gatherWrites, then drain. Only the writer calls it.
func (p *pipeline) flush() {
	gatherWrites(p)
	p.drain()
}

// gatherWrites lets the callers that are ready to run queue their operations
// before ps, whose writer the caller is, write, if any of them has
// operations in flight: the caller waits for their replies anyway, so
// while operations keep coming, they are written all at once. Under load
// this makes a write carry several times more.
func gatherWrites(ps ...*pipeline) {
	if !slices.ContainsFunc(ps, (*pipeline).busy) {
		return
	}
	queued := func() int {
		n := 0
		for _, p := range ps {
			n += p.queued()
		}
		return n
	}
	for range 4 {
		n := queued()
		runtime.Gosched()
		if queued() == n {
			break
		}
	}
}

// connected reports whether p has a connection to write on, without a
// dial.
func (p *pipeline) connected() bool {
	return p.conn.Load() != nil && !p.stale.Load()
}

// busy reports whether p's connection has operations in flight.
func (p *pipeline) busy() bool {
	cn := p.conn.Load()
	return cn != nil && cn.busy.Load() > 0
}

// drain writes what is queued, batch after batch, until nothing is, then
// clears writing. Only the writer calls it.
func (p *pipeline) drain() {
	p.mu.Lock()
	for len(p.queue) > 0 && !p.closed {
		batch := p.queue
		p.queue = p.spare
		p.nqueued.Store(0)
		p.mu.Unlock()
		p.write(batch)
		clear(batch)
		p.mu.Lock()
		p.spare = batch[:0]
	}
	p.writing = false
	p.mu.Unlock()
}

// write sends the batch's live operations as one write. Only the writer
// calls it.
func (p *pipeline) write(batch []*op) {
	live := batch[:0]
	var latest time.Time
	now := time.Now()
	for _, o := range batch {
		d, ok := o.ctx.Deadline()
		if err := o.gaveUp(now, d, ok); err != nil {
			o.finish(nil, err) // its caller has given up: not sent
			continue
		}
		if !ok {
			d = now.Add(unboundedWait)
		}
		o.limit = d
		latest = later(latest, d)
		live = append(live, o)
	}
	if len(live) == 0 {
		return
	}
	cn, rtt, err := p.connection(latest)
	if err != nil {
		for _, o := range live {
			o.finish(nil, err)
		}
		return
	}
	if rtt > 0 {
		// A new connection: an op with less time left than its dial
		// took (connect and handshake, a round trip or more; the kills
		// are not counted) is likely answered past its deadline, and
		// the connection dropped with it unanswered, so that the next
		// one pays the kills again, on a slow link every time
		// (attack18's slow link). It is not sent; the connection
		// stays for the next.
		now := time.Now()
		kept := live[:0]
		for _, o := range live {
			if o.limit.Sub(now) < rtt {
				o.finish(nil, context.DeadlineExceeded)
				continue
			}
			kept = append(kept, o)
		}
		if live = kept; len(live) == 0 {
			return
		}
	}
	buf := live[0].cmd
	if len(live) > 1 {
		buf = p.buf[:0]
		for _, o := range live {
			buf = append(buf, o.cmd...)
		}
		if cap(buf) <= 1<<20 {
			p.buf = buf // a big batch's buffer is not kept
		}
	}
	if err := cn.push(live); err != nil {
		for _, o := range live {
			o.finish(nil, err)
		}
		return
	}
	// A write blocks only on a full socket buffer (a stalled node); the
	// deadline moves in steps, not with every write.
	if latest.Sub(cn.wdl) > 10*time.Millisecond {
		cn.wdl = latest
		cn.c.SetWriteDeadline(latest)
	}
	if _, err := cn.c.Write(buf); err != nil {
		p.fail(cn, err)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// connection returns the connection to write on, dialing one by limit if
// there is none, and then how long the dial took (connect and
// handshake, before any kill), else 0. Only the writer calls it.
func (p *pipeline) connection(limit time.Time) (*nodeConn, time.Duration, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, 0, errClosed
	}
	cn := p.conn.Load()
	if p.stale.Swap(false) && cn != nil {
		p.conn.Store(nil)
		p.mu.Unlock()
		p.retire(cn)
		cn = nil
	} else {
		p.mu.Unlock()
	}
	if cn != nil {
		return cn, 0, nil
	}
	start := time.Now()
	c, rd, err := p.dial(deadlineContext(limit))
	if err != nil {
		return nil, 0, err
	}
	took := max(time.Since(start), 1)
	cn = &nodeConn{c: c, rd: rd}
	var runID string
	if cc, ok := c.(*clientConn); ok {
		cn.id, cn.runID, runID = cc.id, cc.runID, cc.runID
	}
	if err := p.settle(c, rd, limit, runID); err != nil {
		c.Close()
		return nil, 0, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return nil, 0, errClosed
	}
	p.conn.Store(cn)
	p.conns[cn] = true
	p.readers.Add(1)
	p.mu.Unlock()
	go p.read(cn)
	return cn, took, nil
}

// retire lets cn finish the operations in flight on it, then closes it;
// the next connection has the node kill it first if any are, unless p's
// writes may land late (settle).
func (p *pipeline) retire(cn *nodeConn) {
	if cn == nil {
		return
	}
	cn.mu.Lock()
	cn.retired = true
	ops := cn.inflight[cn.head:]
	idle := len(ops) == 0
	kill := !idle && !p.late
	cn.mu.Unlock()
	if idle {
		cn.c.Close() // its reader sees the close and ends
		return
	}
	if kill {
		p.unsettle(cn)
	}
}

// clientRef names a connection on the node: its CLIENT ID, and the
// run_id of the process that gave it.
type clientRef struct {
	id    int64
	runID string
}

// unsettle marks cn, given up with ops unanswered, for settle.
func (p *pipeline) unsettle(cn *nodeConn) {
	if cn.id == 0 {
		return // the node did not tell its ID (an ACL without CLIENT ID)
	}
	p.mu.Lock()
	p.unsettled = append(p.unsettled, clientRef{cn.id, cn.runID})
	p.mu.Unlock()
}

// settle has the node kill the connections given up with writes
// unanswered, on c, a new connection, before it carries a command: a
// write of theirs still on its way (a slow link, a lost segment's
// retransmission) is then run before c's commands or never, and cannot
// undo a later one (attack17 F4b: a release given up on deleted the
// same token's later grant). A node that refuses CLIENT KILL is logged;
// the connection is used anyway.
func (p *pipeline) settle(c net.Conn, rd *wire.Reader, limit time.Time, runID string) error {
	p.mu.Lock()
	ids := p.unsettled
	p.unsettled = nil
	p.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	c.SetDeadline(limit)
	for i, ref := range ids {
		if ref.runID != runID {
			// The node restarted since: the connection is gone with its
			// process, and the ID may now be another client's.
			continue
		}
		if _, err := roundTrip(c, rd, "client", "kill", "id", ref.id); err != nil {
			if !isReplyError(err, "") {
				p.mu.Lock()
				p.unsettled = append(p.unsettled, ids[i:]...) // for the next connection
				p.mu.Unlock()
				return err
			}
			p.log.Warn("node refuses CLIENT KILL: a write given up on may land after a later one (docs/operations.md)", "node", p.addr, "err", err)
		}
	}
	return c.SetDeadline(time.Time{})
}

// fail ends cn after err: it is closed, and the operations in flight on
// it fail with err; after errOverdue, those with a deadline of their own
// wait it out instead.
func (p *pipeline) fail(cn *nodeConn, err error) {
	cn.mu.Lock()
	if cn.err == nil {
		cn.err = err
	}
	ops := cn.inflight[cn.head:]
	cn.inflight, cn.head = nil, 0
	cn.busy.Store(0)
	cn.mu.Unlock()
	cn.c.Close()
	if len(ops) > 0 && !p.late {
		p.unsettle(cn)
	}
	p.mu.Lock()
	p.conn.CompareAndSwap(cn, nil)
	p.mu.Unlock()
	for _, o := range ops {
		if err == errOverdue {
			if _, ok := o.ctx.Deadline(); ok {
				continue
			}
		}
		o.finish(nil, err)
	}
}

// read is cn's reader: it hands each reply to the operation it answers,
// in order, until cn fails.
func (p *pipeline) read(cn *nodeConn) {
	defer func() {
		p.mu.Lock()
		delete(p.conns, cn)
		p.mu.Unlock()
		p.readers.Done()
	}()
	var reads int    // cn.rd's reads, when at was taken
	var at time.Time // when cn.rd's last read returned, if a timed fan needed it
	for {
		v, err := cn.rd.Next()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if cn.overdue() {
					p.fail(cn, errOverdue)
					return
				}
				continue
			}
			p.fail(cn, err)
			return
		}
		o, done := cn.pop()
		if o == nil {
			p.fail(cn, fmt.Errorf("%w: a reply to no command", wire.ErrProtocol))
			return
		}
		if f := o.fan; f != nil && f.timed {
			if n := cn.rd.Reads(); n != reads || at.IsZero() {
				reads, at = n, time.Now() // once per read, not per reply
			}
			o.at = at
		}
		o.finish(v, nil)
		if done {
			p.fail(cn, errClosed) // retired, and nothing left in flight
			return
		}
	}
}

// nodeConn is one connection to the node and the operations in flight on
// it, oldest first.
type nodeConn struct {
	c     net.Conn
	id    int64        // the node's CLIENT ID of c; 0 if not known
	runID string       // the node's run_id when it told id
	rd    *wire.Reader // only the reader touches it
	// wdl is the write deadline set; only the writer touches it.
	wdl time.Time

	mu       sync.Mutex
	inflight []*op // inflight[head:] await their replies, in order
	head     int
	rdl      time.Time // the read deadline set; zero for none
	retired  bool
	err      error // set once cn failed: nothing more goes out on it
	// busy is len(inflight) - head, for the writer to read without mu.
	busy atomic.Int32
}

// push appends ops, about to be written, to those in flight.
func (cn *nodeConn) push(ops []*op) error {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.err != nil {
		return cn.err
	}
	if cn.head == len(cn.inflight) && (cn.rdl.IsZero() || ops[0].limit.Before(cn.rdl)) {
		cn.rdl = ops[0].limit
		cn.c.SetReadDeadline(cn.rdl)
	}
	cn.inflight = append(cn.inflight, ops...)
	cn.busy.Add(int32(len(ops)))
	return nil
}

// pop takes the oldest operation in flight; done reports that cn is
// retired and has nothing more in flight.
func (cn *nodeConn) pop() (o *op, done bool) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.head == len(cn.inflight) {
		return nil, false
	}
	o = cn.inflight[cn.head]
	cn.inflight[cn.head] = nil
	cn.head++
	cn.busy.Add(-1)
	switch {
	case cn.head == len(cn.inflight):
		cn.inflight, cn.head = cn.inflight[:0], 0
		return o, cn.retired
	case cn.head > 1024 && cn.head > len(cn.inflight)/2:
		n := copy(cn.inflight, cn.inflight[cn.head:])
		clear(cn.inflight[n:])
		cn.inflight, cn.head = cn.inflight[:n], 0
	}
	return o, false
}

// overdue is called when a read timed out: it reports whether the oldest
// operation in flight is past its deadline, and otherwise moves the read
// deadline to that operation's (none while nothing is in flight).
func (cn *nodeConn) overdue() bool {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	var next time.Time
	if cn.head < len(cn.inflight) {
		next = cn.inflight[cn.head].limit
		if !time.Now().Before(next) {
			return true
		}
	}
	cn.rdl = next
	cn.c.SetReadDeadline(next)
	return false
}

// queued is how many operations wait for the writer.
func (p *pipeline) queued() int {
	return int(p.nqueued.Load())
}

// deadlineContext is a context that is never cancelled and only carries a
// deadline: a dial for a batch needs no timer of its own.
type deadlineContext time.Time

func (d deadlineContext) Deadline() (time.Time, bool) { return time.Time(d), true }
func (deadlineContext) Done() <-chan struct{}         { return nil }
func (deadlineContext) Err() error                    { return nil }
func (deadlineContext) Value(any) any                 { return nil }
