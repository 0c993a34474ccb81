package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-proxy/redlock-proxy/resp"
)

const (
	// readChunk is the size of a guardedConn's large buffer: the most it
	// reads from the client at once, and the most of a longer command it
	// hands redcon in one Read.
	readChunk = 4 << 10
	// smallChunk is the size of the buffer each guardedConn keeps. A
	// command that does not fit borrows a large one until the client's
	// bytes are all handed over, so that an idle client holds no more.
	smallChunk = 512
	// refuseTimeout bounds the write of a protocol error, so that a client
	// that does not read cannot hold its connection open.
	refuseTimeout = 500 * time.Millisecond
	// acceptMinWait and acceptMaxWait bound the wait after a failed
	// accept (net/http's numbers).
	acceptMinWait = 5 * time.Millisecond
	acceptMaxWait = time.Second
	// freeAfter and freeEvery: see inputBudget.release.
	freeAfter = 4 << 20
	freeEvery = time.Second
)

// guardOptions are the settings of guardListener.
type guardOptions struct {
	lim Limits // after AUTH
	// needAuth reports, when a connection is accepted, whether it starts
	// under PreAuth (or lim, where lower) until AUTH. Nil means never.
	needAuth func() bool
	// maxInput caps the read buffers of all connections together; see
	// inputBudget. Zero or less means no cap.
	maxInput int64
	// onViolation, if set, is called for each protocol error answered.
	onViolation func()
	// onAcceptError, if set, is called for each failed accept, with the
	// wait before the next one.
	onAcceptError func(err error, wait time.Duration)
}

// guardListener wraps ln so that every accepted connection's bytes pass a
// Framer (pre-auth limits until markAuthenticated, for a connection
// accepted while needAuth reports true) before redcon reads them. redcon
// v1.6.2's reader has no limits of its own: one bad length panics its
// connection goroutine and with it the process. A TLS listener goes
// under the guard, which then reads decrypted bytes.
func guardListener(ln net.Listener, o guardOptions) *guardedListener {
	l := &guardedListener{Listener: ln, needAuth: o.needAuth, onViolation: o.onViolation, onAcceptError: o.onAcceptError,
		budget: &inputBudget{}, conns: map[*guardedConn]struct{}{}, done: make(chan struct{})}
	l.budget.limit.Store(o.maxInput)
	l.setLimits(o.lim)
	return l
}

type guardedListener struct {
	net.Listener
	needAuth      func() bool
	onViolation   func()
	onAcceptError func(err error, wait time.Duration)
	budget        *inputBudget
	// idle, above zero, closes a connection that sends nothing for that
	// long (in nanoseconds); read at each wait for the client.
	idle atomic.Int64
	// stopped: no more reads from clients (stop).
	stopped atomic.Bool

	mu         sync.Mutex
	lim, first Limits // after AUTH; before it
	conns      map[*guardedConn]struct{}
	done       chan struct{} // closed once stopped and every conn is closed, or by abandon
	closedDone bool
}

// setLimits sets the limits of the connections accepted from now on.
func (l *guardedListener) setLimits(lim Limits) {
	lim = lim.WithDefaults()
	// Redis's pre-auth limits, unless the configured ones are lower.
	first := Limits{
		MaxArgs:    min(PreAuth.MaxArgs, lim.MaxArgs),
		MaxBulk:    min(PreAuth.MaxBulk, lim.MaxBulk),
		MaxInline:  min(PreAuth.MaxInline, lim.MaxInline),
		MaxCommand: min(PreAuth.MaxCommand, lim.MaxCommand),
	}
	l.mu.Lock()
	l.lim, l.first = lim, first
	l.mu.Unlock()
}

// Accept returns the next connection, guarded. Its errors are ln's
// unchanged, so that redcon still sees net.ErrClosed on shutdown. Once
// stop closed ln, the error waits until every connection has closed:
// redcon closes all connections as soon as Accept fails, and those still
// running a command would lose its reply.
//
// Any other failure, such as running out of file descriptors, is retried
// here after a wait that doubles from 5ms to 1s, as net/http's Server
// does: redcon v1.6.2 would call Accept again at once, spinning a core
// while the descriptors stay used up.
func (l *guardedListener) Accept() (net.Conn, error) {
	var wait time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if l.stopped.Load() {
				<-l.done
				return nil, err
			}
			if errors.Is(err, net.ErrClosed) {
				return nil, err
			}
			wait = min(max(2*wait, acceptMinWait), acceptMaxWait)
			if l.onAcceptError != nil {
				l.onAcceptError(err, wait)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-l.done: // Close or Shutdown
				t.Stop()
				return nil, err
			}
			continue
		}
		wait = 0
		l.mu.Lock()
		if l.stopped.Load() { // accepted just before stop closed ln
			l.mu.Unlock()
			c.Close()
			continue
		}
		first := l.lim
		if l.needAuth != nil && l.needAuth() {
			first = l.first
		}
		g := &guardedConn{Conn: c, l: l, f: NewFramer(first), lim: l.lim, budget: l.budget}
		l.conns[g] = struct{}{}
		l.mu.Unlock()
		return g, nil
	}
}

// stop closes ln and makes every connection close once the command it
// is running, if any, has its reply: reads from clients end.
func (l *guardedListener) stop() {
	l.mu.Lock()
	l.stopped.Store(true)
	conns := make([]*guardedConn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	if len(l.conns) == 0 {
		l.closeDoneLocked()
	}
	l.mu.Unlock()
	l.Listener.Close()
	for _, c := range conns {
		c.Conn.SetReadDeadline(time.Now()) // wakes a read in progress
	}
}

// abandon lets Accept fail at once, whatever connections remain.
func (l *guardedListener) abandon() {
	l.mu.Lock()
	l.closeDoneLocked()
	l.mu.Unlock()
}

func (l *guardedListener) closeDoneLocked() {
	if !l.closedDone {
		l.closedDone = true
		close(l.done)
	}
}

// forget drops c from the open connections.
func (l *guardedListener) forget(c *guardedConn) {
	l.mu.Lock()
	delete(l.conns, c)
	if l.stopped.Load() && len(l.conns) == 0 {
		l.closeDoneLocked()
	}
	l.mu.Unlock()
}

// inputBudget is what all connections' read buffers may hold together
// beyond their base size. redcon's reader starts with 4 KiB and doubles
// its buffer until a command fits; so a connection is charged, from when
// one of its commands passes readChunk bytes until redcon has dropped the
// grown buffer (shrinkStep) or the connection closes, the buffer that
// command may have grown redcon's to (redconBuffer).
type inputBudget struct {
	limit atomic.Int64 // zero or less: no cap; a reload may change it
	used  atomic.Int64
	since atomic.Int64 // bytes reserved since memory was last given back

	mu      sync.Mutex
	freedAt time.Time   // when memory was last given back
	timer   *time.Timer // a giving back scheduled
}

// reserve takes n bytes from the budget, or reports false and takes
// nothing if that would exceed it. A limit lowered below what is in use
// refuses new reservations until enough is released.
func (b *inputBudget) reserve(n int64) bool {
	used := b.used.Add(n)
	if limit := b.limit.Load(); used > limit && limit > 0 {
		b.used.Add(-n)
		return false
	}
	b.since.Add(n)
	return true
}

// release gives n bytes back. When nothing is held any more, and at least
// freeAfter was reserved since the last time, the memory goes back to
// the system soon after, as
// redis-server frees a client's buffers: Go's runtime would otherwise keep
// it until its next collection, which an idle proxy runs only every two
// minutes. It happens at most once per freeEvery, and always after the
// budget last emptied.
func (b *inputBudget) release(n int64) {
	if b.used.Add(-n) != 0 || b.since.Load() < freeAfter {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.timer == nil {
		// The timer's goroutine only frees memory; nothing waits for it.
		b.timer = time.AfterFunc(max(time.Until(b.freedAt.Add(freeEvery)), 0), b.free)
	}
}

// free gives memory back to the system, unless the budget is in use
// again, in which case its next emptying schedules it anew.
func (b *inputBudget) free() {
	b.mu.Lock()
	b.timer = nil
	idle := b.used.Load() == 0
	if idle {
		b.freedAt = time.Now()
		b.since.Store(0)
	}
	b.mu.Unlock()
	if idle {
		debug.FreeOSMemory()
	}
}

// redconBuffer is the most redcon's read buffer grows to for a command of
// n bytes: it starts at 4 KiB, doubles while the command does not fit,
// and may hold up to 4 KiB of earlier commands before it.
func redconBuffer(n int) int64 {
	size := int64(readChunk)
	for size < int64(n)+readChunk {
		size *= 2
	}
	return size
}

// errInputBudget refuses a command when the read buffers of all clients
// together would pass max_input_total.
var errInputBudget = errors.New("max_input_total reached: too much input buffered for all clients")

// markAuthenticated lifts c's pre-auth limits from the next command; c is
// the net.Conn redcon's Conn.NetConn() returns. A no-op for other conns.
func markAuthenticated(c net.Conn) {
	if g, ok := c.(*guardedConn); ok {
		g.f.SetLimits(g.lim)
	}
}

// markUnauthenticated puts c back under the pre-auth limits, from its
// next command (RESET where the default user needs a password).
func markUnauthenticated(c net.Conn) {
	if g, ok := c.(*guardedConn); ok && g.l != nil {
		g.l.mu.Lock()
		first := g.l.first
		g.l.mu.Unlock()
		g.f.SetLimits(first)
	}
}

// markSubscribed exempts c from idle_timeout while on is true; c is the
// net.Conn redcon's Conn.NetConn() returns. A no-op for other conns.
func markSubscribed(c net.Conn, on bool) {
	if g, ok := c.(*guardedConn); ok {
		g.subscribed = on
	}
}

// guardedConn hands redcon only bytes its Framer accepted, one command
// per Read.
//
// redcon runs every command of a batch, even after the handler closed
// the connection, and reads the next batch only when its buffer holds no
// whole command. Handing it one command at a time, and checking the bytes
// behind a command only once it has run, makes AUTH lift the pre-auth
// limits for the commands pipelined after it and makes nothing run after
// QUIT, as in Redis. It also keeps redcon's reader, which never compacts
// its buffer, from growing that buffer while a client keeps a pipeline
// full. It drops lines without arguments when nothing follows them:
// redcon reads again, one call deeper, after every read that brings no
// command, and a stream of empty lines would overflow its stack. And it
// drops every empty multibulk (*0, *-1), which Redis ignores and redcon
// refuses.
//
// redcon reads each connection from its own goroutine, and runs the
// handler, and so markAuthenticated, on that same goroutine, so nothing
// here needs a lock.
type guardedConn struct {
	net.Conn
	l      *guardedListener // nil in tests of the conn alone
	f      *Framer
	lim    Limits // the limits after AUTH
	budget *inputBudget

	mu     sync.Mutex // guards held and closed, which Close also touches
	held   int64      // bytes reserved from budget
	closed bool

	small   [smallChunk]byte
	chunk   *[readChunk]byte // borrowed from chunks while in use
	buf     []byte           // small or chunk: bytes read from the client
	r, w    int              // buf[r:w] is what the client sent that redcon has not had
	checked int              // buf[r:r+checked] is accepted by the Framer
	ready   int              // buf[r:r+ready] is to be handed over as it is
	partial bool             // part of the command in progress went to redcon as it was
	conv    []byte           // an inline command re-encoded by Redis's rules, to hand over
	err     error            // the violation (or errInputBudget), once found
	sent    bool             // the violation has been reported to the client
	// subscribed exempts the connection from idle_timeout while it holds
	// a subscription, as Redis exempts pub/sub clients. Set and read on
	// redcon's goroutine for the connection.
	subscribed bool
	// long is the size of the command being handed over, if over
	// readChunk; shrink follows what redcon is handed after it.
	long   int
	shrink shrinkStep
}

// shrinkStep is where a guardedConn is in making redcon drop the buffer a
// long command grew. redcon v1.6.2 keeps that buffer for the life of the
// connection: once its buffer is empty it only reslices it to 4 KiB, and
// it allocates anew only when a command does not fit. So after a long
// command, the guard hands redcon 4 KiB of empty lines ending in a line
// of two spaces left open, which makes it allocate an 8 KiB buffer and
// let the large one go, and then the newline that ends that line. Lines
// without arguments run nothing, in redcon as in Redis.
type shrinkStep uint8

const (
	shrinkNone    shrinkStep = iota
	shrinkFill               // next Read: shrinkFiller, if redcon offers exactly readChunk bytes
	shrinkNewline            // next Read: "\n"
)

// shrinkFiller fills redcon's 4 KiB buffer with empty lines and an open
// line of spaces.
var shrinkFiller = strings.Repeat("\r\n", readChunk/2-1) + "  "

// Read fills p with accepted bytes: one command, the accepted prefix
// before a violation, or, of a command longer than readChunk, the next
// readChunk bytes. After a violation it writes the error to the client
// and returns io.EOF, and redcon closes the connection.
func (c *guardedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	switch c.shrink {
	case shrinkFill:
		c.shrink = shrinkNone
		if len(p) == readChunk { // redcon's emptied buffer, resliced
			c.shrink = shrinkNewline
			return copy(p, shrinkFiller), nil
		}
	case shrinkNewline:
		c.shrink = shrinkNone
		c.uncharge() // redcon's buffer is back to 8 KiB
		p[0] = '\n'
		return 1, nil
	}
	for c.ready == 0 && len(c.conv) == 0 {
		if c.err != nil {
			return 0, c.refuse()
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	if len(c.conv) > 0 {
		n := copy(p, c.conv)
		c.conv = c.conv[n:]
		if len(c.conv) == 0 {
			c.handedOver()
		}
		return n, nil
	}
	n := copy(p, c.buf[c.r:c.r+c.ready])
	c.consume(n)
	c.ready -= n
	if c.ready == 0 && c.checked == 0 {
		c.handedOver()
	}
	return n, nil
}

// handedOver notes that redcon has had the whole command: after a long
// one, it is made to drop the buffer the command grew (shrinkStep).
func (c *guardedConn) handedOver() {
	if c.long > 0 {
		c.long = 0
		c.shrink = shrinkFill
	}
}

// consume drops the first n checked bytes, handed over or re-encoded.
func (c *guardedConn) consume(n int) {
	c.r += n
	c.checked -= n
	if c.r == c.w && c.chunk != nil {
		chunks.Put(c.chunk) // all handed over: back to the small buffer
		c.chunk, c.buf, c.r, c.w = nil, c.small[:], 0, 0
	}
}

// reencode replaces the inline command that ends the checked bytes with
// its arguments split by Redis's rules (resp.SplitInline), as a multibulk
// command: redcon's own inline splitter knows no \xHH escapes, treats
// single quotes as double ones and splits at spaces only. It reports
// false if there is nothing to hand over: a line of blanks only, or a
// violation.
func (c *guardedConn) reencode() bool {
	line := bytes.TrimSuffix(c.buf[c.r:c.r+c.checked], []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	line = line[bytes.LastIndexByte(line, '\n')+1:]
	args, ok := resp.SplitInline(line) // copies: the buffer may go back to chunks
	c.consume(c.checked)
	switch {
	case !ok:
		c.err = &ProtocolError{Msg: "unbalanced quotes in request"}
		return false
	case len(args) > c.f.lim.MaxArgs:
		c.err = &ProtocolError{Msg: "too many arguments in inline request"}
		return false
	case len(args) == 0:
		return false
	}
	c.conv = fmt.Appendf(c.conv[:0], "*%d\r\n", len(args))
	for _, a := range args {
		c.conv = fmt.Appendf(c.conv, "$%d\r\n", len(a))
		c.conv = append(append(c.conv, a...), "\r\n"...)
	}
	return true
}

// chunks holds the large buffers not in use.
var chunks = sync.Pool{New: func() any { return new([readChunk]byte) }}

// Write writes p to the client. redcon flushes its writer after every
// batch of commands, even when a grant already flushed it: an empty write
// would cost a system call for nothing. With an idle timeout, a write
// that stalls that long fails, and redcon closes the connection: a
// client that pipelines without reading its replies fills the socket
// buffers and then never lets a write finish, while its reads keep the
// read deadline fresh.
func (c *guardedConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if c.l != nil {
		if d := c.l.idle.Load(); d > 0 {
			c.Conn.SetWriteDeadline(time.Now().Add(time.Duration(d)))
		}
	}
	return c.Conn.Write(p)
}

// fill checks the buffered bytes, reading more from the client while they
// hold no whole command, until there is something to hand over.
func (c *guardedConn) fill() error {
	if c.buf == nil {
		c.buf = c.small[:]
	}
	for {
		k, done, err := c.f.FeedCommand(c.buf[c.r+c.checked : c.w])
		c.checked += k
		if err != nil {
			c.err = err
			c.ready = c.checked
			return nil
		}
		size := c.f.Pending()
		if done {
			size = c.f.Last()
		}
		if size > readChunk && !c.charge(redconBuffer(size)) {
			c.err = errInputBudget // nothing more of this command goes to redcon
			return nil
		}
		if done {
			if c.f.LastInline() && !c.partial {
				if c.reencode() || c.err != nil {
					if len(c.conv) > readChunk {
						c.long = len(c.conv)
					}
					return nil
				}
				continue // blanks only: nothing to hand over
			}
			c.ready, c.partial = c.checked, false
			if size > readChunk {
				c.long = size
			}
			return nil
		}
		// No whole command so far: drop the finished lines without
		// arguments and empty multibulks before the command in progress.
		if skip := c.checked - c.f.Pending(); skip > 0 {
			c.r += skip
			c.checked -= skip
		}
		if c.r+c.checked < c.w {
			continue // the Framer stopped after an empty multibulk
		}
		if c.w-c.r == len(c.buf) {
			if c.chunk == nil {
				c.chunk = chunks.Get().(*[readChunk]byte)
				c.w = copy(c.chunk[:], c.buf[c.r:c.w])
				c.r, c.buf = 0, c.chunk[:]
				continue
			}
			c.ready, c.partial = c.checked, true // part of a command longer than buf
			return nil
		}
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
		if err := c.wait(); err != nil {
			return err
		}
		n, err := c.Conn.Read(c.buf[c.w:])
		c.w += n
		if err != nil && n == 0 {
			return err
		}
	}
}

// wait prepares a read from the client: it sets the idle deadline, and
// ends the connection once the listener stopped. stop sets a deadline in
// the past after setting stopped, so a read either sees stopped here or
// meets that deadline.
func (c *guardedConn) wait() error {
	if c.l == nil {
		return nil
	}
	switch d := c.l.idle.Load(); {
	case c.subscribed:
		c.Conn.SetReadDeadline(time.Time{})
	case d > 0:
		c.Conn.SetReadDeadline(time.Now().Add(time.Duration(d)))
	}
	if c.l.stopped.Load() {
		return io.EOF
	}
	return nil
}

// charge raises the connection's reservation from the budget to n bytes,
// or reports false if the budget cannot hold it.
func (c *guardedConn) charge(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= c.held {
		return true
	}
	if c.closed || !c.budget.reserve(n-c.held) {
		return false
	}
	c.held = n
	return true
}

// uncharge gives the connection's reservation back to the budget.
func (c *guardedConn) uncharge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget.release(c.held)
	c.held = 0
}

// Close closes the connection and gives its reservation back to the
// budget. redcon calls it once its goroutine for the connection is done,
// and Server.Close calls it from another goroutine.
func (c *guardedConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.budget.release(c.held)
		c.held = 0
	}
	c.mu.Unlock()
	if c.l != nil {
		c.l.forget(c)
	}
	return c.Conn.Close()
}

// refuse writes the protocol error to the client, once, and returns
// io.EOF. Write errors are ignored: the connection closes either way.
func (c *guardedConn) refuse() error {
	if !c.sent {
		c.sent = true
		if c.l != nil && c.l.onViolation != nil {
			c.l.onViolation()
		}
		c.Conn.SetWriteDeadline(time.Now().Add(refuseTimeout))
		io.WriteString(c.Conn, "-ERR "+c.err.Error()+"\r\n")
	}
	return io.EOF
}
