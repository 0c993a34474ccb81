// Package app is the redlock-proxy process: it reads config.toml, builds
// the nodes, the engine, the server, pub/sub and the admin endpoints from
// it, and runs them: reloading on SIGHUP, draining on SIGTERM or SIGINT.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/admin"
	"github.com/redlock-proxy/redlock-proxy/internal/buildinfo"
	"github.com/redlock-proxy/redlock-proxy/internal/metrics"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// Options are what the command line says; the rest is in the config file.
type Options struct {
	// ConfigPath is the config file's path, read at start and on each
	// reload.
	ConfigPath string
	// ConfigGiven says the path was given: then a missing file is an
	// error. Otherwise DefaultConfig stands in for it.
	ConfigGiven bool
	// DefaultConfig is the text used when the file is missing: the
	// shipped config.toml.
	DefaultConfig string
	// Listen and Nodes, if not nil, override listen and nodes (-listen,
	// and -nodes as a comma-separated list).
	Listen, Nodes *string
	// Log receives the logs; nil means os.Stderr.
	Log io.Writer
}

// App is one running proxy: its nodes, engine, server and listeners.
type App struct {
	o       Options
	log     *slog.Logger
	level   *slog.LevelVar
	running fileConfig   // as the process started; static keys stay so
	pc      proxy.Config // the server's config, as New or the last Reload set it (mu)
	reserve int          // file descriptors kept from clients (fdReserve)

	demo   *embedded // nil with real nodes
	engine *quorum.Engine
	hub    *pubsub.Hub
	srv    *proxy.Server
	ln     net.Listener
	certs  *tlsfiles.Server // nil without tls_listen
	admin  *http.Server     // nil without admin_listen
	served chan struct{}    // closed when admin's Serve returns

	mu    sync.Mutex // serializes Reload; guards pc and grace
	grace time.Duration
}

// New reads the config and builds the proxy: the embedded demo nodes when
// no nodes are set, the engine (checking real masters before the first
// client), pub/sub, the server, its listeners and the admin endpoints,
// which serve at once. Run serves clients; Close undoes New.
func New(o Options) (_ *App, err error) {
	a := &App{o: o, level: new(slog.LevelVar)}
	fc, err := a.load()
	if err != nil {
		return nil, err
	}
	a.running, a.grace = fc, fc.ShutdownGrace.Duration
	out := o.Log
	if out == nil {
		out = os.Stderr
	}
	a.level.Set(slog.Level(fc.LogLevel))
	a.log = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: a.level}))
	redisnode.SetDriverLog(a.log)
	defer func() {
		if err != nil {
			a.Close()
		}
	}()

	addrs := fc.Nodes
	if len(addrs) == 0 {
		if a.demo, err = startEmbedded(fc.EmbeddedNodes); err != nil {
			return nil, err
		}
		addrs = a.demo.Addrs()
	}
	opts, err := fc.nodeOptions(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	qc, pc := fc.quorumConfig(a.log), fc.proxyConfig(a.log)
	var m *metrics.Metrics
	if fc.AdminListen != "" {
		// Without the admin listener nothing reads metrics: no observer,
		// so the request path pays nothing for them.
		m = metrics.New(addrs, buildinfo.Version())
		qc.Observer, pc.Observer = m, m
	}
	// The demo nodes (miniredis) have no functions: no need to ask.
	opts.Log, opts.NoFunctions = a.log, a.demo != nil
	nodes := make([]quorum.Node, len(addrs))
	for i, addr := range addrs {
		nodes[i] = redisnode.NewRedisNode(addr, opts)
	}
	a.engine = quorum.New(qc, nodes...)
	if a.demo == nil {
		// The embedded demo nodes live and die with this process: nothing
		// to check. Real masters are checked before the first client.
		if err := a.engine.Start(context.Background()); err != nil {
			return nil, err
		}
	}

	// One subscriber connection per node, shared by every SUBSCRIBE.
	a.hub = pubsub.New(pubsub.Config{Nodes: addrs, Username: opts.Username, Password: opts.Password, TLS: opts.TLS, Log: a.log})
	pc.PubSub = a.hub
	a.reserve = fdReserve(len(addrs), a.demo != nil)
	if err := fitFileLimit(&pc, a.reserve, a.log); err != nil {
		return nil, err
	}
	a.pc = pc
	if a.srv, err = proxy.New(pc, a.engine); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if a.ln, a.certs, err = fc.listen(); err != nil {
		return nil, err
	}
	if fc.AdminListen != "" {
		if err := a.serveAdmin(fc.AdminListen, m); err != nil {
			return nil, err
		}
	}
	eq := qc.WithDefaults()
	a.log.Info("serving", "listen", fc.Listen, "tls_listen", fc.TLSListen, "nodes", len(addrs), "quorum", quorum.Quorum(len(addrs)),
		"node_timeout", eq.NodeTimeout, "max_ttl", a.engine.MaxTTL(),
		"probe_interval", eq.ProbeInterval, "trust_fsync_always", eq.TrustFsyncAlways)
	if a.demo != nil {
		_, port, _ := net.SplitHostPort(a.ln.Addr().String())
		a.log.Info(fmt.Sprintf("demo mode: %d embedded in-process nodes; try: redis-cli -p %s SET mylock mytoken NX PX 30000; put real masters in nodes (config.toml) or -nodes", len(addrs), port))
	}
	return a, nil
}

// load reads the config file and applies the flags.
func (a *App) load() (fileConfig, error) {
	fc, err := loadConfig(a.o.ConfigPath, a.o.ConfigGiven, a.o.DefaultConfig)
	if err != nil {
		return fileConfig{}, err
	}
	if a.o.Listen != nil {
		fc.Listen = *a.o.Listen
	}
	if a.o.Nodes != nil {
		fc.Nodes = splitNodes(*a.o.Nodes)
	}
	if err := fc.validate(); err != nil {
		return fileConfig{}, fmt.Errorf("config: %w", err)
	}
	return fc, nil
}

// serveAdmin serves /metrics, /healthz and /readyz on addr until Close.
func (a *App) serveAdmin(addr string, m *metrics.Metrics) error {
	aln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	a.admin = &http.Server{
		Handler:           admin.Handler(admin.Config{Metrics: m.Handler(), Status: a.engine.Status, Draining: a.srv.Draining}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	a.served = make(chan struct{})
	go func() { // ends when Close closes the server, and is waited for there
		a.admin.Serve(aln)
		close(a.served)
	}()
	a.log.Info("admin serving", "admin_listen", aln.Addr().String())
	return nil
}

// Close stops what New started: the admin endpoints, pub/sub, the engine
// and the demo nodes, and the listener if Run never took it.
func (a *App) Close() {
	if a.ln != nil {
		a.ln.Close()
		a.ln = nil
	}
	if a.admin != nil {
		a.admin.Close()
		<-a.served
		a.admin = nil
	}
	if a.hub != nil {
		a.hub.Close()
		a.hub = nil
	}
	if a.engine != nil {
		a.engine.Close()
		a.engine = nil
	}
	if a.demo != nil {
		a.demo.Close()
		a.demo = nil
	}
}
