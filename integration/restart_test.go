package integration

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
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
	n, _ := strconv.Atoi(port)
	np, err := launchRedis(t, bin, n, p.dir, extra)
	if err != nil {
		t.Fatalf("restart redis-server on %s: %v", p.Addr, err)
	}
	return np
}
