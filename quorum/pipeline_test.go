package quorum

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// countingConn counts the writes on a node connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// testPipeline returns a pipeline to addr over a client with the node's
// settings, whose connections count their writes; both are closed when
// the test ends.
func testPipeline(t *testing.T, addr string) (*pipeline, *atomic.Int64) {
	t.Helper()
	writes := new(atomic.Int64)
	c := redis.NewClient(&redis.Options{
		Addr: addr, Protocol: 2, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialerRetries: 1, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: conn, writes: writes}, nil
		},
	})
	p := newPipeline(c, nil)
	t.Cleanup(func() {
		p.close()
		c.Close()
	})
	return p, writes
}

// waitQueued waits until n operations wait in p's queue.
func waitQueued(t *testing.T, p *pipeline, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(p.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d operations queued after 5s; want %d", len(p.queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// occupy sends a PING that finds the node idle and so is sent at once,
// and returns once it is in flight: on a frozen node it keeps the node
// busy until d or the thaw, and everything sent meanwhile queues.
func occupy(t *testing.T, wg *sync.WaitGroup, p *pipeline, d time.Duration) {
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		p.do(ctx, "ping")
	})
	deadline := time.Now().Add(5 * time.Second)
	for len(p.slot) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the PING did not take the node within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Many callers at once each get their own reply, not a neighbour's.
func TestPipelineRepliesInOrder(t *testing.T) {
	p, _ := testPipeline(t, startRedis(t).Addr)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			for j := range 50 {
				msg := fmt.Sprintf("msg-%d-%d", i, j)
				cmd, err := p.do(t.Context(), "echo", msg)
				if err != nil {
					t.Errorf("ECHO %s: %v", msg, err)
					return
				}
				if got := cmd.Val(); got != msg {
					t.Errorf("ECHO %s = %v", msg, got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Operations queued while the node is busy go out together, in one
// write, not one write each.
func TestPipelineCoalescesQueuedOperations(t *testing.T) {
	proc := startRedis(t)
	p, writes := testPipeline(t, proc.Addr)
	if _, err := p.do(t.Context(), "ping"); err != nil { // dial outside the count
		t.Fatalf("PING: %v", err)
	}
	proc.Freeze(t)
	start := writes.Load()
	var wg sync.WaitGroup
	occupy(t, &wg, p, 10*time.Second)
	const ops = 100
	var failed atomic.Int64
	for i := range ops {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			msg := fmt.Sprint("m", i)
			if cmd, err := p.do(ctx, "echo", msg); err != nil || cmd.Val() != msg {
				failed.Add(1)
			}
		})
	}
	waitQueued(t, p, ops-1) // the sender holds the first
	proc.Thaw()
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d operations failed", n, ops)
	}
	// One write for the PING and one for the batch; a new connection or a
	// split batch may add one or two.
	if got := writes.Load() - start; got > 4 {
		t.Errorf("a PING and %d operations queued behind it took %d writes; want at most 4", ops, got)
	}
}

// An operation whose deadline passes while it waits fails with its own
// deadline, is never sent, and does not hold up the operations behind it.
func TestPipelineExpiredOperationIsNotSent(t *testing.T) {
	proc := startRedis(t)
	admin := proc.admin(t)
	p, _ := testPipeline(t, proc.Addr)
	if _, err := p.do(t.Context(), "ping"); err != nil {
		t.Fatalf("PING: %v", err)
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.do(ctx, "set", "late", "x")
	if elapsed := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || elapsed > time.Second {
		t.Errorf("SET on a busy frozen node = %v after %v; want a deadline error after about 100ms", err, elapsed)
	}
	// The sender still holds the expired SET; a live one queues behind
	// it, and both go in one batch.
	wg.Go(func() {
		cmd, err := p.do(t.Context(), "set", "after", "x")
		if err != nil || cmd.Val() != "OK" {
			t.Errorf("SET after the expired one = %v, %v; want OK", cmd, err)
		}
	})
	waitQueued(t, p, 1)
	proc.Thaw()
	wg.Wait()
	if n, err := admin.Exists(t.Context(), "late").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS late = %d, %v; want 0: an expired operation was sent", n, err)
	}
}

// A batch that times out does not leave its connection in use: go-redis
// refuses a connection after a timeout, so every operation sent on it
// afterwards would fail at once, unsent.
func TestPipelineBatchTimeoutDropsConnection(t *testing.T) {
	proc := startRedis(t)
	admin := proc.admin(t)
	p, _ := testPipeline(t, proc.Addr)
	if _, err := p.do(t.Context(), "ping"); err != nil {
		t.Fatalf("PING: %v", err)
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 100*time.Millisecond)
	// Queued behind the PING, the SET goes out in a batch once the PING
	// times out, and times out in turn.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.do(ctx, "set", "batched", "x"); err == nil {
		t.Errorf("SET batched on a frozen node = nil; want a timeout")
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for len(p.slot) == 0 { // the sender ends the batch at its deadline
		if time.Now().After(deadline) {
			t.Fatalf("the batch still in flight after 5s")
		}
		time.Sleep(time.Millisecond)
	}
	proc.Thaw()
	if _, err := p.do(t.Context(), "set", "after", "x"); err != nil {
		t.Errorf("SET after a batch timed out = %v; want OK", err)
	}
	if n, err := admin.Exists(t.Context(), "after").Result(); err != nil || n != 1 {
		t.Errorf("EXISTS after = %d, %v; want 1", n, err)
	}
}

// A frozen node costs each caller its own deadline, whatever the
// deadlines of the operations batched with it.
func TestPipelineEachCallerWaitsOnlyForItsOwnDeadline(t *testing.T) {
	proc := startRedis(t)
	p, _ := testPipeline(t, proc.Addr)
	if _, err := p.do(t.Context(), "ping"); err != nil {
		t.Fatalf("PING: %v", err)
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	for _, d := range []time.Duration{time.Second, 100 * time.Millisecond, 600 * time.Millisecond, 150 * time.Millisecond} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), d)
			defer cancel()
			start := time.Now()
			_, err := p.do(ctx, "ping")
			elapsed := time.Since(start)
			if err == nil {
				t.Errorf("PING with deadline %v on a frozen node = nil; want an error", d)
			}
			if elapsed < d-10*time.Millisecond || elapsed > d+900*time.Millisecond {
				t.Errorf("PING with deadline %v returned after %v", d, elapsed)
			}
		})
	}
	wg.Wait()
}

// A script the node has not cached (or has flushed) runs by its body,
// both when sent alone and in a batch.
func TestPipelineResendsScriptTheNodeLacks(t *testing.T) {
	proc := startRedis(t)
	admin := proc.admin(t)
	p, _ := testPipeline(t, proc.Addr)
	s := newScript(`return ARGV[1]`)
	if cmd, err := p.eval(t.Context(), s, nil, "alone"); err != nil || cmd.Val() != "alone" {
		t.Errorf("script on an idle node = %v, %v; want alone", cmd, err)
	}
	if err := admin.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 10*time.Second)
	for i := range 20 {
		wg.Go(func() {
			want := fmt.Sprint("batched-", i)
			cmd, err := p.eval(t.Context(), s, nil, want)
			if err != nil || cmd.Val() != want {
				t.Errorf("script = %v, %v; want %s", cmd, err, want)
			}
		})
	}
	waitQueued(t, p, 19)
	proc.Thaw()
	wg.Wait()
}

// libScript is a script with a library form whose function returns its
// first argument and its form's name.
func libScript() *script {
	return newScript(`return {ARGV[1], "script"}`).withLibrary("rlp_test_lib", libraryForm{
		text: "#!lua name=rlp_test_lib\nredis.register_function('rlp_test_lib', function(k, a) return {a[1], 'library'} end)"})
}

// A library the node lacks (never loaded, or flushed) is loaded and its
// function called, both when sent alone and in a batch; one loaded
// meanwhile by another caller (LOAD: already exists) is called.
func TestPipelineLoadsLibraryTheNodeLacks(t *testing.T) {
	proc := startRedis(t)
	admin := proc.admin(t)
	p, _ := testPipeline(t, proc.Addr)
	s := libScript()
	check := func(cmd *redis.Cmd, err error, want string) {
		t.Helper()
		if v, _ := cmd.Slice(); err != nil || len(v) != 2 || v[0] != want || v[1] != "library" {
			t.Errorf("library call = %v, %v; want [%s library]", cmd, err, want)
		}
	}
	cmd, err := p.eval(t.Context(), s, nil, "alone")
	check(cmd, err, "alone")
	if err := admin.Do(t.Context(), "FUNCTION", "FLUSH").Err(); err != nil {
		t.Fatalf("FUNCTION FLUSH: %v", err)
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 10*time.Second)
	for i := range 20 {
		wg.Go(func() {
			want := fmt.Sprint("batched-", i)
			cmd, err := p.eval(t.Context(), s, nil, want)
			check(cmd, err, want)
		})
	}
	waitQueued(t, p, 19)
	proc.Thaw()
	wg.Wait()

	// The function was missing when called, the library is there when
	// loaded.
	<-p.slot
	lost := redis.NewCmd(t.Context(), "fcall", s.fn, 0, "raced")
	lost.SetErr(replyError("ERR Function not found"))
	cmd = p.retry(t.Context(), lost, s)
	p.slot <- struct{}{}
	check(cmd, cmd.Err(), "raced")
	if p.noFunctions.Load() || s.noLib.Load() {
		t.Errorf("noFunctions = %v, noLib = %v; want both false", p.noFunctions.Load(), s.noLib.Load())
	}
}

// A node without functions (miniredis-like: FCALL unknown) or whose ACL
// refuses them runs the script instead, and is not asked again.
func TestPipelineRunsScriptWhereFunctionsAreRefused(t *testing.T) {
	proc := startRedis(t)
	admin := proc.admin(t)
	if err := admin.Do(t.Context(), "ACL", "SETUSER", "default", "-fcall").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	p, _ := testPipeline(t, proc.Addr)
	var logs bytes.Buffer
	p.log = slog.New(slog.NewTextHandler(&logs, nil))
	s := libScript()
	for i := range 3 {
		cmd, err := p.eval(t.Context(), s, nil, "x")
		if v, _ := cmd.Slice(); err != nil || len(v) != 2 || v[1] != "script" {
			t.Fatalf("call %d = %v, %v; want it run as a script", i, cmd, err)
		}
	}
	if !p.noFunctions.Load() {
		t.Errorf("noFunctions = false after a refused FCALL")
	}
	if n := strings.Count(logs.String(), "node refuses functions"); n != 1 {
		t.Errorf("logged %d times that the node refuses functions; want once:\n%s", n, logs.String())
	}
	log, err := admin.Do(t.Context(), "ACL", "LOG").Slice()
	if err != nil || len(log) != 1 || !strings.Contains(fmt.Sprint(log[0]), "count 1 ") {
		t.Errorf("ACL LOG = %v, %v; want one refused FCALL", log, err)
	}
}

// A library that does not load (here: it does not compile) leaves its
// script to run as a script on every node.
func TestPipelineRunsScriptWhoseLibraryDoesNotLoad(t *testing.T) {
	proc := startRedis(t)
	p, _ := testPipeline(t, proc.Addr)
	var logs bytes.Buffer
	p.log = slog.New(slog.NewTextHandler(&logs, nil))
	s := libScript()
	s.lib = "#!lua name=rlp_test_lib\nthis is not Lua"
	for range 2 {
		cmd, err := p.eval(t.Context(), s, nil, "x")
		if v, _ := cmd.Slice(); err != nil || len(v) != 2 || v[1] != "script" {
			t.Fatalf("call = %v, %v; want it run as a script", cmd, err)
		}
	}
	if n := strings.Count(logs.String(), "library does not load"); n != 1 {
		t.Errorf("logged %d times that the library does not load; want once:\n%s", n, logs.String())
	}
	if !s.noLib.Load() || p.noFunctions.Load() {
		t.Errorf("noLib = %v, noFunctions = %v; want true, false", s.noLib.Load(), p.noFunctions.Load())
	}
}

// close stops the sender, fails the callers still queued, and leaves no
// goroutine behind.
func TestPipelineCloseLeavesNoGoroutine(t *testing.T) {
	proc := startRedis(t)
	before := runtime.NumGoroutine()
	c := redis.NewClient(&redis.Options{Addr: proc.Addr, Protocol: 2, MaxRetries: -1, ContextTimeoutEnabled: true, DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	p := newPipeline(c, nil)
	for range 10 {
		if _, err := p.do(t.Context(), "ping"); err != nil {
			t.Fatalf("PING: %v", err)
		}
	}
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 500*time.Millisecond)
	errs := make(chan error, 5)
	for range 5 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := p.do(ctx, "ping")
			errs <- err
		})
	}
	waitQueued(t, p, 4) // the sender holds the first
	start := time.Now()
	p.close()
	for range 5 {
		if err := <-errs; !errors.Is(err, errClosed) {
			t.Errorf("queued PING on a closed pipeline = %v; want %v", err, errClosed)
		}
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("queued callers waited %v after close; want no more than the PING in flight (500ms)", elapsed)
	}
	if _, err := p.do(t.Context(), "ping"); !errors.Is(err, errClosed) {
		t.Errorf("PING after close = %v; want %v", err, errClosed)
	}
	wg.Wait()
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 5s after close; %d before the pipeline", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
