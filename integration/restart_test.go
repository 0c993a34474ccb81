package integration

import (
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// restartRedis crashes p (SIGKILL) and starts a new redis-server on the
// same port and data directory: a new process, so a new run_id, with
// whatever its persistence kept (nothing, unless extra turns AOF on).
// extra is passed to the new server.
func restartRedis(t testing.TB, p *redisProc, extra ...string) *redisProc {
	t.Helper()
	p.Kill()
	np, err := redistest.StartOn(t, p.Port, p.Dir, extra...)
	if err != nil {
		t.Fatalf("restart redis-server on %s: %v", p.Addr, err)
	}
	return np
}
