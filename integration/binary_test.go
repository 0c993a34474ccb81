package integration

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// binProc is the real redlock-proxy binary running as a subprocess.
type binProc struct {
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
}

// startBinary runs the redlock-proxy binary in an empty working directory
// (so no config.toml is found) with -listen on a free loopback port and
// the given extra flags. The test ends by stopping it with SIGTERM and
// checking that it exits cleanly within a few seconds.
func startBinary(t *testing.T, args ...string) *binProc {
	t.Helper()
	return startBinaryEnv(t, nil, args...)
}

// startBinaryEnv is startBinary with env added to the process's
// environment.
func startBinaryEnv(t *testing.T, env []string, args ...string) *binProc {
	t.Helper()
	return startBinaryAt(t, buildProxyBinary(t), env, args...)
}

// startBinaryAt is startBinaryEnv with the binary at bin.
func startBinaryAt(t *testing.T, bin string, env []string, args ...string) *binProc {
	t.Helper()
	logs := newLogWriter(t)
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		b := &binProc{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), exited: make(chan struct{})}
		b.cmd = exec.Command(bin, append([]string{"-listen", b.Addr}, args...)...)
		b.cmd.Dir = t.TempDir()
		if env != nil {
			b.cmd.Env = append(os.Environ(), env...)
		}
		b.cmd.Stdout, b.cmd.Stderr = logs, logs
		if err := b.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		go func() { // waited for through exited, by stop or the cleanup
			b.cmd.Wait()
			close(b.exited)
		}()
		t.Cleanup(func() {
			select {
			case <-b.exited:
			default:
				b.stop(t)
			}
		})
		if b.waitServing(10 * time.Second) {
			return b
		}
		if attempt == 3 {
			t.Fatalf("redlock-proxy did not serve on %s within 10s", b.Addr)
		}
	}
}

// waitServing reports whether the process answers PING within timeout;
// false if it exited first (the port may have been taken meanwhile).
func (b *binProc) waitServing(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if redistest.Ping(b.Addr) == nil {
			return true
		}
		select {
		case <-b.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	b.cmd.Process.Kill()
	<-b.exited
	return false
}

// running reports whether the process has not exited.
func (b *binProc) running() bool {
	select {
	case <-b.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and checks that the process exits, successfully,
// within 5s; it is killed if not.
func (b *binProc) stop(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Errorf("SIGTERM: %v", err)
	}
	select {
	case <-b.exited:
		if !b.cmd.ProcessState.Success() {
			t.Errorf("redlock-proxy exited with %v after SIGTERM; want status 0", b.cmd.ProcessState)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("redlock-proxy still running 5s after SIGTERM")
		b.cmd.Process.Kill()
		<-b.exited
	}
}

// The real binary answers each malformed frame with -ERR Protocol error,
// closes that connection, and keeps serving everyone else.
func TestBinaryRejectsMalformedFramesAndKeepsServing(t *testing.T) {
	c := startNodes(t, 3)
	b := startBinary(t, "-nodes", strings.Join(c.addrs, ","))
	rdb := newClient(t, b.Addr, nil)
	tests := []struct {
		name   string
		input  string
		before []string // replies to commands pipelined before the bad frame
	}{
		{"bulk length 2^63-1", "*1\r\n$9223372036854775807\r\n", nil},
		{"100 million arguments", "*100000000\r\n", nil},
		{"huge inline command", strings.Repeat("x", 1<<20) + "\r\n", nil},
		{"negative bulk length", "*1\r\n$-5\r\n", nil},
		{"bulk over max_bulk", "*2\r\n$3\r\nGET\r\n$10000000\r\n", nil},
		{"after a good command", "PING\r\n*1\r\n$9223372036854775807\r\n", []string{"+PONG"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := dialRaw(t, b.Addr)
			// The server may close before reading all of a huge input; what
			// it does not read is not an error of the test.
			raw.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			raw.c.Write([]byte(tt.input))
			for j, want := range tt.before {
				if got := raw.reply(); got != want {
					t.Errorf("reply %d = %s; want %s", j, got, want)
				}
			}
			raw.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := readReply(raw.r)
			if err != nil || !strings.HasPrefix(got, "-ERR Protocol error") {
				t.Fatalf("reply to %.40q = %q, %v; want -ERR Protocol error…", tt.input, got, err)
			}
			raw.wantClosed(2 * time.Second)

			if !b.running() {
				t.Fatalf("redlock-proxy exited after %.40q: %v", tt.input, b.cmd.ProcessState)
			}
			if got := dialRaw(t, b.Addr).do("PING"); got != "+PONG" {
				t.Errorf("PING on a new connection = %s; want +PONG", got)
			}
			key := fmt.Sprintf("after-%d", i)
			if got, err := rdb.Do(t.Context(), "SET", key, "tok", "NX", "PX", "5000").Result(); err != nil || got != "OK" {
				t.Errorf("SET %s = %v, %v; want OK", key, got, err)
			}
			c.wantHeldEverywhere(t, key, "tok", 5*time.Second)
		})
	}
}

// With no nodes and no config file the binary runs in demo mode over
// embedded nodes, where a lock is granted, contended, and expires.
func TestBinaryDemoModeWithoutNodes(t *testing.T) {
	b := startBinary(t)
	rdb := newClient(t, b.Addr, nil)
	ctx := t.Context()
	// The demo keeps the default 50ms node_timeout, which a loaded test
	// machine can miss; NOQUORUM means "not decided, try again".
	set := func(token string) (any, error) {
		for range 5 {
			got, err := rdb.Do(ctx, "SET", "demo", token, "NX", "PX", "1000").Result()
			if err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
				return got, err
			}
			t.Logf("SET demo %s: %v", token, err)
		}
		return nil, errors.New("NOQUORUM 5 times")
	}
	if got, err := set("tok"); err != nil || got != "OK" {
		t.Fatalf("SET demo tok NX PX 1000 = %v, %v; want OK", got, err)
	}
	start := time.Now()
	if got, err := set("other"); !errors.Is(err, redis.Nil) {
		t.Errorf("second SET = %v, %v; want nil", got, err)
	}
	if got, err := rdb.Get(ctx, "demo").Result(); err != nil || got != "tok" {
		t.Errorf("GET demo = %q, %v; want tok", got, err)
	}
	for {
		_, err := rdb.Get(ctx, "demo").Result()
		if errors.Is(err, redis.Nil) {
			break
		}
		// While the key expires node by node, a node slower than the
		// default 50ms node_timeout could have tipped the count: that is
		// NOQUORUM, rightly. Anything else is a failure.
		if err != nil && !strings.HasPrefix(err.Error(), "NOQUORUM") {
			t.Fatalf("GET demo: %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the 1s lock is still held after %v", time.Since(start))
		}
		time.Sleep(25 * time.Millisecond)
	}
	// GET is conservative: it calls the lock free once the validity left
	// on a quorum is gone, a few milliseconds before every node has
	// dropped the key. So the next SET may still be denied, briefly.
	for {
		got, err := rdb.Do(ctx, "SET", "demo", "other", "NX", "PX", "500").Result()
		if err == nil && got == "OK" {
			break
		}
		if err != nil && !errors.Is(err, redis.Nil) && !strings.HasPrefix(err.Error(), "NOQUORUM") {
			t.Fatalf("SET after expiry: %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("SET after expiry = %v, %v %v after the first SET; want OK", got, err, time.Since(start))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// -h prints every flag.
func TestBinaryHelpListsFlags(t *testing.T) {
	bin := buildProxyBinary(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-h")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("redlock-proxy -h: %v", err)
	}
	for _, flag := range []string{"-config", "-listen", "-nodes"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("redlock-proxy -h does not mention %s:\n%s", flag, out)
		}
	}
}

// -probe URL exits 0 when the URL answers 200 and 1 otherwise: the
// image's health check on the admin port's /readyz (deploy/Dockerfile).
func TestBinaryProbeChecksReadyz(t *testing.T) {
	admin := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	conf := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("admin_listen = %q\nshutdown_grace = \"0s\"\n", admin)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "-config", conf)
	probe := func(url string) error {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return exec.CommandContext(ctx, buildProxyBinary(t), "-probe", url).Run()
	}
	deadline := time.Now().Add(10 * time.Second)
	for probe("http://"+admin+"/readyz") != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redlock-proxy -probe http://%s/readyz never exited 0", admin)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var ee *exec.ExitError
	if err := probe("http://" + admin + "/nothing-here"); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("-probe of a 404 = %v; want exit status 1", err)
	}
	b.stop(t)
	if err := probe("http://" + admin + "/readyz"); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("-probe of a stopped proxy = %v; want exit status 1", err)
	}
}
