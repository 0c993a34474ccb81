package proxy

import (
	"io"
	"net"
	"sync"
	"time"
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
)

// guardListener wraps ln so that every accepted connection's bytes pass a
// Framer (pre-auth limits until markAuthenticated, for a connection
// accepted while needAuth reports true) before redcon reads them. redcon
// v1.6.2's reader has no limits of its own: one bad length panics its
// connection goroutine and with it the process. A TLS listener goes
// under the guard, which then reads decrypted bytes.
func guardListener(ln net.Listener, lim Limits, needAuth func() bool) net.Listener {
	lim = lim.WithDefaults()
	// Redis's pre-auth limits, unless the configured ones are lower.
	first := Limits{
		MaxArgs:   min(PreAuth.MaxArgs, lim.MaxArgs),
		MaxBulk:   min(PreAuth.MaxBulk, lim.MaxBulk),
		MaxInline: min(PreAuth.MaxInline, lim.MaxInline),
	}
	return &guardedListener{Listener: ln, lim: lim, first: first, needAuth: needAuth}
}

type guardedListener struct {
	net.Listener
	lim, first Limits // after AUTH; before it
	needAuth   func() bool
}

// Accept returns the next connection, guarded. Its errors are ln's
// unchanged, so that redcon still sees net.ErrClosed on shutdown.
func (l *guardedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	first := l.lim
	if l.needAuth() {
		first = l.first
	}
	return &guardedConn{Conn: c, f: NewFramer(first), lim: l.lim}, nil
}

// markAuthenticated lifts c's pre-auth limits from the next command; c is
// the net.Conn redcon's Conn.NetConn() returns. A no-op for other conns.
func markAuthenticated(c net.Conn) {
	if g, ok := c.(*guardedConn); ok {
		g.f.SetLimits(g.lim)
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
	f   *Framer
	lim Limits // the limits after AUTH

	small   [smallChunk]byte
	large   *[readChunk]byte // borrowed from chunks while in use
	buf     []byte           // small or large: bytes read from the client
	r, w    int              // buf[r:w] is what the client sent that redcon has not had
	checked int              // buf[r:r+checked] is accepted by the Framer
	ready   int              // buf[r:r+ready] is to be handed over as it is
	err     error            // the violation, once found
	sent    bool             // the violation has been reported to the client
}

// Read fills p with accepted bytes: one command, the accepted prefix
// before a violation, or, of a command longer than readChunk, the next
// readChunk bytes. After a violation it writes the error to the client
// and returns io.EOF, and redcon closes the connection.
func (c *guardedConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for c.ready == 0 {
		if c.err != nil {
			return 0, c.refuse()
		}
		if err := c.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.r:c.r+c.ready])
	c.r += n
	c.checked -= n
	c.ready -= n
	if c.r == c.w && c.large != nil {
		chunks.Put(c.large) // all handed over: back to the small buffer
		c.large, c.buf, c.r, c.w = nil, c.small[:], 0, 0
	}
	return n, nil
}

// chunks holds the large buffers not in use.
var chunks = sync.Pool{New: func() any { return new([readChunk]byte) }}

// Write writes p to the client. redcon flushes its writer after every
// batch of commands, even when a grant already flushed it: an empty write
// would cost a system call for nothing.
func (c *guardedConn) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
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
		if done {
			c.ready = c.checked
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
			if c.large == nil {
				c.large = chunks.Get().(*[readChunk]byte)
				c.w = copy(c.large[:], c.buf[c.r:c.w])
				c.r, c.buf = 0, c.large[:]
				continue
			}
			c.ready = c.checked // part of a command longer than buf
			return nil
		}
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
		n, err := c.Conn.Read(c.buf[c.w:])
		c.w += n
		if err != nil && n == 0 {
			return err
		}
	}
}

// refuse writes the protocol error to the client, once, and returns
// io.EOF. Write errors are ignored: the connection closes either way.
func (c *guardedConn) refuse() error {
	if !c.sent {
		c.sent = true
		c.Conn.SetWriteDeadline(time.Now().Add(refuseTimeout))
		io.WriteString(c.Conn, "-ERR "+c.err.Error()+"\r\n")
	}
	return io.EOF
}
