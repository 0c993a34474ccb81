package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/leakcheck"
	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// nodeTimeout is the per-node deadline of the proxies most tests start,
// and commandTimeout their bound on one command. A healthy node answers
// in a millisecond or two; the deadlines are generous because -race on
// two busy cores can stall any call. The tests that measure a deadline
// set their own.
const (
	nodeTimeout    = time.Second
	commandTimeout = 5 * time.Second
)

// engineConfig is the quorum config most tests use.
func engineConfig() quorum.Config { return quorum.Config{NodeTimeout: nodeTimeout} }

func TestMain(m *testing.M) {
	// go-redis logs every failed dial to a killed node on stderr; the
	// tests assert on what the proxy replies instead.
	redis.SetLogger(quietLogger{})
	// toxiproxy's toxic stubs (the fault harness's in-process proxies)
	// can stay blocked sending a chunk whose reader has gone, after a
	// master behind them died or a toxic was removed under traffic;
	// Proxy.Stop does not end them. So can the link's reader in front of
	// such a stub (stream.ChanWriter, seen once after a whole CI run).
	code := leakcheck.Main(m, "github.com/Shopify/toxiproxy/v2/toxics.", "github.com/Shopify/toxiproxy/v2/stream.")
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// skipLong skips a scenario that takes seconds to minutes (the fault
// suite, the clock jump scenarios) under go test -short; CI runs them.
func skipLong(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long scenario; run without -short")
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// logWriter sends each write to t.Log, so that logs appear only when the
// test fails. Writes after the test has ended are dropped: a server's
// connection goroutines may still log while they wind down.
type logWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

// newLogWriter returns a logWriter for t. Its cleanup is registered first,
// so it runs last, after the servers that write to it have stopped.
func newLogWriter(t testing.TB) *logWriter {
	w := &logWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int { return redistest.FreePort(t) }

// redisProc is one redis-server process.
type redisProc = redistest.Server

// startRedis runs a redis-server with no persistence on a free loopback
// port and kills it when the test ends. extra is passed to redis-server.
func startRedis(t testing.TB, extra ...string) *redisProc {
	t.Helper()
	return redistest.Start(t, extra...)
}

// waitServing waits until addr accepts a connection and answers a PING
// with any reply (a proxy with requirepass answers NOAUTH).
func waitServing(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := redistest.Ping(addr)
		if err == nil || strings.Contains(err.Error(), "replied") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v: %v", addr, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cluster is a set of independent redis-server nodes, with a direct
// client to each for asserting what the nodes hold.
type cluster struct {
	procs  []*redisProc
	direct []*redis.Client
	addrs  []string
	killed map[int]bool
}

// startNodes starts n redis-server nodes.
func startNodes(t testing.TB, n int) *cluster {
	t.Helper()
	c := &cluster{killed: map[int]bool{}}
	for range n {
		p := startRedis(t)
		c.procs = append(c.procs, p)
		c.addrs = append(c.addrs, p.Addr)
		c.direct = append(c.direct, direct(t, p.Addr))
	}
	return c
}

// kill crashes node i.
func (c *cluster) kill(i int) {
	c.procs[i].Kill()
	c.killed[i] = true
}

// value returns what node i holds at key, and whether the key exists.
func (c *cluster) value(t testing.TB, i int, key string) (string, bool) {
	t.Helper()
	v, err := c.direct[i].Get(t.Context(), key).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "", false
	case err != nil:
		t.Fatalf("node %d GET %s: %v", i, key, err)
	}
	return v, true
}

// holding returns the live nodes whose key holds token, in node order.
func (c *cluster) holding(t testing.TB, key, token string) []int {
	t.Helper()
	var idx []int
	for i := range c.direct {
		if c.killed[i] {
			continue
		}
		if v, ok := c.value(t, i, key); ok && v == token {
			idx = append(idx, i)
		}
	}
	return idx
}

// live returns the indices of the nodes not killed.
func (c *cluster) live() []int {
	var idx []int
	for i := range c.procs {
		if !c.killed[i] {
			idx = append(idx, i)
		}
	}
	return idx
}

// wantHeldEverywhere checks that every live node holds key with token and
// a TTL in (0, maxTTL]; a negative maxTTL wants no expiry at all.
func (c *cluster) wantHeldEverywhere(t testing.TB, key, token string, maxTTL time.Duration) {
	t.Helper()
	for _, i := range c.live() {
		v, ok := c.value(t, i, key)
		if !ok || v != token {
			t.Errorf("node %d GET %s = %q (exists %v); want %q", i, key, v, ok, token)
			continue
		}
		pttl, err := c.direct[i].PTTL(t.Context(), key).Result()
		if err != nil {
			t.Fatalf("node %d PTTL %s: %v", i, key, err)
		}
		if maxTTL < 0 && pttl != -1 {
			t.Errorf("node %d PTTL %s = %v; want no expiry", i, key, pttl)
		}
		if maxTTL >= 0 && (pttl <= 0 || pttl > maxTTL) {
			t.Errorf("node %d PTTL %s = %v; want in (0, %v]", i, key, pttl, maxTTL)
		}
	}
}

// wantFreeEverywhere checks that no live node has key at all.
func (c *cluster) wantFreeEverywhere(t testing.TB, key string) {
	t.Helper()
	for _, i := range c.live() {
		if v, ok := c.value(t, i, key); ok {
			t.Errorf("node %d GET %s = %q; want no key", i, key, v)
		}
	}
}

// direct returns a plain go-redis client to addr, for setting up and
// asserting node state behind the proxy's back.
func direct(t testing.TB, addr string) *redis.Client {
	t.Helper()
	return newClient(t, addr, nil)
}

// untagged is a message a subscriber on a master got, as a subscriber
// through a proxy gets it: without the tag a proxy's publish carries
// (internal/pubid).
func untagged(m *redis.Message) string {
	_, p, _ := pubid.Split(m.Payload)
	return p
}

// newClient returns a go-redis client to addr with MaxRetries -1 (a
// retried SET NX would hide what the first attempt got), RESP2 and no
// CLIENT SETINFO, closed when the test ends. opt may change the options.
func newClient(t testing.TB, addr string, opt func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{
		Addr:            addr,
		Protocol:        2,
		DisableIdentity: true,
		MaxRetries:      -1,
		DialTimeout:     2 * time.Second,
		ReadTimeout:     5 * time.Second,
		WriteTimeout:    5 * time.Second,
	}
	if opt != nil {
		opt(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// proxyProc is an in-process proxy serving on a loopback port.
type proxyProc struct {
	Addr   string
	Client *redis.Client
	Server *proxy.Server
}

// startProxy serves a proxy over the nodes at addrs on 127.0.0.1:0, with
// its logs going to t.Log, and stops it when the test ends.
func startProxy(t testing.TB, cfg proxy.Config, qcfg quorum.Config, addrs ...string) *proxyProc {
	t.Helper()
	logs := newLogWriter(t)
	cfg.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p := serveProxy(t, cfg, newEngine(t, qcfg, addrs...))
	p.Client = newClient(t, p.Addr, nil)
	return p
}

// newEngine returns an engine over the real nodes at addrs, closed when
// the test ends (after the proxy serving it, whose cleanup comes later).
func newEngine(t testing.TB, qcfg quorum.Config, addrs ...string) *quorum.Engine {
	t.Helper()
	nodes := make([]quorum.Node, len(addrs))
	for i, a := range addrs {
		nodes[i] = redisnode.NewRedisNode(a, redisnode.NodeOptions{})
	}
	e := quorum.New(qcfg, nodes...)
	t.Cleanup(func() { e.Close() })
	return e
}

// serveProxy serves a proxy over e on 127.0.0.1:0 until the test ends,
// and waits until it answers.
func serveProxy(t testing.TB, cfg proxy.Config, e *quorum.Engine) *proxyProc {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	p := serveProxyOn(t, cfg, e, ln)
	waitServing(t, p.Addr, 5*time.Second)
	return p
}

// serveProxyOn serves a proxy over e on ln until the test ends.
func serveProxyOn(t testing.TB, cfg proxy.Config, e *quorum.Engine, ln net.Listener) *proxyProc {
	t.Helper()
	if cfg.PubSub == nil {
		hub := pubsub.New(pubsub.Config{Nodes: e.Addrs(), RetryInterval: 100 * time.Millisecond, Log: cfg.Log})
		t.Cleanup(func() { hub.Close() }) // after the proxy's, registered below
		cfg.PubSub = hub
	}
	srv, err := proxy.New(cfg, e)
	if err != nil {
		t.Fatalf("proxy.New: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }() // waited for by the cleanup below
	t.Cleanup(func() {
		srv.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("Serve did not return within 5s of Close")
		}
	})
	return &proxyProc{Addr: ln.Addr().String(), Server: srv}
}

// withTwoDown runs f over a proxy on 5 fresh masters twice, as subtests
// named after prefix: with every master up, and with masters 0 and 1
// killed first. down is how many were killed.
func withTwoDown(t *testing.T, prefix string, f func(t *testing.T, c *cluster, p *proxyProc, down int)) {
	for _, down := range []int{0, 2} {
		t.Run(prefix+map[int]string{0: "all up", 2: "2 of 5 down"}[down], func(t *testing.T) {
			c, p := setup(t, 5, proxy.Config{})
			for i := range down {
				c.kill(i)
			}
			f(t, c, p, down)
		})
	}
}

// setup starts n nodes and a proxy over them, with nodeTimeout and, unless
// cfg sets one, commandTimeout.
func setup(t testing.TB, n int, cfg proxy.Config) (*cluster, *proxyProc) {
	t.Helper()
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = commandTimeout
	}
	c := startNodes(t, n)
	return c, startProxy(t, cfg, engineConfig(), c.addrs...)
}

var (
	buildOnce sync.Once
	binDir    string // removed by TestMain
	binPath   string
	buildErr  error
)

// buildProxyBinary builds the redlock-proxy command once per test binary
// and returns its path.
func buildProxyBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("go not on PATH: %w", err)
			return
		}
		binDir, err = os.MkdirTemp("", "redlock-proxy-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(binDir, "redlock-proxy")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", binPath, ".")
		cmd.Dir = ".." // the module root, where package main lives
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// errText is the text of a reply error, or "" for a nil error; a nil
// reply reads "(nil)".
func errText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, redis.Nil):
		return "(nil)"
	}
	return err.Error()
}
