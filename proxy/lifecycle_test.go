package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

const releaseScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// slowNode delays every acquire by delay, so a test can act while one is
// in flight.
type slowNode struct {
	quorum.Node
	delay time.Duration
}

func (n slowNode) Acquire(ctx context.Context, l quorum.Lock, ttl time.Duration) (quorum.Acquired, error) {
	select {
	case <-time.After(n.delay):
	case <-ctx.Done():
		return quorum.Acquired{}, ctx.Err()
	}
	return n.Node.Acquire(ctx, l, ttl)
}

// counter is an Observer that counts the server's events.
type counter struct {
	mu                                      sync.Mutex
	connected, closed, rejected, violations int
	refused                                 map[quorum.Op]int
}

func (c *counter) inc(p *int)       { c.mu.Lock(); *p++; c.mu.Unlock() }
func (c *counter) ClientConnected() { c.inc(&c.connected) }
func (c *counter) ClientClosed()    { c.inc(&c.closed) }
func (c *counter) ClientRejected()  { c.inc(&c.rejected) }
func (c *counter) ProtocolError()   { c.inc(&c.violations) }
func (c *counter) Refused(op quorum.Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused == nil {
		c.refused = map[quorum.Op]int{}
	}
	c.refused[op]++
}
func (c *counter) get(p *int) int { c.mu.Lock(); defer c.mu.Unlock(); return *p }

// serveSlow serves a proxy over three miniredis nodes whose acquires
// take delay, and returns the server, its address and what Serve
// returned (once it has).
func serveSlow(t *testing.T, delay time.Duration, cfg Config) (*Server, string, <-chan error) {
	t.Helper()
	nodes := make([]quorum.Node, 3)
	for i := range nodes {
		nodes[i] = slowNode{Node: redisnode.NewRedisNode(miniredis.RunT(t).Addr(), redisnode.NodeOptions{}), delay: delay}
	}
	e := quorum.New(quorum.Config{NodeTimeout: time.Second, MinTTL: 2 * time.Second}, nodes...)
	t.Cleanup(func() { e.Close() })
	cfg.Log = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(cfg, e)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }() // waited for by the test or the cleanup
	t.Cleanup(func() {
		s.Close()
		select {
		case <-done:
		default:
		}
	})
	return s, ln.Addr().String(), done
}

func TestDrainRefusesAcquiresAndServesTheRest(t *testing.T) {
	obs := &counter{}
	s, addr, _ := serveSlow(t, 0, Config{Observer: obs})
	rc := dial(t, addr)
	if got := rc.do(t, "SET", "held", "tok", "NX", "PX", "10000"); got != "+OK\r\n" {
		t.Fatalf("SET before the drain = %q; want +OK", got)
	}
	s.Drain()
	if !s.Draining() {
		t.Fatalf("Draining() = false after Drain")
	}
	if got := rc.do(t, "SET", "new", "tok", "NX", "PX", "10000"); !strings.HasPrefix(got, "-DRAINING ") {
		t.Errorf("SET while draining = %q; want a -DRAINING error", got)
	}
	if got := rc.do(t, "EVAL", "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])", "1", "new", "tok", "10000"); !strings.HasPrefix(got, "-DRAINING ") {
		t.Errorf("acquire script while draining = %q; want a -DRAINING error", got)
	}
	if got := rc.do(t, "GET", "held"); got != "$3\r\ntok\r\n" {
		t.Errorf("GET while draining = %q; want the token", got)
	}
	if got := rc.do(t, "EVAL", releaseScript, "1", "held", "tok"); got != ":1\r\n" {
		t.Errorf("release while draining = %q; want :1", got)
	}
	if got := rc.do(t, "GET", "new"); got != "$-1\r\n" {
		t.Errorf("GET of the key refused while draining = %q; want nil: nothing was taken", got)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.refused[quorum.OpAcquire] != 2 {
		t.Errorf("refused acquires = %d; want 2", obs.refused[quorum.OpAcquire])
	}
}

func TestShutdownRepliesToCommandsInFlight(t *testing.T) {
	s, addr, served := serveSlow(t, 300*time.Millisecond, Config{})
	busy, idle := dial(t, addr), dial(t, addr)
	if got := idle.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if _, err := busy.c.Write([]byte("*6\r\n$3\r\nSET\r\n$4\r\nslow\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the SET is on the nodes
	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(t.Context()) }() // waited for below
	if got := busy.read(t); got != "+OK\r\n" {
		t.Errorf("SET in flight at Shutdown = %q; want +OK", got)
	}
	if !busy.closed() || !idle.closed() {
		t.Errorf("connections still open after Shutdown")
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v after Shutdown", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("dial after Shutdown succeeded; want the listener closed")
	}
}

func TestShutdownGivesUpWhenContextEnds(t *testing.T) {
	s, addr, _ := serveSlow(t, 2*time.Second, Config{})
	busy := dial(t, addr)
	if _, err := busy.c.Write([]byte("*6\r\n$3\r\nSET\r\n$4\r\nslow\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n$5\r\n10000\r\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown with a short deadline = %v; want DeadlineExceeded", err)
	}
}

func TestReloadAppliesLimitsAndRefusesBadSettings(t *testing.T) {
	obs := &counter{}
	s, addr, _ := serveSlow(t, 0, Config{MaxClients: 1, Observer: obs})
	first := dial(t, addr)
	if got := first.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	second := dial(t, addr)
	if got := second.read(t); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("second client at max_clients 1 got %q", got)
	}
	if err := s.Reload(Config{MaxClients: 3, RequirePass: "pw", Observer: obs}); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	third := dial(t, addr)
	if got := third.do(t, "PING"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("PING on a new client after requirepass was set = %q; want NOAUTH", got)
	}
	if got := third.do(t, "SET", "k", "t", "NX", "PX", "10000"); got != "-NOAUTH Authentication required.\r\n" {
		t.Errorf("SET before AUTH = %q; want NOAUTH", got)
	}
	if got := third.do(t, "AUTH", "pw"); got != "+OK\r\n" {
		t.Errorf("AUTH pw = %q", got)
	}
	obs.mu.Lock()
	if got := obs.refused[quorum.OpAcquire]; got != 1 {
		t.Errorf("refused acquires after a SET before AUTH = %d; want 1", got)
	}
	obs.mu.Unlock()
	if err := s.Reload(Config{MaxClients: -1}); err == nil || !strings.Contains(err.Error(), "max_clients (-1)") {
		t.Errorf("Reload(max_clients -1) = %v; want an error naming max_clients", err)
	}
	if got := s.ln.Load().budget.limit.Load(); got != 256<<20 {
		t.Errorf("max_input_total after Reload without it = %d; want the default 256 MiB", got)
	}
	if err := s.Reload(Config{MaxClients: 3, RequirePass: "pw", MaxInputTotal: 64 << 20}); err != nil {
		t.Fatalf("Reload(max_input_total 64 MiB): %v", err)
	}
	if got := s.ln.Load().budget.limit.Load(); got != 64<<20 {
		t.Errorf("max_input_total after Reload = %d; want 64 MiB", got)
	}
	if s.conf().MaxClients != 3 {
		t.Errorf("max_clients after a refused reload = %d; want 3 kept", s.conf().MaxClients)
	}
	if err := s.Reload(Config{DefaultTTL: time.Hour}); err == nil || !strings.Contains(err.Error(), "default_ttl (1h0m0s)") {
		t.Errorf("Reload(default_ttl 1h) = %v; want an error naming default_ttl", err)
	}
	// Protocol errors and client counts reach the observer.
	bad := dial(t, addr)
	bad.c.Write([]byte("*1\r\n$abc\r\n"))
	if got := bad.read(t); !strings.HasPrefix(got, "-ERR Protocol error") {
		t.Errorf("bad bulk length = %q; want a protocol error", got)
	}
	if !bad.closed() {
		t.Errorf("client sending a bad bulk length still open")
	}
	deadline := time.Now().Add(2 * time.Second)
	for obs.get(&obs.violations) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if v, r := obs.get(&obs.violations), obs.get(&obs.rejected); v != 1 || r != 1 {
		t.Errorf("observer saw %d protocol errors, %d rejected clients; want 1, 1", v, r)
	}
}

func TestIdleTimeoutReloadReachesOpenConnections(t *testing.T) {
	s, addr, _ := serveSlow(t, 0, Config{})
	rc := dial(t, addr)
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if err := s.Reload(Config{IdleTimeout: 200 * time.Millisecond}); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	// The connection waits in a read begun before the reload: the next
	// command arms the new deadline.
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Fatalf("PING = %q", got)
	}
	if !rc.closed() {
		t.Errorf("connection still open 2s after idle_timeout 200ms was reloaded")
	}
}
