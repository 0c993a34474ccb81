package integration

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// idleClients is how many idle client connections
// BenchmarkIdleConnections holds open.
const idleClients = 10000

// BenchmarkIdleConnections starts the real binary over three masters,
// opens 10,000 client connections that each send one PING and then stay
// idle, and reports the proxy's resident memory (rss-MB, from
// /proc/<pid>/status) and how long a new client's connect and PING then
// take (ping-ms):
//
//	go test ./integration -run '^$' -bench IdleConnections -benchtime 1x
//
// It fails above the targets: 150 MB and 10 ms.
func BenchmarkIdleConnections(b *testing.B) {
	masters := startNodes(b, 3)
	bin := buildProxyBinary(b)
	dir := b.TempDir()
	conf := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("max_clients = %d\nlog_level = \"warn\"\n", idleClients+100)), 0o600); err != nil {
		b.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(b)))
	cmd := exec.Command(bin, "-config", conf, "-listen", addr, "-nodes", strings.Join(masters.addrs, ","))
	cmd.Dir = dir
	logs := newLogWriter(b)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s: %v", bin, err)
	}
	b.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }() // ends with the process
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	waitServing(b, addr, 10*time.Second)

	for range b.N {
		conns := openIdle(b, addr, idleClients)
		time.Sleep(time.Second) // let the proxy settle
		rss := rssMB(b, cmd.Process.Pid)
		ping := timePing(b, addr)
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(float64(ping)/float64(time.Millisecond), "ping-ms")
		if rss > 150 {
			b.Errorf("RSS with %d idle clients = %.1f MB; want at most 150", idleClients, rss)
		}
		if ping >= 10*time.Millisecond {
			b.Errorf("a new client's connect and PING with %d idle clients took %v; want under 10ms", idleClients, ping)
		}
		for _, c := range conns {
			c.Close()
		}
	}
}

// openIdle opens n connections to addr, each answering one PING, from a
// few goroutines, within a minute.
func openIdle(b *testing.B, addr string, n int) []net.Conn {
	conns := make([]net.Conn, n)
	deadline := time.Now().Add(time.Minute)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	const dialers = 16
	for d := range dialers {
		wg.Go(func() {
			for i := d; i < n; i += dialers {
				c, err := pingConn(addr, deadline)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("connection %d: %w", i, err)
					}
					mu.Unlock()
					return
				}
				conns[i] = c
			}
		})
	}
	wg.Wait()
	b.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return conns
}

// pingConn dials addr and answers one PING before deadline, and returns
// the open connection.
func pingConn(addr string, deadline time.Time) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	c.SetDeadline(deadline)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		c.Close()
		return nil, err
	}
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil || line != "+PONG\r\n" {
		c.Close()
		return nil, fmt.Errorf("PING = %q, %v", line, err)
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// timePing is how long a new client's connect and PING take.
func timePing(b *testing.B, addr string) time.Duration {
	start := time.Now()
	c, err := pingConn(addr, start.Add(5*time.Second))
	if err != nil {
		b.Fatalf("new client's PING: %v", err)
	}
	d := time.Since(start)
	c.Close()
	return d
}

// rssMB is the process's resident memory (VmRSS) in MB.
func rssMB(b *testing.B, pid int) float64 {
	s, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("read status of %d: %v", pid, err)
	}
	for line := range strings.Lines(string(s)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", line, err)
			}
			return kb / 1024
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
