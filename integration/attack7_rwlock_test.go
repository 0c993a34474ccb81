package integration

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack7 B6 (attack6 A11's variant: a reader beside a writer, on main
// from 14f2f1d until 89731a5's write name rule; a regression test now). rwlock_take.lua grants a reader in a write lock's
// hash where hexists(hash, ARGV[3]): ARGV[3] = "mode" is a field of every
// read-write lock's hash, so a reader naming "mode" as its write lock is
// granted under any thread's write lock. A fix for A11 must require
// ARGV[3] == ARGV[2] .. ":write" exactly, not merely a field that exists.
func TestAttack7ReadNamingModeAsItsWriteLock(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := p.Client
	ctx := t.Context()
	const name = "a7rw3"
	if err := redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{name}, 20000, "a7-uuid-w:1:write").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("W's write lock = %v; want nil (acquired)", err)
	}
	r := readLockClient{name, "a7-uuid-r:1"}
	v, err := redis.NewScript(redissonReadLock).Run(ctx, cl, []string{name, r.timeoutPrefix()}, 20000, r.thread, "mode").Int64()
	if errors.Is(err, redis.Nil) {
		t.Fatalf("R's read lock naming \"mode\" as its write lock = granted while W holds the write lock: a reader beside a writer")
	}
	t.Logf("R's read lock naming \"mode\" = %d, %v", v, err)
}
