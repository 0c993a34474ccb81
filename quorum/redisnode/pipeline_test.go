package redisnode

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

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
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

// testPipeline returns a pipeline to addr whose connections count their
// writes; it is closed when the test ends.
func testPipeline(t *testing.T, addr string) (*pipeline, *atomic.Int64) {
	t.Helper()
	writes := new(atomic.Int64)
	p := newPipeline(addr, countingDial(addr, writes, false), nil)
	t.Cleanup(p.close)
	return p, writes
}

// handshakePipeline is testPipeline whose connections, like the node's
// while the engine watches run_ids, each make a round trip (a PING)
// before they carry a command: on a frozen node the first write waits in
// the dial, and everything sent meanwhile queues.
func handshakePipeline(t *testing.T, addr string) (*pipeline, *atomic.Int64) {
	t.Helper()
	writes := new(atomic.Int64)
	p := newPipeline(addr, countingDial(addr, writes, true), nil)
	t.Cleanup(p.close)
	return p, writes
}

func countingDial(addr string, writes *atomic.Int64, handshake bool) func(context.Context) (net.Conn, *wire.Reader, error) {
	return func(ctx context.Context) (net.Conn, *wire.Reader, error) {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, nil, err
		}
		c := countingConn{Conn: conn, writes: writes}
		rd := wire.NewReader(c, 512)
		if handshake {
			if _, err := roundTrip(c, rd, "ping"); err != nil {
				c.Close()
				return nil, nil, err
			}
		}
		return c, rd, nil
	}
}

// inFlight is how many operations wait for their replies.
func (p *pipeline) inFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for cn := range p.conns {
		cn.mu.Lock()
		n += len(cn.inflight) - cn.head
		cn.mu.Unlock()
	}
	return n
}

// waitFor waits up to 5s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s after 5s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitQueued waits until n operations wait in p's queue.
func waitQueued(t *testing.T, p *pipeline, n int) {
	t.Helper()
	waitFor(t, fmt.Sprint(n, " operations queued"), func() bool { return p.queued() >= n })
}

// waitInFlight waits until n operations are in flight.
func waitInFlight(t *testing.T, p *pipeline, n int) {
	t.Helper()
	waitFor(t, fmt.Sprint(n, " operations in flight"), func() bool { return p.inFlight() >= n })
}

// pingThenFreeze has p's connection up, then freezes proc.
func pingThenFreeze(t *testing.T, p *pipeline, proc *redisProc) {
	t.Helper()
	if _, err := p.do(t.Context(), "ping"); err != nil {
		t.Fatalf("PING: %v", err)
	}
	proc.Freeze(t)
}

// occupy sends a PING and returns once it is written (or, on a
// handshakePipeline, being written): on a frozen node it waits until d or
// the thaw.
func occupy(t *testing.T, wg *sync.WaitGroup, p *pipeline, d time.Duration) {
	t.Helper()
	wg.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		p.do(ctx, "ping")
	})
	waitFor(t, "the PING under way", func() bool {
		p.mu.Lock()
		w := p.writing
		p.mu.Unlock()
		return w || p.inFlight() > 0
	})
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

// Operations queued while a write is under way (here: the first, which
// waits for its connection's handshake with a frozen node) go out
// together, in one write, not one write each.
func TestPipelineCoalescesQueuedOperations(t *testing.T) {
	proc := startRedis(t)
	p, writes := handshakePipeline(t, proc.Addr)
	proc.Freeze(t)
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
	waitQueued(t, p, ops)
	proc.Thaw()
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d operations failed", n, ops)
	}
	// One write for the handshake, one for the PING (the writer's batch)
	// and one for what queued behind it; a split batch may add one.
	if got := writes.Load(); got > 4 {
		t.Errorf("a PING and %d operations queued behind it took %d writes; want at most 4", ops, got)
	}
}

// Operations go out at once, whatever is in flight: several batches are
// in flight together on a frozen node, and each caller gets its own
// reply, in order, once it thaws.
func TestPipelineManyBatchesInFlight(t *testing.T) {
	proc := startRedis(t)
	p, writes := testPipeline(t, proc.Addr)
	pingThenFreeze(t, p, proc)
	start := writes.Load()
	var wg sync.WaitGroup
	const ops = 10
	for i := range ops {
		wg.Go(func() {
			msg := fmt.Sprint("m", i)
			if cmd, err := p.do(t.Context(), "echo", msg); err != nil || cmd.Val() != msg {
				t.Errorf("ECHO %s = %v, %v", msg, cmd.Val(), err)
			}
		})
		waitInFlight(t, p, i+1) // written before the one before it has a reply
	}
	// An operation is in flight just before its write: wait for the last
	// one's (fewer writes than operations never come, and fail here).
	waitFor(t, fmt.Sprint(ops, " writes"), func() bool { return writes.Load()-start >= ops })
	if got := writes.Load() - start; got != ops {
		t.Errorf("%d operations sent one after another on a frozen node took %d writes; want %d", ops, got, ops)
	}
	proc.Thaw()
	wg.Wait()
}

// An operation whose deadline passes while it waits for the writer fails
// with its own deadline, is never sent, and does not hold up the
// operations behind it.
func TestPipelineExpiredOperationIsNotSent(t *testing.T) {
	proc := startRedis(t)
	admin := proc.Client(t)
	p, _ := handshakePipeline(t, proc.Addr)
	proc.Freeze(t)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 10*time.Second)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.do(ctx, "set", "late", "x")
	if elapsed := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || elapsed > time.Second {
		t.Errorf("SET behind a write under way on a frozen node = %v after %v; want a deadline error after about 100ms", err, elapsed)
	}
	// The expired SET still waits in the queue; a live one queues behind
	// it, and both go in one batch.
	wg.Go(func() {
		cmd, err := p.do(t.Context(), "set", "after", "x")
		if err != nil || cmd.Val() != "OK" {
			t.Errorf("SET after the expired one = %v, %v; want OK", cmd, err)
		}
	})
	waitQueued(t, p, 2)
	proc.Thaw()
	wg.Wait()
	if n, err := admin.Exists(t.Context(), "late").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS late = %d, %v; want 0: an expired operation was sent", n, err)
	}
}

// A reply overdue past its operation's deadline drops the connection
// (and with it every reply still to come on it), and the next operation
// goes out on a new one.
func TestPipelineBatchTimeoutDropsConnection(t *testing.T) {
	proc := startRedis(t)
	admin := proc.Client(t)
	p, _ := testPipeline(t, proc.Addr)
	pingThenFreeze(t, p, proc)
	var wg sync.WaitGroup
	occupy(t, &wg, p, 100*time.Millisecond)
	// Sent behind the PING, the SET times out in turn.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if _, err := p.do(ctx, "set", "batched", "x"); err == nil {
		t.Errorf("SET batched on a frozen node = nil; want a timeout")
	}
	wg.Wait()
	waitFor(t, "the connection dropped", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.conn.Load() == nil && len(p.conns) == 0
	})
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
	pingThenFreeze(t, p, proc)
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
	admin := proc.Client(t)
	p, _ := testPipeline(t, proc.Addr)
	s := newScript(`return ARGV[1]`)
	if cmd, err := p.eval(t.Context(), s, nil, "alone"); err != nil || cmd.Val() != "alone" {
		t.Errorf("script on an idle node = %v, %v; want alone", cmd, err)
	}
	if err := admin.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	// The lock operations' path, without go-redis's commands.
	call := scriptCall(s, nil, []any{"called"}, func(v any, err error) (any, error) { return v, err })
	if v, err := runCall(t.Context(), p, call); err != nil || v != "called" {
		t.Errorf("script by call on an idle node = %v, %v; want called", v, err)
	}
	if err := admin.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	evalBatched(t, proc, p, s, func(cmd *redis.Cmd, err error, want string) {
		if err != nil || cmd.Val() != want {
			t.Errorf("script = %v, %v; want %s", cmd, err, want)
		}
	})
}

// evalBatched freezes proc, sends 20 runs of s on p behind a PING, all
// in flight together, thaws proc and checks each answer.
func evalBatched(t *testing.T, proc *redisProc, p *pipeline, s *script, check func(cmd *redis.Cmd, err error, want string)) {
	t.Helper()
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
	waitInFlight(t, p, 21)
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
	admin := proc.Client(t)
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
	evalBatched(t, proc, p, s, check)

	// The function was missing when called, the library is there when
	// loaded.
	lost := redis.NewCmd(t.Context(), "fcall", s.fn, 0, "raced")
	lost.SetErr(replyError("ERR Function not found"))
	cmd = p.retry(t.Context(), lost, s)
	check(cmd, cmd.Err(), "raced")
	if p.noFunctions.Load() || s.noLib.Load() {
		t.Errorf("noFunctions = %v, noLib = %v; want both false", p.noFunctions.Load(), s.noLib.Load())
	}
}

// A node without functions (miniredis-like: FCALL unknown) or whose ACL
// refuses them runs the script instead, and is not asked again.
func TestPipelineRunsScriptWhereFunctionsAreRefused(t *testing.T) {
	proc := startRedis(t)
	admin := proc.Client(t)
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

// close fails the callers waiting, closes the connection, and leaves no
// goroutine behind.
func TestPipelineCloseLeavesNoGoroutine(t *testing.T) {
	proc := startRedis(t)
	before := runtime.NumGoroutine()
	p := newPipeline(proc.Addr, countingDial(proc.Addr, new(atomic.Int64), false), nil)
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
	waitInFlight(t, p, 6)
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
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 5s after close; %d before the pipeline", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A connection that drops in the middle of a batch's replies gives each
// operation answered before the drop its own reply, fails the others at
// once (not at their deadlines) with an error that is not an answer, and
// the next operation goes out on a new connection.
func TestPipelineConnectionDroppedMidBatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	const ops, answered = 6, 3
	served := make(chan error, 2)
	go func() {
		// The first connection: read all the commands, answer some, send
		// half of the next reply, and close.
		c, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		var got []byte
		buf := make([]byte, 4096)
		for n := 0; n < ops; {
			m, err := c.Read(buf)
			if err != nil {
				served <- err
				return
			}
			got = append(got, buf[:m]...)
			for {
				_, size, err := wire.Parse(got)
				if err != nil || size == 0 {
					break
				}
				got, n = got[size:], n+1
			}
		}
		var out []byte
		for i := range answered {
			out = wire.AppendBulk(out, fmt.Sprint("m", i))
		}
		out = append(out, "$2\r\nm"...)
		c.Write(out)
		c.Close()
		// The second: answer one PING.
		c, err = ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer c.Close()
		if _, err := c.Read(buf); err != nil {
			served <- err
			return
		}
		_, err = c.Write([]byte("+PONG\r\n"))
		served <- err
	}()
	p, _ := testPipeline(t, ln.Addr().String())
	var wg sync.WaitGroup
	errs := make([]error, ops)
	vals := make([]any, ops)
	start := time.Now()
	for i := range ops {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			cmd, err := p.do(ctx, "echo", fmt.Sprint("m", i))
			vals[i], errs[i] = cmd.Val(), err
		})
		if i < ops-1 {
			waitInFlight(t, p, i+1) // in this order; the last is answered at once
		}
	}
	wg.Wait()
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("the callers waited %v; want them failed at the drop, not at their 5s deadlines", elapsed)
	}
	for i := range ops {
		switch {
		case i < answered && (errs[i] != nil || vals[i] != fmt.Sprint("m", i)):
			t.Errorf("ECHO m%d = %v, %v; want its own reply", i, vals[i], errs[i])
		case i >= answered && (errs[i] == nil || timeout(errs[i]) || errors.Is(errs[i], redis.Nil)):
			t.Errorf("ECHO m%d after the drop = %v, %v; want an I/O error", i, vals[i], errs[i])
		}
	}
	if cmd, err := p.do(t.Context(), "ping"); err != nil || cmd.Val() != "PONG" {
		t.Errorf("PING after the drop = %v, %v; want PONG on a new connection", cmd.Val(), err)
	}
	if err := <-served; err != nil {
		t.Errorf("server: %v", err)
	}
}

// A node that dies with operations in flight fails them at once, not at
// their deadlines.
func TestPipelineNodeKilledWithBatchesInFlight(t *testing.T) {
	proc := startRedis(t)
	p, _ := testPipeline(t, proc.Addr)
	pingThenFreeze(t, p, proc)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range 5 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			if _, err := p.do(ctx, "set", fmt.Sprint("k", i), "x"); err == nil || timeout(err) {
				t.Errorf("SET on a node killed meanwhile = %v; want an I/O error", err)
			}
		})
	}
	waitInFlight(t, p, 5)
	proc.Kill()
	wg.Wait()
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Errorf("the callers waited %v; want them failed when the node died", elapsed)
	}
}

// A reply that arrives after its operation's deadline is not an answer,
// even on a connection that stays up (the oldest operation in flight has
// time left): its caller has its deadline error, and the next operation
// gets its own reply, not the late one.
func TestPipelineLateReplyIsNotAnAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Echo each command's last argument; "slow" after 300ms.
		var got []byte
		buf := make([]byte, 4096)
		for {
			m, err := c.Read(buf)
			if err != nil {
				return
			}
			got = append(got, buf[:m]...)
			for {
				v, size, err := wire.Parse(got)
				if err != nil || size == 0 {
					break
				}
				got = got[size:]
				args, _ := v.([]any)
				msg, _ := args[len(args)-1].(string)
				if msg == "slow" {
					time.Sleep(300 * time.Millisecond)
				}
				c.Write(wire.AppendBulk(nil, msg))
			}
		}
	}()
	p, _ := testPipeline(t, ln.Addr().String())
	var wg sync.WaitGroup
	wg.Go(func() {
		if cmd, err := p.do(t.Context(), "echo", "slow"); err != nil || cmd.Val() != "slow" {
			t.Errorf("ECHO slow = %v, %v; want slow", cmd.Val(), err)
		}
	})
	waitInFlight(t, p, 1)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if cmd, err := p.do(ctx, "echo", "late"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ECHO late, answered after its deadline = %v, %v; want %v", cmd.Val(), err, context.DeadlineExceeded)
	}
	if cmd, err := p.do(t.Context(), "echo", "next"); err != nil || cmd.Val() != "next" {
		t.Errorf("ECHO next = %v, %v; want next", cmd.Val(), err)
	}
	wg.Wait()
}

// A new connection kills a dropped one by its CLIENT ID only on the
// process that gave the ID: after a restart, the ID may be another
// client's (here a bystander's), which must live.
func TestPipelineSettleKillsOnlyOnTheSameProcess(t *testing.T) {
	for _, tt := range []struct {
		name   string
		same   bool // the ref's run_id is the node's
		killed bool
	}{
		{"the same process: killed", true, true},
		{"another process (restarted): left alone", false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			proc := startRedis(t)
			n := proc.node(t)
			var runID atomic.Value
			n.WatchConnects(func(id string) { runID.Store(id) })
			if _, err := n.p.do(t.Context(), "ping"); err != nil {
				t.Fatalf("PING: %v", err)
			}
			bystander := proc.Client(t)
			conn := bystander.Conn()
			t.Cleanup(func() { conn.Close() })
			id, err := conn.ClientID(t.Context()).Result()
			if err != nil {
				t.Fatalf("CLIENT ID: %v", err)
			}
			ref := clientRef{id: id, runID: "another process's run_id"}
			if tt.same {
				ref.runID = runID.Load().(string)
			}
			n.p.mu.Lock()
			n.p.unsettled = append(n.p.unsettled, ref)
			n.p.mu.Unlock()
			n.p.stale.Store(true) // the next write dials again, and settles
			if _, err := n.p.do(t.Context(), "ping"); err != nil {
				t.Fatalf("PING on a new connection: %v", err)
			}
			if err := conn.Ping(t.Context()).Err(); (err != nil) != tt.killed {
				t.Errorf("the bystander's PING after the settle = %v; want killed %v", err, tt.killed)
			}
		})
	}
}

// timeout reports whether err is a network timeout.
func timeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// An op given up on a frozen node marks its dropped connection for a
// kill, on the lock operations' pipeline (an op sent alone, as a
// give-back is, could undo a later grant as a fan-out's can: attack18
// A1), not on the pipeline of the writes that may land late (A4).
func TestPipelineGivenUpOpMarksItsConnectionUnlessItMayLandLate(t *testing.T) {
	for _, late := range []bool{false, true} {
		t.Run(fmt.Sprintf("late %v", late), func(t *testing.T) {
			proc := startRedis(t)
			n := proc.node(t)
			n.WatchConnects(func(string) {}) // the handshake asks CLIENT ID
			p := n.p
			if late {
				p = n.lp
			}
			pingThenFreeze(t, p, proc)
			ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
			defer cancel()
			if _, err := p.do(ctx, "set", "k", "v"); err == nil {
				t.Fatal("SET on a frozen node answered")
			}
			marked := false
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && !marked; time.Sleep(10 * time.Millisecond) {
				p.mu.Lock()
				marked = len(p.unsettled) > 0
				p.mu.Unlock()
				if late && p.conn.Load() == nil {
					break // dropped, and not marked
				}
			}
			if marked == late {
				t.Errorf("connection marked for a kill = %v; want %v", marked, !late)
			}
			if p.conn.Load() != nil {
				t.Error("the connection with the op given up on was not dropped")
			}
		})
	}
}

// The decided publishes, the latch's rounds and the counters' seeding go
// on the pipeline whose connections are never killed; lock operations
// and reads on the other.
func TestLateWritesGoOnTheirOwnPipeline(t *testing.T) {
	n := startRedis(t).node(t)
	ctx := t.Context()
	if err := n.Publish(ctx, "publish", "ch", "m", 0); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if _, err := n.LatchSet(ctx, "L", 1, 7); err != nil {
		t.Fatalf("LatchSet: %v", err)
	}
	if _, err := n.MarkCounters(ctx, "id"); err != nil {
		t.Fatalf("MarkCounters: %v", err)
	}
	if n.lp.conn.Load() == nil || n.p.conn.Load() != nil {
		t.Fatalf("after a publish, a latch set and a counters' mark: late pipeline connected %v, lock pipeline %v; want true, false",
			n.lp.conn.Load() != nil, n.p.conn.Load() != nil)
	}
	if _, err := n.Inspect(ctx, "k"); err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if n.p.conn.Load() == nil {
		t.Error("a read went on the late pipeline")
	}
}

// A connection retired (its node marked down) with an op in flight lets
// the op finish while the next command goes on a new connection. The
// connections are pipes, whose replies no write of the retiring
// goroutine orders (a socket's would, for the race detector), so under
// -race this fails if retire reads the op after it released the
// connection (it read each op's kind before 1a63f56; now it reads none).
func TestPipelineRetireLetsTheOpInFlightFinish(t *testing.T) {
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	// serve answers each command on c with reply, after delay.
	serve := func(c net.Conn, delay time.Duration, reply string) {
		wg.Go(func() {
			rd := wire.NewReader(c, 512)
			for {
				if _, err := rd.Next(); err != nil {
					return
				}
				time.Sleep(delay)
				if _, err := c.Write([]byte(reply)); err != nil {
					return
				}
			}
		})
	}
	var dials atomic.Int32
	p := newPipeline("pipe", func(context.Context) (net.Conn, *wire.Reader, error) {
		c, s := net.Pipe()
		t.Cleanup(func() { s.Close() })
		if dials.Add(1) == 1 {
			serve(s, 200*time.Millisecond, "$-1\r\n") // a slow nil: the op in flight
		} else {
			serve(s, 0, "+PONG\r\n")
		}
		return &clientConn{Conn: c, id: int64(dials.Load())}, wire.NewReader(c, 512), nil
	}, nil)
	t.Cleanup(p.close)
	var get sync.WaitGroup
	defer get.Wait()
	get.Go(func() {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if _, err := p.do(ctx, "get", "k"); !errors.Is(err, redis.Nil) {
			t.Errorf("GET = %v; want redis.Nil", err)
		}
	})
	waitInFlight(t, p, 1)
	p.stale.Store(true)
	if _, err := p.do(t.Context(), "ping"); err != nil {
		t.Fatalf("PING after the node was marked down: %v", err)
	}
	if dials.Load() != 2 {
		t.Errorf("dials = %d; want 2 (the first connection retired)", dials.Load())
	}
}

// TestPipelineNewConnectionSendsNoOpItsRoundTripWouldMakeLate: an op
// with less time left, once a new connection is dialed, than the dial's
// round trip is not sent, so the connection is not dropped with it
// unanswered, and the next op uses it (attack18's slow link: each new
// connection paid its handshake and the kill of the last one, its op
// came back overdue, and locking never resumed).
func TestPipelineNewConnectionSendsNoOpItsRoundTripWouldMakeLate(t *testing.T) {
	const rtt = 150 * time.Millisecond
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	var dials, commands atomic.Int32
	p := newPipeline("slow", func(context.Context) (net.Conn, *wire.Reader, error) {
		dials.Add(1)
		time.Sleep(rtt) // the handshake's round trip
		c, s := net.Pipe()
		t.Cleanup(func() { s.Close() })
		wg.Go(func() {
			rd := wire.NewReader(s, 512)
			for {
				if _, err := rd.Next(); err != nil {
					return
				}
				commands.Add(1)
				time.Sleep(rtt)
				if _, err := s.Write([]byte("+PONG\r\n")); err != nil {
					return
				}
			}
		})
		return &clientConn{Conn: c, id: 1}, wire.NewReader(c, 512), nil
	}, nil)
	t.Cleanup(p.close)
	ctx, cancel := context.WithTimeout(t.Context(), rtt+rtt/3)
	defer cancel()
	if _, err := p.do(ctx, "ping"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PING with a third of a round trip left after the dial = %v; want a deadline error", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 10*rtt)
	defer cancel()
	if _, err := p.do(ctx, "ping"); err != nil {
		t.Fatalf("the next PING: %v", err)
	}
	if d, c := dials.Load(), commands.Load(); d != 1 || c != 1 {
		t.Errorf("dials = %d, commands the node got = %d; want 1 and 1 (the late op not sent, its connection kept)", d, c)
	}
}
