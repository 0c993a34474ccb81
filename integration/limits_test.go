package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

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
