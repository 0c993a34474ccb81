package app

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/leakcheck"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// TestMain fails the package if its tests leave goroutines running, such
// as the demo nodes' clock or the admin server after Close.
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }

// logBuffer is an io.Writer the app logs to, safe to read while it runs.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// In-process, on one demo node: New serves at once; Reload applies a live
// key, names a static one, refuses a bad file and keeps what runs; Run
// ends with its context, through the drain.
func TestAppReloadsAndDrains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "listen = \"127.0.0.1:0\"\nembedded_nodes = 1\nadmin_listen = \"127.0.0.1:0\"\nshutdown_grace = \"10s\"\n"
	write(base)
	logs := &logBuffer{}
	a, err := New(Options{ConfigPath: path, ConfigGiven: true, Log: logs})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	addr := a.ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }() // waited for below
	if err := redistest.Ping(addr); err != nil {
		t.Fatalf("PING %s: %v", addr, err)
	}

	write(base + "log_level = \"debug\"\nmax_ttl = \"1m\"\ncommand_timeout = \"3s\"\n")
	if err := a.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	// A command in flight at shutdown may take the reloaded command_timeout.
	if got := flushTime(a.pc); got != 4*time.Second {
		t.Errorf("flush time after reloading command_timeout 3s = %v; want 4s", got)
	}
	if a.level.Level() != slog.LevelDebug {
		t.Errorf("log level after Reload = %v; want DEBUG", a.level.Level())
	}
	if !strings.Contains(logs.String(), "key=max_ttl running=5m0s file=1m0s") {
		t.Errorf("Reload did not name max_ttl as not changed live; logs:\n%s", logs)
	}
	write(base + "log_level = \"loud\"\n")
	if err := a.Reload(); err == nil || !strings.Contains(err.Error(), `log_level ("loud")`) {
		t.Errorf("Reload(bad log_level) = %v; want it refused naming log_level", err)
	}
	if a.level.Level() != slog.LevelDebug {
		t.Errorf("log level after a refused Reload = %v; want DEBUG still", a.level.Level())
	}
	write(base + "shutdown_grace = \"0s\"\n")
	if err := a.Reload(); err == nil || !strings.Contains(err.Error(), "shutdown_grace") {
		t.Errorf("Reload(shutdown_grace twice) = %v; want it refused", err)
	}

	// A client stays connected: the drain lasts until shutdown_grace (10s)
	// unless the client leaves, which it does once Run is draining.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for !a.srv.Draining() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !a.srv.Draining() {
		t.Fatalf("not draining 5s after Run's context ended")
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while a client was still connected within shutdown_grace", err)
	case <-time.After(100 * time.Millisecond):
	}
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v; want nil after a drain", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Run still running 5s after the last client left")
	}
	if !strings.Contains(logs.String(), "msg=draining") || !strings.Contains(logs.String(), `msg="shutting down"`) {
		t.Errorf("logs lack the drain and the shutdown:\n%s", logs)
	}
}

// New refuses what cannot start and leaves nothing running (TestMain
// checks the goroutines).
func TestNewRefusesAndCleansUp(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path := filepath.Join(t.TempDir(), "config.toml")
	text := "listen = \"127.0.0.1:0\"\nembedded_nodes = 1\nadmin_listen = \"" + taken.Addr().String() + "\"\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{ConfigPath: path, ConfigGiven: true, Log: &logBuffer{}}); err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Errorf("New with admin_listen taken = %v; want an error naming it", err)
	}
}
