package integration

import (
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// restartRedis crashes p (SIGKILL) and starts a new redis-server on the
// same port and data directory: a new process, so a new run_id, with
// whatever its persistence kept (nothing, unless extra turns AOF on).
// extra is passed to the new server.
func restartRedis(t testing.TB, p *redisProc, extra ...string) *redisProc {
	t.Helper()
	p.Kill()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed")
	}
	_, port, _ := net.SplitHostPort(p.Addr)
	args := append([]string{
		"--bind", "127.0.0.1", "--port", port,
		"--save", "", "--appendonly", "no", "--dir", p.dir,
		"--logfile", filepath.Join(p.dir, "redis.log"),
	}, extra...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("restart redis-server on %s: %v", p.Addr, err)
	}
	np := &redisProc{Addr: p.Addr, cmd: cmd, exited: make(chan struct{}), dir: p.dir}
	go func() { // waited for by Kill, through exited
		cmd.Wait()
		close(np.exited)
	}()
	t.Cleanup(np.Kill)
	deadline := time.Now().Add(5 * time.Second)
	for pingOnce(np.Addr) != nil {
		select {
		case <-np.exited:
			np.logTail(t)
			t.Fatalf("restarted redis-server on %s exited: %v", np.Addr, cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted redis-server on %s did not answer PING within 5s", np.Addr)
		}
	}
	return np
}
