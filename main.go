// Command redlock-proxy serves N independent Redis masters as one Redis
// lock server: unmodified single-instance lock clients connect to it, and
// it runs the Redlock algorithm across the masters.
package main

import (
	"context"
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
)

//go:embed config.toml
var defaultConfig string

// fileConfig is config.toml as decoded.
type fileConfig struct {
	Listen         string   `toml:"listen"`
	Nodes          []string `toml:"nodes"`
	EmbeddedNodes  int      `toml:"embedded_nodes"`
	NodeUsername   string   `toml:"node_username"`
	NodePassword   string   `toml:"node_password"`
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
	listen := fl.String("listen", "127.0.0.1:6380", "address to serve clients on (overrides listen)")
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
	nodeList := make([]quorum.Node, len(addrs))
	for i, a := range addrs {
		nodeList[i] = quorum.NewRedisNode(a, quorum.NodeOptions{Username: fc.NodeUsername, Password: fc.NodePassword})
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
	hub := pubsub.New(pubsub.Config{Nodes: addrs, Username: fc.NodeUsername, Password: fc.NodePassword, Log: log})
	defer hub.Close()
	pcfg := fc.proxyConfig(log)
	pcfg.PubSub = hub
	srv, err := proxy.New(pcfg, e)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	ln, err := net.Listen("tcp", fc.Listen)
	if err != nil {
		return err
	}
	qc := fc.quorumConfig(nil).WithDefaults()
	log.Info("serving", "listen", ln.Addr().String(), "nodes", len(addrs), "quorum", quorum.Quorum(len(addrs)),
		"node_timeout", qc.NodeTimeout, "max_ttl", e.MaxTTL(),
		"probe_interval", qc.ProbeInterval, "trust_fsync_always", qc.TrustFsyncAlways)
	if len(fc.Nodes) == 0 {
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		log.Info(fmt.Sprintf("demo mode: %d embedded in-process nodes; try: redis-cli -p %s SET mylock mytoken NX PX 30000; put real masters in nodes (config.toml) or -nodes", len(addrs), port))
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // waited for below
	select {
	case err = <-errc:
		return err
	case <-ctx.Done():
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
	if fc.Listen == "" {
		fc.Listen = "127.0.0.1:6380"
	}
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
	}
	qc := fc.quorumConfig(nil)
	if err := qc.Validate(); err != nil {
		return err
	}
	qc = qc.WithDefaults()
	return fc.proxyConfig(nil).Validate(qc.MinTTL, qc.MaxTTL)
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
