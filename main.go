// Command redlock-proxy serves N independent Redis masters as one Redis
// lock server: unmodified single-instance lock clients connect to it, and
// it runs the Redlock algorithm across the masters.
package main

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/admin"
	"github.com/redlock-proxy/redlock-proxy/internal/buildinfo"
	"github.com/redlock-proxy/redlock-proxy/internal/metrics"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

//go:embed config.toml
var defaultConfig string

// fileConfig is config.toml as decoded.
type fileConfig struct {
	Listen         string   `toml:"listen"`
	TLSListen      string   `toml:"tls_listen"`
	TLSCertFile    string   `toml:"tls_cert_file"`
	TLSKeyFile     string   `toml:"tls_key_file"`
	TLSCAFile      string   `toml:"tls_ca_file"`
	TLSAuthClients string   `toml:"tls_auth_clients"`
	Nodes          []string `toml:"nodes"`
	EmbeddedNodes  int      `toml:"embedded_nodes"`
	NodeUsername   string   `toml:"node_username"`
	NodePassword   string   `toml:"node_password"`
	NodePassFile   string   `toml:"node_password_file"`
	NodeTLS        bool     `toml:"node_tls"`
	NodeTLSCAFile  string   `toml:"node_tls_ca_file"`
	NodeTLSCert    string   `toml:"node_tls_cert_file"`
	NodeTLSKey     string   `toml:"node_tls_key_file"`
	NodeTLSName    string   `toml:"node_tls_server_name"`
	NodeTimeout    duration `toml:"node_timeout"`
	DriftFactor    float64  `toml:"drift_factor"`
	MinTTL         duration `toml:"min_ttl"`
	MaxTTL         duration `toml:"max_ttl"`
	ProbeInterval  duration `toml:"probe_interval"`
	ClockJumpLimit duration `toml:"clock_jump_limit"`
	TrustFsync     bool     `toml:"trust_fsync_always"`
	DefaultTTL     duration `toml:"default_ttl"`
	CommandTimeout duration `toml:"command_timeout"`
	AllowForceDel  bool     `toml:"allow_force_del"`
	FenceKeys      []string `toml:"fence_keys"`
	RequirePass    string   `toml:"requirepass"`
	MaxClients     int      `toml:"max_clients"`
	IdleTimeout    duration `toml:"idle_timeout"`
	MaxArgs        int      `toml:"max_args"`
	MaxBulk        int      `toml:"max_bulk"`
	MaxInline      int      `toml:"max_inline"`
	MaxCommand     int      `toml:"max_command"`
	MaxInputTotal  int64    `toml:"max_input_total"`
	LogLevel       string   `toml:"log_level"`
	AdminListen    string   `toml:"admin_listen"`
	ShutdownGrace  duration `toml:"shutdown_grace"`
	SlowlogSlower  duration `toml:"slowlog_slower_than"`
	SlowlogMaxLen  int      `toml:"slowlog_max_len"`
	Users          []user   `toml:"users"`
}

// user is one [[users]] table.
type user struct {
	Name           string   `toml:"name"`
	Password       string   `toml:"password"`
	PasswordSHA256 string   `toml:"password_sha256"`
	Allow          []string `toml:"allow"`
	Keys           []string `toml:"keys"`
}

// defaultShutdownGrace is shutdown_grace when the file does not set it.
const defaultShutdownGrace = 5 * time.Second

// duration is a time.Duration written as a string ("50ms") in TOML.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "redlock-proxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("redlock-proxy", flag.ContinueOnError)
	configPath := fl.String("config", "config.toml", "path of the TOML config file; without one the built-in default is used")
	listen := fl.String("listen", defaultListen, "address to serve clients on (overrides listen)")
	nodes := fl.String("nodes", "", "comma-separated Redis masters host:port,... (overrides nodes)")
	probe := fl.String("probe", "", "only GET this URL, such as http://127.0.0.1:9121/readyz, and exit 0 if it answers 200 within 2s (a health check for an image without curl)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *probe != "" {
		return probeURL(*probe, 2*time.Second)
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })

	// load reads the file and applies the flags; SIGHUP calls it again.
	load := func() (fileConfig, error) {
		fc, err := loadConfig(*configPath, set["config"])
		if err != nil {
			return fileConfig{}, err
		}
		if set["listen"] {
			fc.Listen = *listen
		}
		if set["nodes"] {
			fc.Nodes = splitNodes(*nodes)
		}
		if err := fc.validate(); err != nil {
			return fileConfig{}, fmt.Errorf("config: %w", err)
		}
		return fc, nil
	}

	fc, err := load()
	if err != nil {
		return err
	}
	level := new(slog.LevelVar)
	level.Set(fc.level())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	quorum.SetDriverLog(log)

	addrs := fc.Nodes
	if len(addrs) == 0 {
		demo, err := startEmbedded(fc.EmbeddedNodes)
		if err != nil {
			return err
		}
		defer demo.Close()
		addrs = demo.Addrs()
	}
	opts, err := fc.nodeOptions(os.Getenv)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	qc, pc := fc.quorumConfig(log), fc.proxyConfig(log)
	var m *metrics.Metrics
	if fc.AdminListen != "" {
		// Without the admin listener nothing reads metrics: no observer,
		// so the request path pays nothing for them.
		m = metrics.New(addrs, buildinfo.Version())
		qc.Observer, pc.Observer = m, m
	}
	// The demo nodes (miniredis) have no functions: no need to ask.
	opts.Log, opts.NoFunctions = log, len(fc.Nodes) == 0
	nodeList := make([]quorum.Node, len(addrs))
	for i, a := range addrs {
		nodeList[i] = quorum.NewRedisNode(a, opts)
	}
	e := quorum.New(qc, nodeList...)
	defer e.Close()
	if len(fc.Nodes) > 0 {
		// The embedded demo nodes live and die with this process: nothing
		// to check. Real masters are checked before the first client.
		if err := e.Start(context.Background()); err != nil {
			return err
		}
	}

	// One subscriber connection per node, shared by every SUBSCRIBE.
	hub := pubsub.New(pubsub.Config{Nodes: addrs, Username: opts.Username, Password: opts.Password, TLS: opts.TLS, Log: log})
	defer hub.Close()
	pc.PubSub = hub
	reserve := fdReserve(len(addrs), len(fc.Nodes) == 0)
	if err := fitFileLimit(&pc, reserve, log); err != nil {
		return err
	}
	srv, err := proxy.New(pc, e)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	ln, certs, err := fc.listen()
	if err != nil {
		return err
	}
	if fc.AdminListen != "" {
		aln, err := net.Listen("tcp", fc.AdminListen)
		if err != nil {
			ln.Close()
			return err
		}
		hs := &http.Server{
			Handler:           admin.Handler(admin.Config{Metrics: m.Handler(), Status: e.Status, Draining: srv.Draining}),
			ReadHeaderTimeout: 5 * time.Second,
		}
		served := make(chan struct{})
		go func() { // ends when hs.Close runs, and is waited for there
			hs.Serve(aln)
			close(served)
		}()
		defer func() {
			hs.Close()
			<-served
		}()
		log.Info("admin serving", "admin_listen", aln.Addr().String())
	}
	eq := qc.WithDefaults()
	log.Info("serving", "listen", fc.Listen, "tls_listen", fc.TLSListen, "nodes", len(addrs), "quorum", quorum.Quorum(len(addrs)),
		"node_timeout", eq.NodeTimeout, "max_ttl", e.MaxTTL(),
		"probe_interval", eq.ProbeInterval, "trust_fsync_always", eq.TrustFsyncAlways)
	if len(fc.Nodes) == 0 {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		log.Info(fmt.Sprintf("demo mode: %d embedded in-process nodes; try: redis-cli -p %s SET mylock mytoken NX PX 30000; put real masters in nodes (config.toml) or -nodes", len(addrs), port))
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // waited for below

	running := fc // what the process started with; safety keys stay so
	grace := fc.ShutdownGrace.Duration
	reload := func() {
		next, err := load()
		if err != nil {
			log.Error("reload refused; the running config stays", "err", err)
			return
		}
		for _, k := range notLive(running, next) {
			log.Warn("reload: not changed live, the running value stays; restart to change it", "key", k.key, "running", k.running, "file", k.file)
		}
		nc := next.proxyConfig(log)
		if err := fitFileLimit(&nc, reserve, log); err != nil {
			log.Error("reload refused; the running config stays", "err", err)
			return
		}
		// Checked against the running engine's TTL bounds before anything
		// changes, so that a refusal leaves the certificates as they were.
		if err := nc.Validate(e.MinTTL(), e.MaxTTL()); err != nil {
			log.Error("reload refused; the running config stays", "err", fmt.Errorf("config: %w", err))
			return
		}
		if certs != nil {
			if err := certs.Reload(); err != nil {
				log.Error("reload refused; the running config stays", "err", err)
				return
			}
		}
		if err := srv.Reload(nc); err != nil {
			log.Error("reload refused; the running config stays", "err", err)
			return
		}
		level.Set(next.level())
		grace = next.ShutdownGrace.Duration
		log.Info("config reloaded", "tls_certificates", certs != nil, "log_level", next.LogLevel, "max_clients", next.MaxClients,
			"idle_timeout", next.IdleTimeout.Duration, "shutdown_grace", grace)
	}

	// Serve until SIGTERM or SIGINT, reloading on SIGHUP.
	for stop := false; !stop; {
		select {
		case err := <-errc:
			return err
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				reload()
				continue
			}
			stop = true
		}
	}
	// Drain: /readyz turns 503 and acquires are refused at once, while
	// holders release and extend for shutdown_grace (a second signal, or
	// the last client leaving, cuts it short); then the listener closes
	// and each command in flight gets its reply.
	srv.Drain()
	log.Info("draining", "shutdown_grace", grace, "clients", srv.Clients())
	timer := time.NewTimer(grace)
	defer timer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for stop := false; !stop; {
		select {
		case err := <-errc:
			return err
		case <-timer.C:
			stop = true
		case <-tick.C:
			stop = srv.Clients() == 0
		case sig := <-sigs:
			if sig == syscall.SIGHUP {
				reload()
				continue
			}
			stop = true
		}
	}
	log.Info("shutting down")
	ctx, cancel := context.WithTimeout(context.Background(), flushTime(pc))
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Warn("shutdown cut short", "err", err)
	}
	return <-errc
}

// liveKey is a key whose change a reload cannot apply.
type liveKey struct {
	key           string
	running, file string
}

// notLive lists the keys that differ between the running config and the
// file but cannot change without a restart: the safety settings the
// engine was built with (nodes, node_timeout, drift_factor, min_ttl,
// max_ttl), and what the process set up once (listeners, node
// credentials and TLS files, the monitor's settings).
// Values are compared after defaults; a password is named, never shown.
// The client certificates themselves are re-read on every reload.
func notLive(running, file fileConfig) []liveKey {
	r, f := running.quorumConfig(nil).WithDefaults(), file.quorumConfig(nil).WithDefaults()
	keys := []liveKey{
		{"nodes", strings.Join(running.Nodes, ","), strings.Join(file.Nodes, ",")},
		{"node_timeout", r.NodeTimeout.String(), f.NodeTimeout.String()},
		{"drift_factor", fmt.Sprint(r.DriftFactor), fmt.Sprint(f.DriftFactor)},
		{"min_ttl", r.MinTTL.String(), f.MinTTL.String()},
		{"max_ttl", r.MaxTTL.String(), f.MaxTTL.String()},
		{"probe_interval", r.ProbeInterval.String(), f.ProbeInterval.String()},
		{"clock_jump_limit", r.ClockJumpLimit.String(), f.ClockJumpLimit.String()},
		{"trust_fsync_always", fmt.Sprint(r.TrustFsyncAlways), fmt.Sprint(f.TrustFsyncAlways)},
		{"listen", running.Listen, file.Listen},
		{"tls_listen", running.TLSListen, file.TLSListen},
		{"tls_cert_file", running.TLSCertFile, file.TLSCertFile},
		{"tls_key_file", running.TLSKeyFile, file.TLSKeyFile},
		{"tls_ca_file", running.TLSCAFile, file.TLSCAFile},
		{"tls_auth_clients", running.TLSAuthClients, file.TLSAuthClients},
		{"admin_listen", running.AdminListen, file.AdminListen},
		{"node_username", running.NodeUsername, file.NodeUsername},
		{"node_password_file", running.NodePassFile, file.NodePassFile},
		{"node_tls", fmt.Sprint(running.NodeTLS), fmt.Sprint(file.NodeTLS)},
		{"node_tls_ca_file", running.NodeTLSCAFile, file.NodeTLSCAFile},
		{"node_tls_cert_file", running.NodeTLSCert, file.NodeTLSCert},
		{"node_tls_key_file", running.NodeTLSKey, file.NodeTLSKey},
		{"node_tls_server_name", running.NodeTLSName, file.NodeTLSName},
	}
	if len(running.Nodes) == 0 {
		keys = append(keys, liveKey{"embedded_nodes", fmt.Sprint(running.EmbeddedNodes), fmt.Sprint(file.EmbeddedNodes)})
	}
	keys = slices.DeleteFunc(keys, func(k liveKey) bool { return k.running == k.file })
	if running.NodePassword != file.NodePassword {
		keys = append(keys, liveKey{"node_password", "(hidden)", "(hidden)"})
	}
	return keys
}

// fitFileLimit raises the open-file limit as far as it goes and lowers
// cfg's max_clients, with a warning, to what it holds after reserve: a
// client must never take a descriptor a node needs, or the nodes are
// marked down with "too many open files" and every client loses its
// quorum. It refuses to start when the limit leaves almost nothing.
func fitFileLimit(cfg *proxy.Config, reserve int, log *slog.Logger) error {
	limit, err := raiseFileLimit()
	if err != nil {
		log.Warn("open file limit unknown; max_clients not checked against it", "err", err)
		return nil
	}
	want := cfg.WithDefaults().MaxClients
	n, err := fitClients(want, limit, reserve)
	if err != nil {
		return err
	}
	if n < want {
		log.Warn("max_clients lowered to fit the open file limit", "max_clients", want, "open_file_limit", limit,
			"reserved", reserve, "now", n)
	}
	cfg.MaxClients = n
	return nil
}

// loadConfig reads the config file at path. A missing file is not an
// error unless the path was given explicitly: the built-in default, which
// is the shipped config.toml, is used instead.
func loadConfig(path string, explicit bool) (fileConfig, error) {
	text := defaultConfig
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		text = string(b)
	case explicit || !errors.Is(err, fs.ErrNotExist):
		return fileConfig{}, fmt.Errorf("read config %s: %w", path, err)
	}
	var fc fileConfig
	md, err := toml.Decode(text, &fc)
	if err != nil {
		return fileConfig{}, fmt.Errorf("read config %s: %w", path, err)
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		return fileConfig{}, fmt.Errorf("read config %s: unknown key %q", path, keys[0].String())
	}
	if !md.IsDefined("listen") {
		// Only a listen written as "" turns the plain port off.
		fc.Listen = defaultListen
	}
	if !md.IsDefined("shutdown_grace") { // "0s" is a choice: no grace
		fc.ShutdownGrace.Duration = defaultShutdownGrace
	}
	fc.applyDefaults()
	return fc, nil
}

// flushTime bounds the wait, once the drain ends, for the commands in
// flight: each ends within command_timeout; one more second for its reply
// to be written.
func flushTime(pc proxy.Config) time.Duration { return pc.WithDefaults().CommandTimeout + time.Second }

// stopTime is the longest a stop takes: the drain, then flushTime. A
// supervisor's stop timeout must be longer (deploy/).
func (fc fileConfig) stopTime() time.Duration {
	return fc.ShutdownGrace.Duration + flushTime(fc.proxyConfig(nil))
}

// probeURL GETs url and returns an error unless it answers 200 within
// timeout.
func probeURL(url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: %s", url, res.Status)
	}
	return nil
}

func splitNodes(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// applyDefaults fills in main's own keys. The engine's and the server's
// defaults are theirs (quorum.Config.WithDefaults, proxy.Config.WithDefaults).
func (fc *fileConfig) applyDefaults() {
	if fc.EmbeddedNodes == 0 {
		fc.EmbeddedNodes = 5
	}
	if fc.LogLevel == "" {
		fc.LogLevel = "info"
	}
}

// validate checks main's own keys, then has each package check its own.
func (fc fileConfig) validate() error {
	seen := map[string]bool{}
	for _, a := range fc.Nodes {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("nodes: %q is not host:port", a)
		}
		if seen[a] {
			return fmt.Errorf("nodes: %q is listed twice", a)
		}
		seen[a] = true
	}
	switch {
	case len(fc.Nodes) == 0 && (fc.EmbeddedNodes < 1 || fc.EmbeddedNodes > 9):
		return fmt.Errorf("embedded_nodes (%d) must be 1 to 9", fc.EmbeddedNodes)
	case fc.level() == slog.Level(-100):
		return fmt.Errorf("log_level (%q) must be debug, info, warn or error", fc.LogLevel)
	case fc.Listen == "" && fc.TLSListen == "":
		return errors.New("listen and tls_listen are both empty: nothing to serve on")
	case fc.TLSListen == "" && (fc.TLSCertFile != "" || fc.TLSKeyFile != "" || fc.TLSCAFile != "" || fc.TLSAuthClients != ""):
		return errors.New("tls_cert_file, tls_key_file, tls_ca_file and tls_auth_clients need tls_listen")
	case !fc.NodeTLS && (fc.NodeTLSCAFile != "" || fc.NodeTLSCert != "" || fc.NodeTLSKey != "" || fc.NodeTLSName != ""):
		return errors.New("node_tls_ca_file, node_tls_cert_file, node_tls_key_file and node_tls_server_name need node_tls = true")
	case fc.ShutdownGrace.Duration < 0:
		return fmt.Errorf("shutdown_grace (%v) must not be negative", fc.ShutdownGrace.Duration)
	}
	if fc.AdminListen != "" {
		if _, _, err := net.SplitHostPort(fc.AdminListen); err != nil {
			return fmt.Errorf("admin_listen: %q is not host:port", fc.AdminListen)
		}
	}
	if fc.TLSListen != "" {
		if err := fc.tlsServer().Validate(); err != nil {
			return err
		}
	}
	if _, err := fc.nodePasswordSource(os.Getenv); err != nil {
		return err
	}
	qc := fc.quorumConfig(nil)
	if err := qc.Validate(); err != nil {
		return err
	}
	qc = qc.WithDefaults()
	return fc.proxyConfig(nil).Validate(qc.MinTTL, qc.MaxTTL)
}

// defaultListen is listen's default, also the -listen flag's.
const defaultListen = "127.0.0.1:6380"

func (fc fileConfig) tlsServer() tlsfiles.ServerConfig {
	return tlsfiles.ServerConfig{
		CertFile: fc.TLSCertFile, KeyFile: fc.TLSKeyFile, CAFile: fc.TLSCAFile,
		AuthClients: tlsfiles.ClientAuth(fc.TLSAuthClients),
	}
}

// listen opens the client listeners, the plain and the TLS one, as one.
// certs is nil without tls_listen.
func (fc fileConfig) listen() (ln net.Listener, certs *tlsfiles.Server, err error) {
	var lns []net.Listener
	defer func() {
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
		}
	}()
	if fc.Listen != "" {
		l, err := net.Listen("tcp", fc.Listen)
		if err != nil {
			return nil, nil, err
		}
		lns = append(lns, l)
	}
	if fc.TLSListen != "" {
		if certs, err = tlsfiles.NewServer(fc.tlsServer()); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		l, err := net.Listen("tcp", fc.TLSListen)
		if err != nil {
			return nil, nil, err
		}
		lns = append(lns, tls.NewListener(l, certs.Config()))
	}
	return proxy.JoinListeners(lns...), certs, nil
}

// passwordEnv is the environment variable that may hold the nodes' AUTH
// password.
const passwordEnv = "REDLOCK_PROXY_NODE_PASSWORD"

// nodePasswordSource names where the nodes' password comes from:
// node_password, node_password_file or the environment; "" for none. More
// than one is an error, so that no source silently wins over another.
func (fc fileConfig) nodePasswordSource(getenv func(string) string) (string, error) {
	var set []string
	if fc.NodePassword != "" {
		set = append(set, "node_password")
	}
	if fc.NodePassFile != "" {
		set = append(set, "node_password_file")
	}
	if getenv(passwordEnv) != "" {
		set = append(set, passwordEnv)
	}
	switch len(set) {
	case 0:
		return "", nil
	case 1:
		return set[0], nil
	}
	return "", fmt.Errorf("the nodes' password is set by %s: set one of them", strings.Join(set, " and "))
}

// nodeOptions returns the settings of every node: the password from its
// one source, and TLS.
func (fc fileConfig) nodeOptions(getenv func(string) string) (quorum.NodeOptions, error) {
	opts := quorum.NodeOptions{Username: fc.NodeUsername}
	src, err := fc.nodePasswordSource(getenv)
	if err != nil {
		return opts, err
	}
	switch src {
	case "node_password":
		opts.Password = fc.NodePassword
	case passwordEnv:
		opts.Password = getenv(passwordEnv)
	case "node_password_file":
		b, err := os.ReadFile(fc.NodePassFile)
		if err != nil {
			return opts, fmt.Errorf("node_password_file: %w", err)
		}
		// One trailing line break, as echo and editors leave, is not part
		// of the password.
		opts.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if opts.Password == "" {
			return opts, fmt.Errorf("node_password_file %s is empty", fc.NodePassFile)
		}
	}
	if fc.NodeTLS {
		c, err := tlsfiles.Client(tlsfiles.ClientConfig{
			CAFile: fc.NodeTLSCAFile, CertFile: fc.NodeTLSCert, KeyFile: fc.NodeTLSKey, ServerName: fc.NodeTLSName,
		})
		if err != nil {
			return opts, err
		}
		opts.TLS = c
	}
	return opts, nil
}

func (fc fileConfig) level() slog.Level {
	switch strings.ToLower(fc.LogLevel) {
	case "debug":
		return slog.LevelDebug
	case "info":
		return slog.LevelInfo
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.Level(-100)
}

func (fc fileConfig) quorumConfig(log *slog.Logger) quorum.Config {
	return quorum.Config{
		NodeTimeout:      fc.NodeTimeout.Duration,
		DriftFactor:      fc.DriftFactor,
		MinTTL:           fc.MinTTL.Duration,
		MaxTTL:           fc.MaxTTL.Duration,
		ProbeInterval:    fc.ProbeInterval.Duration,
		ClockJumpLimit:   fc.ClockJumpLimit.Duration,
		TrustFsyncAlways: fc.TrustFsync,
		Log:              log,
	}
}

// users returns the [[users]] tables as acl takes them.
func (fc fileConfig) users() []acl.UserConfig {
	var out []acl.UserConfig
	for _, u := range fc.Users {
		out = append(out, acl.UserConfig(u))
	}
	return out
}

func (fc fileConfig) proxyConfig(log *slog.Logger) proxy.Config {
	return proxy.Config{
		RequirePass:    fc.RequirePass,
		Users:          fc.users(),
		DefaultTTL:     fc.DefaultTTL.Duration,
		CommandTimeout: fc.CommandTimeout.Duration,
		AllowForceDel:  fc.AllowForceDel,
		FenceKeys:      fc.FenceKeys,
		MaxClients:     fc.MaxClients,
		IdleTimeout:    fc.IdleTimeout.Duration,
		Limits:         proxy.Limits{MaxArgs: fc.MaxArgs, MaxBulk: fc.MaxBulk, MaxInline: fc.MaxInline, MaxCommand: fc.MaxCommand},
		MaxInputTotal:  fc.MaxInputTotal,
		Log:            log,

		SlowlogSlowerThan: fc.SlowlogSlower.Duration,
		SlowlogMaxLen:     fc.SlowlogMaxLen,
	}
}
