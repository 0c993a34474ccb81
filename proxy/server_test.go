package proxy

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/ratelog"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// testLog sends logs to t.Log, so they show only when a test fails.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// startServer serves a proxy over n in-process miniredis nodes on a free
// loopback port and returns its address and the nodes.
func startServer(t *testing.T, n int, cfg Config) (string, []*miniredis.Miniredis) {
	t.Helper()
	_, addr, minis := serveTest(t, n, cfg)
	return addr, minis
}

// serveTest is startServer, returning the server too.
func serveTest(t *testing.T, n int, cfg Config) (*Server, string, []*miniredis.Miniredis) {
	t.Helper()
	s, minis := newTestServer(t, n, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, ln)
	return s, ln.Addr().String(), minis
}

// testDeadline is the test servers' node_timeout and command_timeout.
const testDeadline = 10 * time.Second

// newTestServer returns a server over n in-process miniredis nodes.
func newTestServer(t *testing.T, n int, cfg Config) (*Server, []*miniredis.Miniredis) {
	t.Helper()
	nodes := make([]quorum.Node, n)
	minis := make([]*miniredis.Miniredis, n)
	for i := range n {
		minis[i] = miniredis.RunT(t)
		nodes[i] = redisnode.NewRedisNode(minis[i].Addr(), redisnode.NodeOptions{})
	}
	// The nodes run in this process, so a busy machine slows them with the
	// test itself (under -race, miniredis runs each script in a fresh Lua
	// interpreter): 200ms deadlines failed commands with NOQUORUM. No test
	// here has a node that never answers (a closed miniredis refuses at
	// once), so these deadlines only bound a hang.
	e := quorum.New(quorum.Config{NodeTimeout: testDeadline}, nodes...)
	t.Cleanup(func() { e.Close() })
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = testDeadline
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	addrs := make([]string, n)
	for i, m := range minis {
		addrs[i] = m.Addr()
	}
	hub := pubsub.New(pubsub.Config{Nodes: addrs, Log: cfg.Log})
	t.Cleanup(func() { hub.Close() }) // after the server's, registered below
	cfg.PubSub = hub
	s, err := New(cfg, e)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s, minis
}

// serveOn serves s on ln until the test ends.
func serveOn(t *testing.T, s *Server, ln net.Listener) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }() // waited for in cleanup
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

// rawConn is a client that sends commands and reads back each reply's
// exact bytes.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReader(c)}
}

// do sends args as one RESP command and returns the raw reply.
func (rc *rawConn) do(t *testing.T, args ...string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		t.Fatalf("write %q: %v", args, err)
	}
	return rc.read(t)
}

// read returns one whole reply's bytes.
func (rc *rawConn) read(t *testing.T) string {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := rc.r.ReadString('\n')
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	switch line[0] {
	case '$', '=': // bulk, RESP3 verbatim
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if n < 0 {
			return line
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rc.r, buf); err != nil {
			t.Fatalf("read bulk: %v", err)
		}
		return line + string(buf)
	case '*', '>', '%': // array, RESP3 push and map
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		if line[0] == '%' {
			n *= 2
		}
		for range n {
			line += rc.read(t)
		}
	}
	return line
}

// closed reports whether the server closed the connection.
func (rc *rawConn) closed() bool {
	rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := rc.r.ReadByte()
	return errors.Is(err, io.EOF)
}

// TestGoldenReplies checks the exact bytes each command sends back
// against testdata/replies.golden; go test ./proxy -update rewrites it.
func TestGoldenReplies(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	session := [][]string{
		{"PING"},
		{"ping", "hello"},
		{"ECHO", "x"},
		{"HELLO"},
		{"HELLO", "3"},
		{"GET", "missing"},
		{"hello", "2", "auth", "default", "pw", "setname", "app"},
		{"HELLO", "2", "SETNAME", "app"},
		{"HELLO", "4"},
		{"HELLO", "+3"},
		{"HELLO", "2", "SETNAME", "a b"},
		{"HELLO", "2", "AUTH", "default"},
		{"CLIENT", "SETNAME", "a b"},
		{"CLIENT", "SETNAME", "app2"},
		{"CLIENT", "GETNAME"},
		{"client", "setinfo", "LIB-NAME", "go-redis(,go1.26)"},
		{"client", "maint_notifications", "on", "moving-endpoint-type", "internal-ip"},
		{"SELECT", "0"},
		{"SELECT", "1"},
		{"SELECT", "16"},
		{"SELECT", "+0"},
		{"AUTH", "pw"},
		{"AUTH", "default", "pw"},
		{"AUTH", "someone", "pw"},
		{"CLIENT", "TRACKING", "on"},
		{"CLIENT", "ID", "x"},
		{"CLUSTER", "SLOTS"},
		{"CLUSTER", "SLOTS", "x"},
		{"CLUSTER", "NOPE"},
		{"READONLY"},
		{"SET", "k", "t1", "PX", "5000", "NX"},
		{"set", "k", "t2", "nx", "ex", "5"},
		{"GET", "k"},
		{"EXISTS", "k", "nope"},
		{"SET", "k", "t"},
		{"SET", "k", "t", "NX"},
		{"SET", "k", "t", "XX", "PX", "100"},
		{"SET", "k", "t", "NX", "PX", "0"},
		{"SET", "k", "t", "NX", "PX", "ten"},
		{"SET", "k", "t", "NX", "PX", "99"},
		{"SET", "k", "t", "NX", "EX", "301"},
		{"SET", "k", "t", "NX", "PX", "+1000"},
		{"SET", "k", "t", "NX", "PX", "01000"},
		{"SET", "k", "t", "NX", "PX", "1000", "EX", "1"},
		{"SET", "k"},
		{"DEL", "k"},
		{"INCR", "k"},
		{"FENCE", "k", "t1"},
		{"FENCE", "k"},
		{"FOO", "bar", "baz"},
		{"EVALSHA", "0123456789012345678901234567890123456789", "1", "k", "t1"},
		{"EVAL", "return redis.call('flushall')", "0"},
		{"SCRIPT", "LOAD", "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend"},
		{"SCRIPT", "EXISTS", "e950836ed1e694540c503ef9972b8de518044d3b", "0123456789012345678901234567890123456789"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "k", "t2"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "k", "t1"},
		{"EVALSHA", "e950836ed1e694540c503ef9972b8de518044d3b", "1", "k", "t1"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "2", "k", "k2", "t1"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "3", "k", "t1"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "x", "k", "t1"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "+1", "k", "t1"},
		{"EVAL", "return 1", "01", "k"},
		{"EVALSHA", "abc", "x"},
		{"SCRIPT", "FLUSH"},
		{"SCRIPT", "FLUSH", "a", "b"},
		{"SCRIPT", "FOO"},
		{"SCRIPT", "LOAD"},
		{"GET", "k"},
		{"PTTL", "k"},
		{"TTL", "k"},
		// Redis 8.4's and Valkey's compare-and-set (cas.go).
		{"SET", "k", "t1", "NX", "PX", "5000"},
		{"DIGEST", "k"},
		{"SET", "k", "t1", "IFEQ", "t1", "PX", "5000"},
		{"set", "k", "t1", "px", "5000", "ifeq", "t1", "get"},
		{"SET", "k", "t9", "IFEQ", "t9", "PX", "5000", "GET"},
		{"SET", "k", "t9", "IFEQ", "t1", "PX", "5000"},
		{"SET", "k", "t1", "IFNE", "t2", "PX", "5000"},
		{"SET", "k", "t1", "IFEQ", "t1", "NX"},
		{"SET", "k", "t1", "IFDEQ", "12", "PX", "5000"},
		{"DELEX", "k", "IFDEQ", "12"},
		{"DELEX", "k", "BOGUS", "t1"},
		{"DELEX", "nokey", "BOGUS", "t1"},
		{"DELEX", "k", "IFEQ"},
		{"DELEX", "k", "IFNE", "t2"},
		{"DELEX", "k"},
		{"DELIFEQ", "k", "t2"},
		{"DELEX", "k", "IFEQ", "t1"},
		{"DIGEST", "k"},
		{"DELIFEQ", "redlock-proxy:members", "t"},
		{"COMMAND", "DOCS", "get", "nosuch"}, {"COMMAND", "INFO", "get", "nosuch"}, {"COMMAND", "GETKEYS", "set", "k", "t"},
		{"CONFIG", "GET", "max*"}, {"CONFIG", "SET", "maxclients", "1"}, {"ROLE"}, {"LATENCY", "LATEST"},
		{"SET"},
		{"SET", "redlock-proxy:members", "t", "NX", "PX", "1000"},
		{"GET", "redlock-proxy:members"},
		{"EXISTS", "k", "redlock-proxy:members"},
		{"EVALSHA", "e950836ed1e694540c503ef9972b8de518044d3b", "1", "redlock-proxy:members", "t"},
		// RESP3 from here on.
		{"HELLO", "3", "SETNAME", "app3"},
		{"GET", "k"},
		{"CLIENT", "GETNAME"},
		{"DIGEST", "k"},
		{"SCRIPT", "EXISTS", "e950836ed1e694540c503ef9972b8de518044d3b"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "k", "t1"},
		{"QUIT"},
	}
	var got strings.Builder
	for _, cmd := range session {
		fmt.Fprintf(&got, "> %q\n< %q\n", cmd, rc.do(t, cmd...))
	}
	if !rc.closed() {
		t.Errorf("connection still open after QUIT")
	}
	golden := filepath.Join("testdata", "replies.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run go test ./proxy -update to create it): %v", err)
	}
	if got.String() != string(want) {
		t.Errorf("replies differ from %s (go test ./proxy -update rewrites it):\n%s", golden, diff(string(want), got.String()))
	}
}

// diff lists the lines that differ, side by side.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  want %s\n  got  %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// TestDeniedIsNotAnOutage checks that the reply tells "taken" from
// "unreachable" for every lock command.
func TestDeniedIsNotAnOutage(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	if got := rc.do(t, "SET", "k", "a", "NX", "PX", "5000"); got != "+OK\r\n" {
		t.Fatalf("SET = %q; want +OK", got)
	}
	if got := rc.do(t, "SET", "k", "b", "NX", "PX", "5000"); got != "$-1\r\n" {
		t.Errorf("SET on a held key = %q; want nil", got)
	}
	minis[0].Close()
	minis[1].Close()
	for _, cmd := range [][]string{
		{"SET", "k2", "b", "NX", "PX", "5000"},
		{"GET", "k"},
		{"PTTL", "k"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "k", "a"},
	} {
		if got := rc.do(t, cmd...); !strings.HasPrefix(got, "-NOQUORUM ") || !strings.HasSuffix(got, ", 2 failed of 3 nodes; 2 needed\r\n") {
			t.Errorf("%q with 2 of 3 nodes down = %q; want a NOQUORUM error counting 2 failed of 3, 2 needed", cmd, got)
		}
	}
}

// TestRequirePass checks AUTH, NOAUTH and the constant-time password.
func TestRequirePass(t *testing.T) {
	addr, _ := startServer(t, 1, Config{RequirePass: "s3cret"})
	rc := dial(t, addr)
	steps := []struct{ cmd, want string }{
		{"PING", "-NOAUTH Authentication required.\r\n"},
		{"SET k t NX PX 1000", "-NOAUTH Authentication required.\r\n"},
		{"GET", "-ERR wrong number of arguments for 'get' command\r\n"}, // arity before NOAUTH, as Redis
		// As redis-server 7.0: HELLO's options act in order, so a name set
		// before a failed AUTH or a missing one stays.
		{"HELLO 2 SETNAME early AUTH default wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"HELLO 3 SETNAME later", "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n"},
		{"AUTH wrong", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH bob s3cret", "-WRONGPASS invalid username-password pair or user is disabled.\r\n"},
		{"AUTH default s3cret", "+OK\r\n"},
		{"PING", "+PONG\r\n"},
		{"CLIENT GETNAME", "$5\r\nlater\r\n"},
		{"GET nokey", "$-1\r\n"}, // still RESP2: the refused HELLO 3 switched nothing
	}
	for _, st := range steps {
		if got := rc.do(t, strings.Fields(st.cmd)...); got != st.want {
			t.Errorf("%s = %q; want %q", st.cmd, got, st.want)
		}
	}
	rc2 := dial(t, addr)
	if got := rc2.do(t, "HELLO", "2", "AUTH", "default", "s3cret"); !strings.HasPrefix(got, "*16\r\n") {
		t.Errorf("HELLO 2 AUTH default s3cret = %q; want the 16-element map", got)
	}
	if got := rc2.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING after HELLO AUTH = %q; want +PONG", got)
	}
}

// TestMaxClients checks that a client over max_clients is told why.
func TestMaxClients(t *testing.T) {
	addr, _ := startServer(t, 1, Config{MaxClients: 1})
	rc := dial(t, addr)
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	rc2 := dial(t, addr)
	if got := rc2.read(t); got != "-ERR max number of clients reached\r\n" {
		t.Errorf("second client got %q; want max clients error", got)
	}
	if !rc2.closed() {
		t.Errorf("second client still open")
	}
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("first client PING after refusal = %q", got)
	}
}

// A loop of clients refused at max_clients writes one warning a second
// with a count, not one per client (7,500 lines/s from one loop before).
func TestMaxClientsRefusalsLogOncePerSecond(t *testing.T) {
	out := &ratelog.Lines{}
	addr, _ := startServer(t, 1, Config{MaxClients: 1, Log: slog.New(slog.NewTextHandler(out, nil))})
	rc := dial(t, addr)
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	start := time.Now()
	refusals := 0
	for time.Since(start) < 2500*time.Millisecond && refusals < 20000 {
		c := dial(t, addr)
		if got := c.read(t); got != "-ERR max number of clients reached\r\n" {
			t.Fatalf("client %d got %q; want the max_clients refusal", refusals, got)
		}
		c.c.Close()
		refusals++
	}
	elapsed := time.Since(start)
	deadline := time.Now().Add(3 * time.Second) // the last count is written when its second ends
	for countLines(t, refusedLines(out)) < refusals && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	lines := refusedLines(out)
	t.Logf("%d refusals in %v: %d log lines", refusals, elapsed.Round(time.Millisecond), len(lines))
	if max := int(elapsed/warnEvery) + 2; len(lines) > max {
		t.Errorf("%d refusals in %v wrote %d lines; want at most %d (one a second)", refusals, elapsed, len(lines), max)
	}
	if got := countLines(t, lines); got != refusals {
		t.Errorf("the lines count %d refusals; want %d", got, refusals)
	}
}

// refusedLines are the "client refused" lines in out.
func refusedLines(out *ratelog.Lines) []string {
	var lines []string
	for _, l := range out.Lines() {
		if strings.Contains(l, `msg="client refused"`) {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestHandlerPanicClosesOnlyThatClient: a panicking handler is answered
// with ERR internal error and closes its own connection; the server and
// its other clients carry on.
func TestHandlerPanicClosesOnlyThatClient(t *testing.T) {
	commands["testpanic"] = command{arity: 1, handler: func(*Server, *request) (resp.Reply, error) { panic("boom") }}
	t.Cleanup(func() { delete(commands, "testpanic") })
	addr, _ := startServer(t, 1, Config{})
	other := dial(t, addr)
	if got := other.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	rc := dial(t, addr)
	if got := rc.do(t, "TESTPANIC"); got != "-ERR internal error\r\n" {
		t.Errorf("TESTPANIC = %q; want -ERR internal error", got)
	}
	if !rc.closed() {
		t.Errorf("panicking client still open")
	}
	if got := other.do(t, "SET", "k", "t", "NX", "PX", "1000"); got != "+OK\r\n" {
		t.Errorf("other client's SET after the panic = %q; want +OK", got)
	}
	if got := dial(t, addr).do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("new client's PING after the panic = %q; want +PONG", got)
	}
}

// countLines is ratelog.Count, failing the test on a malformed line.
func countLines(t *testing.T, lines []string) int {
	t.Helper()
	n, err := ratelog.Count(lines)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
