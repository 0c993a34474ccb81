package integration

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// procStatusKB is a field of /proc/<pid>/status in KiB, such as "VmHWM"
// (peak resident memory) or "VmRSS".
func procStatusKB(t testing.TB, pid int, field string) int64 {
	t.Helper()
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for line := range strings.Lines(string(s)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("%s %q: %v", field, line, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// procCPU is the CPU time the process has used, from /proc/<pid>/stat.
func procCPU(t testing.TB, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read stat of %d: %v", pid, err)
	}
	// utime and stime are the 12th and 13th fields after the name, which
	// is in parentheses; in clock ticks of 10ms.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var total time.Duration
	for _, s := range f[11:13] {
		ticks, _ := strconv.ParseInt(s, 10, 64)
		total += time.Duration(ticks) * 10 * time.Millisecond
	}
	return total
}

// The attack: one command of 1024 arguments of 512 KiB each, 512
// MiB in all, which the per-argument limits allow. It once grew the proxy
// to 1.74 GB. Now it is refused once it passes max_command (1 MiB): the
// client gets Redis's protocol-error reply and is closed, the proxy's peak
// memory stays small, and other clients keep working.
func TestHugeCommandRefusedWithBoundedMemory(t *testing.T) {
	c := startNodes(t, 3)
	b := startBinary(t, "-nodes", strings.Join(c.addrs, ","))
	pid := b.cmd.Process.Pid
	other := newClient(t, b.Addr, nil)
	if err := other.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING before: %v", err)
	}
	hwmBefore, cpuBefore := procStatusKB(t, pid, "VmHWM"), procCPU(t, pid)

	conn, err := net.Dial("tcp", b.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	replies := make(chan string, 1)
	go func() { // waited for below, through replies
		got, _ := io.ReadAll(conn) // until the proxy closes, or a reset
		replies <- string(got)
	}()
	arg := []byte("$524288\r\n" + strings.Repeat("v", 512<<10) + "\r\n")
	sent := 0
	start := time.Now()
	if n, err := io.WriteString(conn, "*1024\r\n"); err == nil {
		sent += n
		for range 1024 {
			n, err := conn.Write(arg)
			sent += n
			if err != nil {
				break // the proxy closed the connection
			}
		}
	}
	got := <-replies
	took := time.Since(start)
	hwm, cpu := procStatusKB(t, pid, "VmHWM"), procCPU(t, pid)
	t.Logf("512 MiB command: %d bytes sent in %v; proxy peak RSS %d -> %d KiB, CPU %v", sent, took.Round(time.Millisecond), hwmBefore, hwm, (cpu - cpuBefore).Round(10*time.Millisecond))

	if want := "-ERR Protocol error: too big command\r\n"; got != want {
		t.Errorf("reply to a 512 MiB command = %.80q; want %q and the connection closed", got, want)
	}
	if sent > 64<<20 {
		t.Errorf("the proxy read %d MiB of one command before refusing it; want it refused near max_command (1 MiB)", sent>>20)
	}
	if hwm > 100<<10 {
		t.Errorf("proxy peak RSS = %d MiB after a 512 MiB command; want under 100 MiB", hwm>>10)
	}
	if err := other.Ping(t.Context()).Err(); err != nil {
		t.Errorf("another client's PING after the attack: %v", err)
	}
	if err := other.SetNX(t.Context(), "k", "t", time.Second).Err(); err != nil {
		t.Errorf("another client's SET NX after the attack: %v", err)
	}
}

// A client that pipelines commands and never reads a reply is closed
// after idle_timeout, as Redis's timeout closes it: once the replies fill
// the socket buffers, the proxy's write stalls, and a write stalled for
// idle_timeout ends the connection. Clients that read are not affected.
func TestIdleTimeoutClosesClientThatNeverReads(t *testing.T) {
	const idle = 500 * time.Millisecond
	_, p := setup(t, 3, proxy.Config{IdleTimeout: idle})
	conn, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Each ECHO's reply is as long as its argument, so the buffers fill
	// within a few MiB; the deadline only bounds a test that fails.
	conn.SetWriteDeadline(time.Now().Add(20 * time.Second))
	cmd := []byte(encodeCommand("ECHO", strings.Repeat("r", 16<<10)))
	start := time.Now()
	var werr error
	sent := 0
	for sent < 256<<20 && werr == nil {
		var n int
		n, werr = conn.Write(cmd)
		sent += n
	}
	took := time.Since(start)
	t.Logf("wrote %d KiB without reading; write ended after %v: %v", sent>>10, took.Round(time.Millisecond), werr)
	var ne net.Error
	switch {
	case werr == nil:
		t.Fatalf("wrote %d MiB of ECHOs without reading, and the proxy still reads them; want it to stop and close", sent>>20)
	case errors.As(werr, &ne) && ne.Timeout():
		t.Errorf("the proxy kept a client that never reads open for %v; want it closed about idle_timeout (%v) after its writes stalled", took.Round(time.Millisecond), idle)
	}
	if got := dialRaw(t, p.Addr).do("PING"); got != "+PONG" {
		t.Errorf("PING on another client = %s; want +PONG", got)
	}
}

// countWriter counts the lines written through it that contain a string,
// and passes every write on.
type countWriter struct {
	w    io.Writer
	want string

	mu    sync.Mutex
	lines int
	text  strings.Builder
}

func (c *countWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	for l := range strings.Lines(string(p)) {
		if strings.Contains(l, c.want) {
			c.lines++
			c.text.WriteString(l)
		}
	}
	c.mu.Unlock()
	return c.w.Write(p)
}

func (c *countWriter) count() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines, c.text.String()
}

// The host: an open-file limit (here 64) far below max_clients
// (10000, the default). The proxy used to spin a core in its accept loop
// once the descriptors ran out, new clients hung, and its nodes were
// marked down with "too many open files", so connected clients lost their
// quorum. Now max_clients is lowered to what the limit holds once the
// nodes' descriptors are set aside, clients beyond it get Redis's
// "max number of clients reached", and the nodes stay up.
func TestLowFileLimitKeepsQuorumAndRefusesCleanly(t *testing.T) {
	c := startNodes(t, 3)
	bin := buildProxyBinary(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	logs := &countWriter{w: newLogWriter(t), want: "max_clients"}
	cmd := exec.Command("bash", "-c", `ulimit -n 64 && exec "$@"`, "bash",
		bin, "-listen", addr, "-nodes", strings.Join(c.addrs, ","))
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // waited for by the cleanup
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	waitServing(t, addr, 10*time.Second)
	pid := cmd.Process.Pid

	keeper := newClient(t, addr, func(o *redis.Options) { o.PoolSize = 1 })
	if err := keeper.SetNX(t.Context(), "before", "t", 10*time.Second).Err(); err != nil {
		t.Fatalf("SET NX before the flood: %v", err)
	}

	// 200 clients, well past what 64 descriptors hold; each wants an
	// answer to PING within 5s of the first: +PONG, or the refusal.
	const clients = 200
	cpuBefore, start := procCPU(t, pid), time.Now()
	deadline := start.Add(5 * time.Second)
	var conns []net.Conn
	for range clients {
		conn, err := net.DialTimeout("tcp", addr, time.Until(deadline))
		if err != nil {
			continue
		}
		conns = append(conns, conn)
		conn.SetDeadline(deadline)
		io.WriteString(conn, "PING\r\n")
	}
	served, refused := 0, 0
	for i, conn := range conns {
		line, err := bufio.NewReader(conn).ReadString('\n')
		switch {
		case line == "+PONG\r\n":
			served++
		case line == "-ERR max number of clients reached\r\n":
			refused++
		default:
			t.Logf("client %d: %q, %v", i, line, err)
		}
	}
	hung := clients - served - refused
	time.Sleep(2 * time.Second) // the clients stay connected
	wall, cpu := time.Since(start), procCPU(t, pid)-cpuBefore
	t.Logf("%d clients under ulimit -n 64: %d served, %d refused, %d hung; proxy CPU %v in %v (%.0f%%)",
		clients, served, refused, hung, cpu, wall.Round(time.Millisecond), 100*cpu.Seconds()/wall.Seconds())

	if hung > 0 {
		t.Errorf("%d of %d clients got no answer within 5s; want each served or refused", hung, clients)
	}
	if served == 0 || refused == 0 {
		t.Errorf("%d served, %d refused; want some of each", served, refused)
	}
	if cpu > wall/2 {
		t.Errorf("proxy used %v of CPU in %v; want well under one core (no spinning accept loop)", cpu, wall)
	}
	if err := keeper.SetNX(t.Context(), "during", "t", 10*time.Second).Err(); err != nil {
		t.Errorf("SET NX by a connected client during the flood: %v; want OK", err)
	}
	info, err := keeper.Info(t.Context()).Result()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	if strings.Contains(info, "state=down") || strings.Contains(info, "too many open files") {
		t.Errorf("INFO during the flood shows a node down:\n%s", info)
	}
	for _, conn := range conns {
		conn.Close()
	}
	lines, text := logs.count()
	t.Logf("%d log lines about max_clients:\n%s", lines, text)
}

// After a burst of large commands, the memory goes back to the system
// once the clients are done, as redis-server frees its clients' buffers
// at once; the issue saw it stay for about two minutes (Go's runtime
// collects an idle process's garbage only every two minutes).
func TestMemoryGivenBackAfterLargeCommands(t *testing.T) {
	c := startNodes(t, 3)
	b := startBinary(t, "-nodes", strings.Join(c.addrs, ","))
	pid := b.cmd.Process.Pid
	base := procStatusKB(t, pid, "VmRSS")
	// About 1 MiB each, fully read before the arity check refuses it.
	cmd := encodeCommand("PING", strings.Repeat("v", 500<<10), strings.Repeat("w", 500<<10))
	const clients = 100
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range clients {
		wg.Go(func() {
			conn, err := net.Dial("tcp", b.Addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			if _, err := io.WriteString(conn, cmd); err != nil {
				return // refused by the budget and closed
			}
			line, _ := bufio.NewReader(conn).ReadString('\n')
			if line != "-ERR wrong number of arguments for 'ping' command\r\n" {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	peak := procStatusKB(t, pid, "VmHWM")
	var rss int64
	deadline := time.Now().Add(3 * time.Second)
	for {
		rss = procStatusKB(t, pid, "VmRSS")
		if rss-base < 8<<10 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d clients sent 1 MiB each (%d refused): RSS %d MiB before, peak %d MiB, %d MiB once they left",
		clients, refused.Load(), base>>10, peak>>10, rss>>10)
	if rss-base >= 8<<10 {
		t.Errorf("RSS %d MiB 3s after the clients left (%d MiB before, peak %d MiB); want it back within 8 MiB of before", rss>>10, base>>10, peak>>10)
	}
}
