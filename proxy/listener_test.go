package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tidwall/redcon"
)

// guardedServer is a redcon server behind guardListener on a free
// loopback port. Its handler replies +OK to anything, lifts the pre-auth
// limits on AUTH and closes the connection on QUIT.
type guardedServer struct {
	addr   string
	ln     *guardedListener
	closed chan struct{} // one value per closed connection

	mu  sync.Mutex
	ran []string // the commands run, by name
}

func serveGuarded(t *testing.T, lim Limits, needAuth bool) *guardedServer {
	t.Helper()
	return serveGuardedOpts(t, guardOptions{lim: lim, needAuth: func() bool { return needAuth }})
}

func serveGuardedOpts(t *testing.T, o guardOptions) *guardedServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	s := &guardedServer{addr: ln.Addr().String(), closed: make(chan struct{}, 100)}
	handler := func(conn redcon.Conn, cmd redcon.Command) {
		name := strings.ToUpper(string(cmd.Args[0]))
		s.mu.Lock()
		s.ran = append(s.ran, name)
		s.mu.Unlock()
		conn.WriteString("OK")
		switch name {
		case "AUTH":
			markAuthenticated(conn.NetConn())
		case "QUIT":
			conn.Close()
		}
	}
	closed := func(redcon.Conn, error) { s.closed <- struct{}{} }
	gl := guardListener(ln, o)
	s.ln = gl
	srv := redcon.NewServer("", handler, nil, closed)
	done := make(chan struct{})
	go func() { // waited for by the cleanup below
		defer close(done)
		srv.Serve(gl)
	}()
	t.Cleanup(func() {
		gl.Close()
		<-done
	})
	return s
}

func (s *guardedServer) commands() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ran...)
}

func dialGuarded(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// exchange sends in and reads exactly len(want) bytes of replies.
func exchange(t *testing.T, c net.Conn, in, want string) {
	t.Helper()
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatalf("write %.40q: %v", in, err)
	}
	got := make([]byte, len(want))
	if n, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read after %.40q = %q, %v; want %q", in, got[:n], err, want)
	}
	if string(got) != want {
		t.Fatalf("reply to %.40q = %q; want %q", in, got, want)
	}
}

// refused sends in and expects want and then the server closing c.
func refused(t *testing.T, c net.Conn, in, want string) {
	t.Helper()
	if _, err := io.WriteString(c, in); err != nil {
		t.Fatalf("write %.40q: %v", in, err)
	}
	got, err := io.ReadAll(c)
	if err != nil || string(got) != want {
		t.Fatalf("replies to %.40q until close = %q, %v; want %q, nil", in, got, err, want)
	}
}

func elevenArgs() string { return mbulk("SET", "k", "t", "a", "b", "c", "d", "e", "f", "g", "h") }

func TestListenerRefusesBadFrames(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bulk length overflows", "*1\r\n$9223372036854775807\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
		{"huge count", "*100000000\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"count of zeros", "*00\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
		{"no dollar", "*1\r\n+PING\r\n", "-ERR Protocol error: expected '$', got '+'\r\n"},
		{"unbalanced quotes", "GET \"k\r\n", "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"inline ping first", "PING\r\n*1\r\n$-1\r\n", "+OK\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"pipelined pings first", mbulk("PING") + mbulk("PING") + "*1\r\n$9223372036854775807\r\n", "+OK\r\n+OK\r\n-ERR Protocol error: invalid bulk length\r\n"},
		{"ping first, unbalanced quotes", "PING\r\nGET 'k\r\n", "+OK\r\n-ERR Protocol error: unbalanced quotes in request\r\n"},
	}
	srv := serveGuarded(t, Limits{}, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, dialGuarded(t, srv.addr), tt.in, tt.want)
			// The server lives on for other clients.
			exchange(t, dialGuarded(t, srv.addr), "PING\r\n", "+OK\r\n")
		})
	}
}

func TestListenerPreAuthLimits(t *testing.T) {
	const refusal = "-ERR Protocol error: invalid multibulk length\r\n"
	t.Run("11 args before AUTH", func(t *testing.T) {
		srv := serveGuarded(t, Limits{}, true)
		refused(t, dialGuarded(t, srv.addr), elevenArgs(), refusal)
	})
	t.Run("16KiB+1 bulk before AUTH", func(t *testing.T) {
		srv := serveGuarded(t, Limits{}, true)
		refused(t, dialGuarded(t, srv.addr), "*2\r\n$4\r\nAUTH\r\n$16385\r\n", "-ERR Protocol error: invalid bulk length\r\n")
	})
	t.Run("11 args after AUTH", func(t *testing.T) {
		srv := serveGuarded(t, Limits{}, true)
		c := dialGuarded(t, srv.addr)
		exchange(t, c, mbulk("AUTH", "pw"), "+OK\r\n")
		exchange(t, c, elevenArgs(), "+OK\r\n")
		exchange(t, c, mbulk("SET", "k", strings.Repeat("t", 20000)), "+OK\r\n")
	})
	t.Run("11 args pipelined behind AUTH", func(t *testing.T) {
		srv := serveGuarded(t, Limits{}, true)
		exchange(t, dialGuarded(t, srv.addr), mbulk("AUTH", "pw")+elevenArgs(), "+OK\r\n+OK\r\n")
	})
	t.Run("11 args without a password", func(t *testing.T) {
		srv := serveGuarded(t, Limits{}, false)
		exchange(t, dialGuarded(t, srv.addr), elevenArgs(), "+OK\r\n")
	})
	t.Run("configured limits below pre-auth", func(t *testing.T) {
		srv := serveGuarded(t, Limits{MaxArgs: 3}, true)
		c := dialGuarded(t, srv.addr)
		exchange(t, c, mbulk("AUTH", "pw"), "+OK\r\n")
		refused(t, c, mbulk("GET", "a", "b", "c"), refusal)
	})
}

func TestListenerLargeBulk(t *testing.T) {
	srv := serveGuarded(t, Limits{}, false)
	c := dialGuarded(t, srv.addr)
	exchange(t, c, mbulk("SET", "k", strings.Repeat("v", 512<<10))+mbulk("PING"), "+OK\r\n+OK\r\n")
	// Only the header: closing on unread payload would reset the connection.
	refused(t, c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$524289\r\n", "-ERR Protocol error: invalid bulk length\r\n")
}

// A command over max_command is refused before its payload is read; the
// connection closes, and others keep working.
func TestListenerRefusesTooBigCommand(t *testing.T) {
	srv := serveGuarded(t, Limits{MaxCommand: 64 << 10}, false)
	other := dialGuarded(t, srv.addr)
	exchange(t, other, mbulk("PING"), "+OK\r\n")
	c := dialGuarded(t, srv.addr)
	exchange(t, c, mbulk("SET", "k", strings.Repeat("v", 60<<10)), "+OK\r\n")
	// Only the headers: closing on unread payload would reset the connection.
	refused(t, c, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$65536\r\n", "-ERR Protocol error: too big command\r\n")
	exchange(t, other, mbulk("PING"), "+OK\r\n")
}

// The read buffers of all connections share one budget: a command that
// would pass it is refused, the others keep working, and a long command
// gives its share back once it has run (redcon's buffer shrinks), as a
// closed connection does.
func TestListenerInputBudget(t *testing.T) {
	srv := serveGuardedOpts(t, guardOptions{maxInput: 64 << 10})
	budget := srv.ln.budget
	waitUsed := func(what string, ok func(int64) bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for !ok(budget.used.Load()) {
			if time.Now().After(deadline) {
				t.Fatalf("budget used 5s after %s = %d", what, budget.used.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// a sends half of a 20 KiB command: 16 KiB held while it is in flight.
	a := dialGuarded(t, srv.addr)
	setA := mbulk("SET", "k", strings.Repeat("v", 20<<10))
	io.WriteString(a, setA[:10<<10])
	waitUsed("half a 20 KiB command", func(n int64) bool { return n == 16<<10 })
	b := dialGuarded(t, srv.addr)
	exchange(t, b, mbulk("PING"), "+OK\r\n") // small commands take nothing
	// b's 40 KiB command would need 64 KiB more. Refused inside the
	// payload: the unread rest may reset the connection once the reply is out.
	io.WriteString(b, mbulk("SET", "k", strings.Repeat("v", 40<<10)))
	got, err := io.ReadAll(b)
	if want := "-ERR max_input_total reached: too much input buffered for all clients\r\n"; string(got) != want || err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("replies to a 40 KiB SET over budget until close = %q, %v; want %q", got, err, want)
	}
	exchange(t, a, setA[10<<10:], "+OK\r\n")
	waitUsed("a's command ran", func(n int64) bool { return n == 0 })
	c := dialGuarded(t, srv.addr)
	exchange(t, c, mbulk("SET", "k", strings.Repeat("v", 40<<10)), "+OK\r\n") // 64 KiB: all of it
	io.WriteString(c, mbulk("SET", "k", strings.Repeat("v", 40<<10))[:30<<10])
	waitUsed("most of a 40 KiB command", func(n int64) bool { return n == 64<<10 })
	c.Close()
	waitUsed("its client closed", func(n int64) bool { return n == 0 })
	exchange(t, a, mbulk("PING"), "+OK\r\n")
}

// redcon runs a whole batch even after the handler closed the connection;
// handing it one command per Read means nothing runs after QUIT.
func TestListenerNothingRunsAfterQuit(t *testing.T) {
	srv := serveGuarded(t, Limits{}, false)
	refused(t, dialGuarded(t, srv.addr), "PING\r\nQUIT\r\n"+mbulk("SET", "k", "t"), "+OK\r\n+OK\r\n")
	select {
	case <-srv.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not close the connection")
	}
	if got := srv.commands(); fmt.Sprint(got) != "[PING QUIT]" {
		t.Errorf("commands run = %v; want [PING QUIT]", got)
	}
}

// scriptConn is a net.Conn whose Reads return the given chunks, each
// split to fit p, and then io.EOF. It records what is written to it.
type scriptConn struct {
	net.Conn // nil; only Read, Write and SetWriteDeadline are used
	chunks   []string
	wrote    bytes.Buffer
}

func (c *scriptConn) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

func (c *scriptConn) Write(p []byte) (int, error)      { return c.wrote.Write(p) }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

func newGuarded(c net.Conn, first, lim Limits) *guardedConn {
	return &guardedConn{Conn: c, f: NewFramer(first), lim: lim, budget: &inputBudget{}}
}

// readAllGuarded Reads g until io.EOF, or 100 Reads, calling
// markAuthenticated after Read number authAfter (0: never).
func readAllGuarded(t *testing.T, g *guardedConn, authAfter int) []string {
	t.Helper()
	p := make([]byte, 64<<10)
	var reads []string
	for i := 1; i <= 100; i++ {
		n, err := g.Read(p)
		if n > 0 {
			reads = append(reads, string(p[:n]))
		}
		if i == authAfter {
			markAuthenticated(g)
		}
		if err == io.EOF {
			return reads
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
	}
	t.Fatalf("no io.EOF after 100 Reads; read %q", reads)
	return nil
}

func TestGuardedConnRead(t *testing.T) {
	big := mbulk("SET", "k", strings.Repeat("v", 5000))
	full := "*1\r\n$4085\r\n" + strings.Repeat("v", 4085) // fills the buffer
	auth := mbulk("AUTH", "pw")
	ping := mbulk("PING") // inline commands are handed over re-encoded
	tests := []struct {
		name      string
		preAuth   bool
		authAfter int      // markAuthenticated after this Read; 0: never
		chunks    []string // what the client's socket yields, Read by Read
		reads     []string // what redcon reads, Read by Read, before io.EOF
		wrote     string   // what is written back to the client
	}{
		{"one command per Read", false, 0, []string{"PING\r\n" + mbulk("GET", "k") + "PING\r\n"}, []string{ping, mbulk("GET", "k"), ping}, ""},
		{"incomplete command waits", false, 0, []string{"PING\r\nPI", "NG\r\n"}, []string{ping, ping}, ""},
		{"read until a command ends", false, 0, []string{"*1\r\n", "$4\r\nPI", "NG\r\nPI", "NG\r\n"}, []string{"*1\r\n$4\r\nPING\r\n", ping}, ""},
		{"inline by Redis's rules", false, 0, []string{"ECHO \"\\x41\\n\" 'a\\nb' c\td\r\n"}, []string{mbulk("ECHO", "A\n", "a\\nb", "c", "d")}, ""},
		{"inline of blanks only is dropped", false, 0, []string{"\t\r\nPING\r\n"}, []string{ping}, ""},
		// A NUL ends Redis's line, and so leaves the quote open.
		{"inline unbalanced by Redis's rules", false, 0, []string{"PING\r\nECHO \"a\x00b\"\r\n"}, []string{ping}, "-ERR Protocol error: unbalanced quotes in request\r\n"},
		{"big command in chunks", false, 0, []string{big}, []string{big[:4096], big[4096:]}, ""},
		{"incomplete command at EOF", false, 0, []string{"PING\r\nPI"}, []string{ping}, ""},
		{"lines without arguments go with the next command", false, 0, []string{"\r\n \r\nPING\r\n"}, []string{ping}, ""},
		{"lines without arguments alone are dropped", false, 0, []string{strings.Repeat("\r\n", 5000), "\n\n", "PING\r\n"}, []string{ping}, ""},
		{"valid prefix first", false, 0, []string{"PING\r\n*00\r\n"}, []string{ping, "*0"}, "-ERR Protocol error: invalid multibulk length\r\n"},
		{"empty multibulks are dropped", false, 0, []string{"*0\r\nPING\r\n*-1\r\n*0\r\n" + mbulk("GET", "k") + "*0", "\r\n"}, []string{ping, mbulk("GET", "k")}, ""},
		{"waiting prefix before a violation", false, 0, []string{"PING\r\n*1\r\n$", "-1\r\n"}, []string{ping, "*1\r\n$"}, "-ERR Protocol error: invalid bulk length\r\n"},
		{"bulk length overflows", false, 0, []string{"*1\r\n$9223372036854775807\r\n"}, []string{"*1\r\n$92233"}, "-ERR Protocol error: invalid bulk length\r\n"},
		{"violation first in a Read", false, 0, []string{full, "xx"}, []string{full}, "-ERR Protocol error: invalid bulk length\r\n"},
		{"pre-auth 11 args", true, 0, []string{auth + elevenArgs()}, []string{auth, "*1"}, "-ERR Protocol error: invalid multibulk length\r\n"},
		{"AUTH lifts the limits for what follows", true, 1, []string{auth + elevenArgs()}, []string{auth, elevenArgs()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := &scriptConn{chunks: append([]string(nil), tt.chunks...)}
			first := Limits{}.WithDefaults()
			if tt.preAuth {
				first = PreAuth
			}
			g := newGuarded(sc, first, Limits{}.WithDefaults())
			reads := readAllGuarded(t, g, tt.authAfter)
			if fmt.Sprintf("%q", reads) != fmt.Sprintf("%q", tt.reads) {
				t.Errorf("Reads = %.200q; want %.200q", reads, tt.reads)
			}
			if got := sc.wrote.String(); got != tt.wrote {
				t.Errorf("written = %q; want %q", got, tt.wrote)
			}
			if n, err := g.Read(make([]byte, 10)); n != 0 || err != io.EOF {
				t.Errorf("Read after the end = %d, %v; want 0, EOF", n, err)
			}
			if got := sc.wrote.String(); got != tt.wrote {
				t.Errorf("written after another Read = %q; want %q", got, tt.wrote)
			}
		})
	}
}

func TestGuardedConnReadDoesNotAllocate(t *testing.T) {
	sc := &scriptConn{}
	g := newGuarded(sc, Limits{}, Limits{})
	p := make([]byte, 4096)
	// Multibulk, as clients send: an inline command is re-encoded, which
	// allocates.
	first := mbulk("PING") + mbulk("GET", "k") + "*2\r\n$3\r\nGET" // ends inside a command
	chunks := make([]string, 2)
	read := func() {
		chunks[0], chunks[1] = first, "\r\n$1\r\nk\r\n"
		sc.chunks = chunks
		for range 3 {
			if _, err := g.Read(p); err != nil {
				t.Fatalf("Read: %v", err)
			}
		}
	}
	read() // the first Read allocates the buffer the conn keeps
	if got := testing.AllocsPerRun(100, read); got != 0 {
		t.Errorf("allocations per 3 Reads = %v; want 0", got)
	}
}

// maxReadConn records the largest buffer its reader offers.
type maxReadConn struct {
	net.Conn
	max int
}

func (c *maxReadConn) Read(p []byte) (int, error) {
	c.max = max(c.max, len(p))
	return c.Conn.Read(p)
}

// A client that keeps its pipeline full, so that every socket read fills
// the buffer it is given and ends inside a command, must not make redcon's
// reader grow its buffer: the buffer's free space is what redcon offers
// each Read.
func TestGuardedConnKeepsRedconBufferSmall(t *testing.T) {
	// 999-byte commands: reads of 4096 bytes do not end on one before 4MB.
	const n = 3000
	stream := strings.Repeat(mbulk("ECHO", strings.Repeat("x", 977)), n)
	rec := &maxReadConn{Conn: newGuarded(&scriptConn{chunks: []string{stream}}, Limits{}, Limits{})}
	rd := redcon.NewReader(rec)
	cmds := 0
	for {
		cs, err := rd.ReadCommands()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("ReadCommands: %v", err)
		}
		cmds += len(cs)
	}
	if cmds != n || rec.max > 64<<10 {
		t.Errorf("redcon read %d commands, offering at most %d bytes; want %d, at most %d", cmds, rec.max, n, 64<<10)
	}
}

// An idle client holds only the small buffer: a command longer than it
// borrows a large one, given back once all its bytes are handed over.
func TestGuardedConnGivesBackLargeBuffer(t *testing.T) {
	long := mbulk("SET", "k", strings.Repeat("v", 2000))
	sc := &scriptConn{chunks: []string{long[:1000], long[1000:] + mbulk("PING")}}
	g := newGuarded(sc, Limits{}, Limits{})
	p := make([]byte, 8192)
	n, err := g.Read(p)
	if err != nil || string(p[:n]) != long {
		t.Fatalf("first Read = %.40q, %v; want the long SET", p[:n], err)
	}
	if g.chunk == nil {
		t.Errorf("no large buffer while a PING waits behind the long SET")
	}
	if n, err := g.Read(p); err != nil || string(p[:n]) != mbulk("PING") {
		t.Fatalf("second Read = %q, %v; want PING", p[:n], err)
	}
	if g.chunk != nil || len(g.buf) != smallChunk {
		t.Errorf("large buffer still held with nothing pending (buf %d bytes)", len(g.buf))
	}
	if size := unsafe.Sizeof(guardedConn{}); size > smallChunk+256 {
		t.Errorf("an idle guardedConn is %d bytes; want under %d", size, smallChunk+256)
	}
}

// writeCounter counts the writes that reach the socket.
type writeCounter struct {
	net.Conn
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) { c.writes++; return len(p), nil }

// redcon flushes after every batch, also when a grant flushed already; an
// empty flush must not cost a write.
func TestGuardedConnSkipsEmptyWrites(t *testing.T) {
	wc := &writeCounter{}
	g := newGuarded(wc, Limits{}, Limits{})
	wr := redcon.NewWriter(g)
	wr.WriteString("OK")
	for range 3 {
		if err := wr.Flush(); err != nil {
			t.Fatalf("Flush: %v", err)
		}
	}
	if wc.writes != 1 {
		t.Errorf("a reply and two empty flushes made %d writes; want 1", wc.writes)
	}
}

func TestListenerIgnoresEmptyMultibulk(t *testing.T) {
	srv := serveGuarded(t, Limits{}, false)
	c := dialGuarded(t, srv.addr)
	exchange(t, c, "*0\r\n*-1\r\nPING\r\n", "+OK\r\n")
	exchange(t, c, "*0\r\n", "")
	exchange(t, c, "PING\r\n", "+OK\r\n")
}

// failingListener fails every Accept with EMFILE, as a listener does
// while the process is out of file descriptors.
type failingListener struct {
	net.Listener // nil; only Accept and Close are used
	calls        atomic.Int64
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.calls.Add(1)
	return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
}

func (l *failingListener) Close() error { return nil }

// Out of descriptors, Accept waits between tries, 5ms doubling to 1s as
// net/http does, instead of letting redcon call it again at once: one
// core spun at 100% before.
func TestListenerBacksOffOnAcceptErrors(t *testing.T) {
	fl := &failingListener{}
	var mu sync.Mutex
	var waits []time.Duration
	gl := guardListener(fl, guardOptions{onAcceptError: func(err error, wait time.Duration) {
		if !errors.Is(err, syscall.EMFILE) {
			t.Errorf("onAcceptError(%v); want EMFILE", err)
		}
		mu.Lock()
		waits = append(waits, wait)
		mu.Unlock()
	}})
	done := make(chan error, 1)
	go func() { // waited for below
		_, err := gl.Accept()
		done <- err
	}()
	time.Sleep(400 * time.Millisecond)
	gl.abandon() // what Close does
	select {
	case err := <-done:
		if !errors.Is(err, syscall.EMFILE) {
			t.Errorf("Accept after abandon = %v; want the accept error", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Accept still waiting 2s after abandon")
	}
	mu.Lock()
	defer mu.Unlock()
	// 5+10+20+40+80+160 = 315ms: about 7 tries in 400ms.
	if n := fl.calls.Load(); n < 3 || n > 10 {
		t.Errorf("%d accepts in 400ms of EMFILE; want about 7 (5ms doubling)", n)
	}
	for i, w := range waits {
		if want := min(acceptMinWait<<i, acceptMaxWait); w != want {
			t.Errorf("wait %d = %v; want %v", i, w, want)
		}
	}
}

// redcon keeps the buffer a long command grew for the life of the
// connection; the guard makes it drop that buffer once the command has
// run, and the commands after it still arrive whole.
func TestGuardedConnShrinksRedconBufferAfterLongCommand(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	long := mbulk("SET", "k", strings.Repeat("v", 500<<10))
	longInline := "ECHO " + strings.Repeat("i", 20<<10) + "\r\n" // re-encoded as multibulk, then shrunk too
	g := newGuarded(&scriptConn{chunks: []string{long + mbulk("PING") + longInline + "PING\r\n" + mbulk("ECHO", "x")}}, Limits{}, Limits{})
	rd := redcon.NewReader(g)
	before := heap()
	var names []string
	var held int64
	for len(names) < 5 {
		cs, err := rd.ReadCommands()
		if err != nil {
			t.Fatalf("ReadCommands after %v: %v", names, err)
		}
		for _, c := range cs {
			names = append(names, string(c.Args[0]))
		}
		if len(names) == 2 {
			// After SET and a PING, redcon's reader holds what it keeps
			// between commands. A later long command would make it drop
			// the large buffer by itself; small ones never do.
			held = int64(heap()) - int64(before)
			t.Logf("redcon's reader holds %d KiB after a 500 KiB command", held>>10)
		}
	}
	runtime.KeepAlive(rd)
	if want := []string{"SET", "PING", "ECHO", "PING", "ECHO"}; !slices.Equal(names, want) {
		t.Errorf("commands = %v; want %v", names, want)
	}
	if held > 256<<10 {
		t.Errorf("redcon's reader holds %d KiB after a 500 KiB command; want its buffer back to a few KiB", held>>10)
	}
}
