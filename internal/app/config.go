package app

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// fileConfig is config.toml as decoded: every key is in static, which a
// reload cannot change, or in live, which a reload applies. A key in
// neither fails TestEveryKeyIsStaticOrLive.
type fileConfig struct {
	static
	live
}

// static holds the keys the process sets up once: the engine's safety
// settings, the nodes and how to reach them, the listeners. A reload that
// changes one is logged and the running value stays (notLive). Nothing
// built from live reads them.
type static struct {
	Nodes          []string `toml:"nodes"`
	NodeTimeout    duration `toml:"node_timeout"`
	DriftFactor    float64  `toml:"drift_factor"`
	MinTTL         duration `toml:"min_ttl"`
	MaxTTL         duration `toml:"max_ttl"`
	ProbeInterval  duration `toml:"probe_interval"`
	ClockJumpLimit duration `toml:"clock_jump_limit"`
	TrustFsync     bool     `toml:"trust_fsync_always"`
	Listen         string   `toml:"listen"`
	TLSListen      string   `toml:"tls_listen"`
	TLSCertFile    string   `toml:"tls_cert_file"`
	TLSKeyFile     string   `toml:"tls_key_file"`
	TLSCAFile      string   `toml:"tls_ca_file"`
	TLSAuthClients string   `toml:"tls_auth_clients"`
	AdminListen    string   `toml:"admin_listen"`
	NodeUsername   string   `toml:"node_username"`
	NodePassFile   string   `toml:"node_password_file"`
	NodeTLS        bool     `toml:"node_tls"`
	NodeTLSCAFile  string   `toml:"node_tls_ca_file"`
	NodeTLSCert    string   `toml:"node_tls_cert_file"`
	NodeTLSKey     string   `toml:"node_tls_key_file"`
	NodeTLSName    string   `toml:"node_tls_server_name"`
	EmbeddedNodes  int      `toml:"embedded_nodes"`
	NodePassword   string   `toml:"node_password" reload:"hidden"`
}

// live holds the keys a reload applies: the server's settings
// (proxyConfig), the log level and shutdown_grace.
type live struct {
	RequirePass    string   `toml:"requirepass"`
	Users          []user   `toml:"users"`
	DefaultTTL     duration `toml:"default_ttl"`
	CommandTimeout duration `toml:"command_timeout"`
	AllowForceDel  bool     `toml:"allow_force_del"`
	FenceKeys      []string `toml:"fence_keys"`
	LatchKeys      []string `toml:"latch_keys"`
	MaxClients     int      `toml:"max_clients"`
	IdleTimeout    duration `toml:"idle_timeout"`
	MaxArgs        int      `toml:"max_args"`
	MaxBulk        int      `toml:"max_bulk"`
	MaxInline      int      `toml:"max_inline"`
	MaxCommand     int      `toml:"max_command"`
	MaxInputTotal  int64    `toml:"max_input_total"`
	LogLevel       logLevel `toml:"log_level"`
	ShutdownGrace  duration `toml:"shutdown_grace"`
	SlowlogSlower  duration `toml:"slowlog_slower_than"`
	SlowlogMaxLen  int      `toml:"slowlog_max_len"`
}

// user is one [[users]] table.
type user struct {
	Name           string   `toml:"name"`
	Password       string   `toml:"password"`
	PasswordSHA256 string   `toml:"password_sha256"`
	Allow          []string `toml:"allow"`
	Keys           []string `toml:"keys"`
}

// DefaultListen is listen's default, also the -listen flag's.
const DefaultListen = "127.0.0.1:6380"

// defaultShutdownGrace is shutdown_grace when the file does not set it.
const defaultShutdownGrace = 5 * time.Second

// duration is a time.Duration written as a string ("50ms") in TOML.
type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}

// logLevel is log_level: debug, info, warn or error, in any case; empty
// (and the zero value) is info.
type logLevel slog.Level

func (l *logLevel) UnmarshalText(b []byte) error {
	switch strings.ToLower(string(b)) {
	case "debug":
		*l = logLevel(slog.LevelDebug)
	case "", "info":
		*l = logLevel(slog.LevelInfo)
	case "warn":
		*l = logLevel(slog.LevelWarn)
	case "error":
		*l = logLevel(slog.LevelError)
	default:
		return fmt.Errorf("log_level (%q) must be debug, info, warn or error", b)
	}
	return nil
}

// String is the level as log_level writes it.
func (l logLevel) String() string { return strings.ToLower(slog.Level(l).String()) }

// loadConfig reads the config file at path. A missing file is not an
// error unless the path was given explicitly: def, the shipped
// config.toml, is used instead.
func loadConfig(path string, explicit bool, def string) (fileConfig, error) {
	text := def
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		text = string(b)
	case explicit || !errors.Is(err, fs.ErrNotExist):
		return fileConfig{}, fmt.Errorf("read config %s: %w", path, err)
	}
	// Keys whose zero is a choice get their defaults before decoding: a
	// listen written as "" turns the plain port off, and shutdown_grace
	// "0s" means no grace.
	var fc fileConfig
	fc.Listen = DefaultListen
	fc.ShutdownGrace.Duration = defaultShutdownGrace
	md, err := toml.Decode(text, &fc)
	if err != nil {
		return fileConfig{}, fmt.Errorf("read config %s: %w", path, err)
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		return fileConfig{}, fmt.Errorf("read config %s: unknown key %q", path, keys[0].String())
	}
	if fc.EmbeddedNodes == 0 {
		fc.EmbeddedNodes = 5
	}
	return fc, nil
}

// validate checks the app's own keys, then has each package check its own.
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

// splitNodes splits -nodes' comma-separated list.
func splitNodes(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
