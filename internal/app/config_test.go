package app

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shipped is the repository's config.toml, the default main embeds.
func shipped(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadDefault is the config a missing file gives: the shipped one.
func loadDefault(t *testing.T) fileConfig {
	t.Helper()
	fc, err := loadConfig(filepath.Join(t.TempDir(), "missing.toml"), false, shipped(t))
	if err != nil {
		t.Fatalf("loadConfig(missing, not explicit) = %v; want the built-in default", err)
	}
	return fc
}

func TestShippedConfigIsValid(t *testing.T) {
	fc := loadDefault(t)
	if err := fc.validate(); err != nil {
		t.Errorf("validate(default) = %v", err)
	}
	if fc.Listen != "127.0.0.1:6380" || len(fc.Nodes) != 0 || fc.EmbeddedNodes != 5 ||
		fc.NodeTimeout.Duration != 50*time.Millisecond || fc.MinTTL.Duration != 100*time.Millisecond ||
		fc.MaxTTL.Duration != 5*time.Minute || fc.DriftFactor != 0.01 || slog.Level(fc.LogLevel) != slog.LevelInfo {
		t.Errorf("default config = %+v; want listen 127.0.0.1:6380, no nodes, 5 embedded, 50ms, 100ms..5m, 0.01, info", fc)
	}
	if err := fc.proxyConfig(nil).Validate(100*time.Millisecond, 5*time.Minute); err != nil {
		t.Errorf("proxy config from the default: %v", err)
	}
	qc := fc.quorumConfig(nil)
	if qc.MinTTL != 100*time.Millisecond || qc.MaxTTL != 5*time.Minute || qc.ProbeInterval != 500*time.Millisecond || qc.ClockJumpLimit != 100*time.Millisecond ||
		qc.TrustFsyncAlways || qc.NodeTimeout != 50*time.Millisecond || qc.DriftFactor != 0.01 {
		t.Errorf("quorum config from the default = %+v; want max_ttl 5m, probe 500ms, clock limit 100ms, no fsync trust", qc)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		path     string
		explicit bool
		want     string // in the error
	}{
		{"explicit missing file", filepath.Join(dir, "nope.toml"), true, "nope.toml"},
		{"unknown key", write("unknown.toml", "node_timout = \"50ms\"\n"), true, `unknown key "node_timout"`},
		{"bad duration", write("dur.toml", "min_ttl = \"ten\"\n"), true, "ten"},
		{"not toml", write("bad.toml", "listen = \n"), true, "bad.toml"},
		{"log level", write("level.toml", "log_level = \"loud\"\n"), true, `log_level ("loud") must be debug, info, warn or error`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(tt.path, tt.explicit, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("loadConfig(%s) = %v; want an error containing %q", tt.name, err, tt.want)
			}
		})
	}
}

func TestValidateNamesKeyAndValue(t *testing.T) {
	tests := []struct {
		name string
		edit func(*fileConfig)
		want string
	}{
		{"node timeout over half min ttl", func(fc *fileConfig) { fc.NodeTimeout.Duration = 80 * time.Millisecond },
			"node_timeout (80ms) must be at most half of min_ttl (100ms)"},
		{"drift", func(fc *fileConfig) { fc.DriftFactor = 0.9 }, "drift_factor (0.9) must be from 0 to 0.5"},
		{"node not host:port", func(fc *fileConfig) { fc.Nodes = []string{"localhost"} }, `nodes: "localhost" is not host:port`},
		{"node twice", func(fc *fileConfig) { fc.Nodes = []string{"127.0.0.1:1", "127.0.0.1:1"} }, `nodes: "127.0.0.1:1" is listed twice`},
		{"embedded count", func(fc *fileConfig) { fc.EmbeddedNodes = 10 }, "embedded_nodes (10) must be 1 to 9"},
		{"probe interval", func(fc *fileConfig) { fc.ProbeInterval.Duration = time.Millisecond }, "probe_interval (1ms) must be from 10ms to 10s"},
		{"min_ttl missing from the file takes the engine's default", func(fc *fileConfig) {
			fc.MinTTL.Duration = 0
			fc.NodeTimeout.Duration = 60 * time.Millisecond
		}, "node_timeout (60ms) must be at most half of min_ttl (100ms)"},
		{"clock jump limit over max_ttl", func(fc *fileConfig) { fc.ClockJumpLimit.Duration = 10 * time.Minute },
			"clock_jump_limit (10m0s) must be from 1ms to max_ttl (5m0s)"},
		{"max_command over its ceiling", func(fc *fileConfig) { fc.MaxCommand = 2 << 30 }, "max_command (2147483648) must be from 1 to 1073741824"},
		{"max_input_total under one command", func(fc *fileConfig) { fc.MaxInputTotal = 1 << 20 },
			"max_input_total (1048576) must be at least 2097152, the read buffer one command of max_command (1048576) bytes may take"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := loadDefault(t)
			tt.edit(&fc)
			if err := fc.validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("validate() = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestProxyConfigErrorsNameKeys(t *testing.T) {
	fc := loadDefault(t)
	fc.MaxTTL.Duration = 50 * time.Millisecond
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), "max_ttl (50ms) must not be under min_ttl (100ms)") {
		t.Errorf("validate() = %v; want the max_ttl error", err)
	}
	fc = loadDefault(t)
	fc.MaxArgs = -1
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), "max_args (-1)") {
		t.Errorf("validate() = %v; want the max_args error", err)
	}
	// default_ttl is the server's key, checked against the engine's bounds.
	fc = loadDefault(t)
	fc.DefaultTTL.Duration = 10 * time.Minute
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), "default_ttl (10m0s) must lie within min_ttl (100ms) and max_ttl (5m0s)") {
		t.Errorf("validate() = %v; want the default_ttl error", err)
	}
}

func TestSplitNodes(t *testing.T) {
	got := splitNodes(" 127.0.0.1:7001, 127.0.0.1:7002,,127.0.0.1:7003 ")
	want := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("splitNodes = %q; want %q", got, want)
	}
}

func TestUsersFromTOML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.toml")
	text := `requirepass = "root"

[[users]]
name = "app"
password = "app-pw"
allow = ["lock", "read"]
keys = ["orders:*"]

[[users]]
name = "ops"
password_sha256 = "` + strings.Repeat("ab", 32) + `"
allow = ["admin"]
`
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	fc, err := loadConfig(path, true, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatalf("validate() = %v", err)
	}
	us := fc.proxyConfig(nil).Users
	if len(us) != 2 || us[0].Name != "app" || us[0].Password != "app-pw" || strings.Join(us[0].Allow, ",") != "lock,read" ||
		strings.Join(us[0].Keys, ",") != "orders:*" || us[1].PasswordSHA256 != strings.Repeat("ab", 32) {
		t.Errorf("proxy users = %+v; want app and ops as written", us)
	}
	fc.Users[1].Allow = []string{"everything"}
	if err := fc.validate(); err == nil || !strings.Contains(err.Error(), `users[1] ("ops"): allow: "everything"`) {
		t.Errorf("validate() with a bad class = %v; want an error naming users[1]", err)
	}
}

func TestTLSAndListenKeys(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) (fileConfig, error) {
		t.Helper()
		p := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		fc, err := loadConfig(p, true, "")
		if err != nil {
			return fc, err
		}
		return fc, fc.validate()
	}
	tests := []struct {
		name, text string
		want       string // in the error; "" for valid
	}{
		{"plain only", `listen = "127.0.0.1:1"`, ""},
		{"tls only", `listen = ""` + "\n" + `tls_listen = "127.0.0.1:2"` + "\n" + `tls_cert_file = "c"` + "\n" + `tls_key_file = "k"` + "\n" + `tls_auth_clients = "no"`, ""},
		{"nothing to serve on", `listen = ""`, "listen and tls_listen are both empty"},
		{"tls files without tls_listen", `tls_cert_file = "c"`, "need tls_listen"},
		{"tls without cert", `tls_listen = "127.0.0.1:2"`, "tls_cert_file and tls_key_file are required"},
		{"bad auth clients", `tls_listen = "127.0.0.1:2"` + "\n" + `tls_cert_file = "c"` + "\n" + `tls_key_file = "k"` + "\n" + `tls_auth_clients = "sometimes"`, `tls_auth_clients ("sometimes")`},
		{"client auth without CA", `tls_listen = "127.0.0.1:2"` + "\n" + `tls_cert_file = "c"` + "\n" + `tls_key_file = "k"`, ""},
		{"node tls files without node_tls", `node_tls_ca_file = "ca"`, "need node_tls = true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(tt.text)
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("load and validate = %v; want %q", err, tt.want)
			}
		})
	}
	fc, err := load(`listen = ""` + "\n" + `tls_listen = "127.0.0.1:2"` + "\n" + `tls_cert_file = "c"` + "\n" + `tls_key_file = "k"` + "\n" + `tls_auth_clients = "no"`)
	if err != nil || fc.Listen != "" {
		t.Errorf("listen written as empty = %q, %v; want it kept empty (plain port off)", fc.Listen, err)
	}
	fc, _ = load(`tls_listen = ""`)
	if fc.Listen != DefaultListen {
		t.Errorf("listen not written = %q; want %q", fc.Listen, DefaultListen)
	}
}

// TestNodePasswordSources: the nodes' password comes from exactly one of
// node_password, node_password_file and REDLOCK_PROXY_NODE_PASSWORD.
func TestNodePasswordSources(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == passwordEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct {
		name         string
		pass, file   string
		getenv       func(string) string
		want, errHas string
	}{
		{"none", "", "", env(""), "", ""},
		{"node_password", "from-key", "", env(""), "from-key", ""},
		{"file, one line break trimmed", "", file, env(""), "from-file", ""},
		{"environment", "", "", env("from-env"), "from-env", ""},
		{"key and file", "from-key", file, env(""), "", "node_password and node_password_file"},
		{"file and environment", "", file, env("from-env"), "", "node_password_file and REDLOCK_PROXY_NODE_PASSWORD"},
		{"all three", "from-key", file, env("from-env"), "", "node_password and node_password_file and REDLOCK_PROXY_NODE_PASSWORD"},
		{"empty file", "", empty, env(""), "", "is empty"},
		{"missing file", "", filepath.Join(dir, "nope"), env(""), "", "node_password_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := static{NodePassword: tt.pass, NodePassFile: tt.file}
			opts, err := fc.nodeOptions(tt.getenv)
			if tt.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("nodeOptions = %v; want an error containing %q", err, tt.errHas)
				}
				if strings.Contains(err.Error(), "from-") {
					t.Errorf("nodeOptions error %q shows a password", err)
				}
				return
			}
			if err != nil || opts.Password != tt.want {
				t.Errorf("nodeOptions = password %q, %v; want %q", opts.Password, err, tt.want)
			}
		})
	}
}

func TestShutdownGraceDefaultAndZero(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, text string
		want       time.Duration
	}{
		{"absent: the default", "", defaultShutdownGrace},
		{"zero: no grace", "shutdown_grace = \"0s\"\n", 0},
		{"set", "shutdown_grace = \"30s\"\n", 30 * time.Second},
	} {
		p := filepath.Join(dir, "c.toml")
		if err := os.WriteFile(p, []byte(tt.text), 0o644); err != nil {
			t.Fatal(err)
		}
		fc, err := loadConfig(p, true, "")
		if err != nil {
			t.Fatalf("%s: loadConfig: %v", tt.name, err)
		}
		if fc.ShutdownGrace.Duration != tt.want {
			t.Errorf("%s: shutdown_grace = %v; want %v", tt.name, fc.ShutdownGrace.Duration, tt.want)
		}
	}
}

func TestFitClients(t *testing.T) {
	tests := []struct {
		name       string
		maxClients int
		limit      uint64
		reserve    int
		want       int
		wantErr    string
	}{
		{"room for all", 10000, 1 << 20, 52, 10000, ""},
		{"lowered to the limit", 10000, 1024, 52, 972, ""},
		{"ulimit -n 64 over 3 nodes", 10000, 64, fdReserve(3, false), 20, ""},
		{"just enough", 100, 68, 52, 16, ""},
		{"too little", 100, 60, 52, 0, "open file limit (60) leaves 8 descriptors for clients after the 52 kept"},
		{"unlimited", 10000, ^uint64(0), 52, 10000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fitClients(tt.maxClients, tt.limit, tt.reserve)
			if got != tt.want || (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("fitClients(%d, %d, %d) = %d, %v; want %d, %q", tt.maxClients, tt.limit, tt.reserve, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
