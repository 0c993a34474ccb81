package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack6 A10 (PRE-LANDING: rw20b's downgrade, a reader under its own
// write lock, refused on main). Redisson's read unlock, replayed by
// rwlock_unlock.lua, sets the hash's expiry to the longest reader timeout
// left whenever other fields remain: in a write lock's hash (a downgrade
// in progress) that cuts the write lock's own lease. Thread T takes the
// write lock for 20s, reads twice under it (2s leases), unlocks one read:
// the hash, and with it T's write lock, now ends in under 2s, and another
// thread's write lock is granted while T's 20s write lease runs.
func TestAttack6ReadUnlockUnderOwnWriteLockCutsTheWriteLease(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := p.Client
	ctx := t.Context()
	const name = "a6rw"
	tw := readLockClient{name, "a6-uuid-t:1"}
	write := func(thread string) (int64, error) {
		return redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{name}, 20000, thread+":write").Int64()
	}
	if ms, err := write(tw.thread); !errors.Is(err, redis.Nil) {
		t.Fatalf("T's write lock = %d, %v; want nil (acquired)", ms, err)
	}
	start := time.Now()
	for i := range 2 {
		if ms, err := tw.take(t, cl, 2000); !errors.Is(err, redis.Nil) {
			t.Fatalf("T's read lock %d under its own write lock = %d, %v; want nil (acquired, as on one Redis: the downgrade rw20b serves)", i+1, ms, err)
		}
	}
	if v, err := tw.unlock(t, cl, "r1"); err != nil || v != 0 {
		t.Fatalf("T's first read unlock = %d, %v; want 0 (one read left)", v, err)
	}
	time.Sleep(2500 * time.Millisecond)
	if ms, err := write("a6-uuid-u:1"); errors.Is(err, redis.Nil) {
		t.Fatalf("U's write lock = granted %v after T's write lock (lease 20s) and a read unlock under it: two writers", time.Since(start).Round(time.Millisecond))
	} else if err != nil || ms <= 0 {
		t.Errorf("U's write lock = %d, %v; want T's PTTL", ms, err)
	}
}

// attack6 A11 (PRE-LANDING: rw20b's downgrade). The read lock take's
// ARGV[3], "its write lock's name", is not checked against the reader's
// name (Redisson always sends name + ":write"). Once a reader under the
// same thread's write lock is granted, a reader naming ANOTHER thread's
// write lock there is granted too: a reader beside a writer. One Redis
// runs the same script, but no Redisson call has that layout, as no
// Redisson call names another lock's timeout prefix (attack B1's rule).
func TestAttack6ReadUnderAnotherThreadsWriteLock(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	cl := p.Client
	ctx := t.Context()
	const name = "a6rw2"
	if ms, err := redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{name}, 20000, "a6-uuid-w:1:write").Int64(); !errors.Is(err, redis.Nil) {
		t.Fatalf("W's write lock = %d, %v; want nil (acquired)", ms, err)
	}
	r := readLockClient{name, "a6-uuid-r:1"}
	v, err := redis.NewScript(redissonReadLock).Run(ctx, cl, []string{name, r.timeoutPrefix()}, 20000, r.thread, "a6-uuid-w:1:write").Int64()
	if errors.Is(err, redis.Nil) {
		t.Fatalf("R's read lock naming W's write lock as its own = granted while W holds the write lock: a reader beside a writer")
	}
	switch {
	case err == nil && v > 0: // W's PTTL: denied, as for any other thread
	case strings.HasPrefix(errText(err), "ERR Redisson's read lock tryLock is served only as Redisson calls it"):
		// the layout refusal this test wants
	case errText(err) == "ERR Redisson's read lock under the same thread's write lock is refused: beside it the write lock's watchdog renewal would be refused (see the README, Redisson)":
		t.Logf("main's refusal of every read under a write lock: %v", err)
	default:
		t.Errorf("R's read lock naming W's write lock = %d, %v; want W's PTTL or a layout refusal", v, err)
	}
}
