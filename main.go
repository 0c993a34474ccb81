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
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/redlock-proxy/redlock-proxy/acl"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/pubsub"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/tlsfiles"
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
	RequirePass    string   `toml:"requirepass"`
	MaxClients     int      `toml:"max_clients"`
	IdleTimeout    duration `toml:"idle_timeout"`
	MaxArgs        int      `toml:"max_args"`
	MaxBulk        int      `toml:"max_bulk"`
	MaxInline      int      `toml:"max_inline"`
	MaxCommand     int      `toml:"max_command"`
	MaxInputTotal  int64    `toml:"max_input_total"`
	LogLevel       string   `toml:"log_level"`
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
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })

	fc, err := loadConfig(*configPath, set["config"])
	if err != nil {
		return err
	}
	if set["listen"] {
		fc.Listen = *listen
	}
	if set["nodes"] {
		fc.Nodes = splitNodes(*nodes)
	}
	if err := fc.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: fc.level()}))
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
	nodeList := make([]quorum.Node, len(addrs))
	for i, a := range addrs {
		nodeList[i] = quorum.NewRedisNode(a, opts)
	}
	e := quorum.New(fc.quorumConfig(log), nodeList...)
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
	pcfg := fc.proxyConfig(log)
	pcfg.PubSub = hub
	srv, err := proxy.New(pcfg, e)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	ln, certs, err := fc.listen()
	if err != nil {
		return err
	}
	qc := fc.quorumConfig(nil).WithDefaults()
	log.Info("serving", "listen", fc.Listen, "tls_listen", fc.TLSListen, "nodes", len(addrs), "quorum", quorum.Quorum(len(addrs)),
		"node_timeout", qc.NodeTimeout, "max_ttl", e.MaxTTL(),
		"probe_interval", qc.ProbeInterval, "trust_fsync_always", qc.TrustFsyncAlways)
	if len(fc.Nodes) == 0 {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		log.Info(fmt.Sprintf("demo mode: %d embedded in-process nodes; try: redis-cli -p %s SET mylock mytoken NX PX 30000; put real masters in nodes (config.toml) or -nodes", len(addrs), port))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // waited for below
	for done := false; !done; {
		select {
		case err = <-errc:
			return err
		case <-ctx.Done():
			done = true
		case <-hup:
			if err := reload(*configPath, set, srv, certs); err != nil {
				log.Error("reload refused; the running config stays", "err", err)
			} else {
				log.Info("reloaded: users and TLS certificates")
			}
		}
	}
	log.Info("shutting down")
	srv.Close()
	return <-errc
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
	fc.applyDefaults()
	return fc, nil
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

// reload re-reads the config file and applies what can change while
// serving: the users and the client TLS certificates (re-read from the
// same files). On an error nothing is applied.
func reload(path string, flags map[string]bool, srv *proxy.Server, certs *tlsfiles.Server) error {
	fc, err := loadConfig(path, flags["config"])
	if err != nil {
		return err
	}
	if err := fc.validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return reloadAccess(fc, srv, certs)
}

// reloadAccess applies fc's users and re-reads the client TLS
// certificates, for a reload. The TLS files keep the paths given at
// start. On an error the users stay as they were.
func reloadAccess(fc fileConfig, srv *proxy.Server, certs *tlsfiles.Server) error {
	if certs != nil {
		if err := certs.Reload(); err != nil {
			return err
		}
	}
	if err := srv.SetUsers(fc.RequirePass, fc.users()); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
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
		MaxClients:     fc.MaxClients,
		IdleTimeout:    fc.IdleTimeout.Duration,
		Limits:         proxy.Limits{MaxArgs: fc.MaxArgs, MaxBulk: fc.MaxBulk, MaxInline: fc.MaxInline, MaxCommand: fc.MaxCommand},
		MaxInputTotal:  fc.MaxInputTotal,
		Log:            log,
	}
}
