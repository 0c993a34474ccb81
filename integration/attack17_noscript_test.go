package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack17: a master that lost the proxy's scripts (SCRIPT FLUSH, a
// restart) answers NOSCRIPT while another master is silent (frozen, not
// marked down: the proxy runs no monitor here). Two masters are a quorum
// of three, so each lock shape must still be served by them: the body
// goes to a master as its NOSCRIPT comes in, not once every master
// answered.

// attack17NoscriptConfig is a proxy whose wait on the frozen master is
// short, so each shape costs about half a second.
func attack17NoscriptConfig() quorum.Config {
	return quorum.Config{NodeTimeout: 400 * time.Millisecond, MinTTL: time.Second, MaxTTL: time.Minute}
}

// attack17Shape is one lock operation, staged with every master up and
// its scripts known (setup), then run with masters 0 and 1 flushed and
// master 2 frozen (run).
type attack17Shape struct {
	name  string
	setup func(ctx context.Context, t *testing.T, cl *redis.Client)
	run   func(ctx context.Context, t *testing.T, cl *redis.Client) error
}

func attack17Shapes() []attack17Shape {
	const tok = "tok17AAAAAAAAAAAAAAAAA" // 22 bytes, a redislock token's length
	setNX := func(key string) func(ctx context.Context, t *testing.T, cl *redis.Client) {
		return func(ctx context.Context, t *testing.T, cl *redis.Client) {
			if ok, err := cl.SetNX(ctx, key, tok, 30*time.Second).Result(); !ok || err != nil {
				t.Fatalf("setup SET NX %s = %v, %v", key, ok, err)
			}
		}
	}
	obtain := func(key string) func(ctx context.Context, t *testing.T, cl *redis.Client) {
		return func(ctx context.Context, t *testing.T, cl *redis.Client) {
			if _, err := redislock.New(cl).Obtain(ctx, key, 30*time.Second, &redislock.Options{Token: tok}); err != nil {
				t.Fatalf("setup redislock Obtain %s: %v", key, err)
			}
		}
	}
	redissonOwner := "9f1c2d3e-aaaa-bbbb-cccc-000000000017:1"
	redissonLockOf := func(key string) func(ctx context.Context, t *testing.T, cl *redis.Client) {
		return func(ctx context.Context, t *testing.T, cl *redis.Client) {
			if err := redis.NewScript(redissonLock).Run(ctx, cl, []string{key}, 30000, redissonOwner).Err(); !errors.Is(err, redis.Nil) {
				t.Fatalf("setup Redisson lock %s: %v; want nil (acquired)", key, err)
			}
		}
	}
	rsMutex := func(cl *redis.Client, key string) *redsync.Mutex {
		return redsync.New(goredis.NewPool(cl)).NewMutex(key, redsync.WithExpiry(30*time.Second), redsync.WithTries(1),
			redsync.WithGenValueFunc(func() (string, error) { return tok, nil }))
	}
	big := strings.Repeat("b", 300<<10) // a 300 KiB token: the body's EVAL carries it again
	none := func(context.Context, *testing.T, *redis.Client) {}
	var held *redsync.Mutex // the redsync mutex the setup locked
	return []attack17Shape{
		{"SET NX", none, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			ok, err := cl.SetNX(ctx, "a17:setnx", tok, 30*time.Second).Result()
			if err == nil && !ok {
				err = errors.New("SET NX of a free key: nil")
			}
			return err
		}},
		{"release (EVAL)", setNX("a17:release"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			n, err := cl.Eval(ctx, distlockRelease, []string{"a17:release"}, tok).Int64()
			if err == nil && n != 1 {
				err = errors.New("release of a held key: 0")
			}
			return err
		}},
		{"release (EVALSHA)", setNX("a17:releasesha"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			n, err := redis.NewScript(distlockRelease).Run(ctx, cl, []string{"a17:releasesha"}, tok).Int64()
			if err == nil && n != 1 {
				err = errors.New("release of a held key: 0")
			}
			return err
		}},
		{"release of a 300 KiB token", func(ctx context.Context, t *testing.T, cl *redis.Client) {
			if ok, err := cl.SetNX(ctx, "a17:bigrelease", big, 30*time.Second).Result(); !ok || err != nil {
				t.Fatalf("setup SET NX of a 300 KiB token = %v, %v", ok, err)
			}
		}, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			n, err := cl.Eval(ctx, distlockRelease, []string{"a17:bigrelease"}, big).Int64()
			if err == nil && n != 1 {
				err = errors.New("release of a held key: 0")
			}
			return err
		}},
		{"redislock re-entry with a 300 KiB token", func(ctx context.Context, t *testing.T, cl *redis.Client) {
			if _, err := redislock.New(cl).Obtain(ctx, "a17:bigobtain", 30*time.Second, &redislock.Options{Token: big}); err != nil {
				t.Fatalf("setup redislock Obtain with a 300 KiB token: %v", err)
			}
		}, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			_, err := redislock.New(cl).Obtain(ctx, "a17:bigobtain", 30*time.Second, &redislock.Options{Token: big})
			return err
		}},
		{"FENCE", setNX("a17:fence"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			return cl.Do(ctx, "FENCE", "a17:fence", tok).Err()
		}},
		{"redislock Obtain (re-entry)", obtain("a17:reobtain"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			_, err := redislock.New(cl).Obtain(ctx, "a17:reobtain", 30*time.Second, &redislock.Options{Token: tok})
			return err
		}},
		{"redislock ObtainMulti", obtain("a17:multi1"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			_, err := redislock.New(cl).ObtainMulti(ctx, []string{"a17:multi1", "a17:multi2"}, 30*time.Second, &redislock.Options{Token: tok})
			return err
		}},
		{"redislock Refresh", obtain("a17:refresh"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			l, err := redislock.New(cl).Obtain(ctx, "a17:refresh2", 30*time.Second, nil)
			if err != nil {
				return err
			}
			return l.Refresh(ctx, 40*time.Second, nil)
		}},
		{"redsync Lock", none, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			return rsMutex(cl, "a17:redsync").LockContext(ctx)
		}},
		{"redsync Extend and Unlock", func(ctx context.Context, t *testing.T, cl *redis.Client) {
			held = rsMutex(cl, "a17:redsync2")
			if err := held.LockContext(ctx); err != nil {
				t.Fatalf("setup redsync Lock: %v", err)
			}
		}, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			m := held // its value is set by its Lock
			if ok, err := m.ExtendContext(ctx); !ok || err != nil {
				return errors.Join(errors.New("Extend failed"), err)
			}
			if ok, err := m.UnlockContext(ctx); !ok || err != nil {
				return errors.Join(errors.New("Unlock failed"), err)
			}
			return nil
		}},
		{"Redisson lock", none, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			err := redis.NewScript(redissonLock).Run(ctx, cl, []string{"a17:rlock"}, 30000, redissonOwner).Err()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			return errors.Join(errors.New("Redisson lock: not acquired"), err)
		}},
		{"Redisson renew", redissonLockOf("a17:rrenew"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			n, err := redis.NewScript(redissonRenew).Run(ctx, cl, []string{"a17:rrenew"}, 30000, redissonOwner).Int64()
			if err == nil && n != 1 {
				err = errors.New("Redisson renew of a held lock: 0")
			}
			return err
		}},
		{"Redisson unlock", redissonLockOf("a17:runlock"), func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			keys := []string{"a17:runlock", "redisson_lock__channel:{a17:runlock}", "redisson_unlock_latch:{a17:runlock}:req17"}
			n, err := redis.NewScript(redissonUnlock).Run(ctx, cl, keys, 0, 30000, redissonOwner, "PUBLISH", 13500).Int64()
			if err == nil && n != 1 {
				err = errors.New("Redisson unlock of a held lock: not 1")
			}
			return err
		}},
		{"Redisson write lock", none, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			err := redis.NewScript(redissonWriteLock).Run(ctx, cl, []string{"a17:rw"}, 30000, redissonOwner+":write").Err()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			return errors.Join(errors.New("Redisson write lock: not acquired"), err)
		}},
		{"latch trySetCount and countDown", func(ctx context.Context, t *testing.T, cl *redis.Client) {
			// The masters' counters are seeded (a new deployment's are
			// marked, then seeded, with every master answering).
			if n, err := newLatchClient(cl, "latch:a17warm").trySetCount(t, 1); err != nil || n != 1 {
				t.Fatalf("setup trySetCount = %d, %v; want 1", n, err)
			}
		}, func(ctx context.Context, t *testing.T, cl *redis.Client) error {
			l := newLatchClient(cl, "latch:a17")
			if n, err := l.trySetCount(t, 2); err != nil || n != 1 {
				return errors.Join(errors.New("trySetCount: not 1"), err)
			}
			return l.countDown(t)
		}},
	}
}

// TestAttack17EveryLockShapeServedByTwoFlushedMastersWithTheThirdFrozen:
// masters 0 and 1 lost the proxy's scripts (SCRIPT FLUSH, as after a
// restart), master 2 is frozen and not marked down. Each lock shape is
// served by masters 0 and 1 as one Redis would answer it.
func TestAttack17EveryLockShapeServedByTwoFlushedMastersWithTheThirdFrozen(t *testing.T) {
	attack17FlushedBesideFrozen(t, 0, 1)
}

// TestAttack17EveryLockShapeServedByAFlushedAndAWholeMasterWithTheThirdFrozen:
// as above with master 0 alone flushed: master 1 answers at once, master
// 0 needs the body.
func TestAttack17EveryLockShapeServedByAFlushedAndAWholeMasterWithTheThirdFrozen(t *testing.T) {
	attack17FlushedBesideFrozen(t, 0)
}

// attack17FlushedBesideFrozen stages every shape with three masters up,
// freezes master 2, and runs each shape after a SCRIPT FLUSH of the
// masters flushed.
func attack17FlushedBesideFrozen(t *testing.T, flushed ...int) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout, LatchKeys: []string{"latch:*"}}, attack17NoscriptConfig(), c.addrs...)
	ctx := t.Context()
	shapes := attack17Shapes()
	for _, s := range shapes {
		s.setup(ctx, t, p.Client)
	}
	c.procs[2].Freeze(t)
	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			for _, i := range flushed {
				if err := c.direct[i].ScriptFlush(ctx).Err(); err != nil {
					t.Fatalf("SCRIPT FLUSH on master %d: %v", i, err)
				}
			}
			if err := s.run(ctx, t, p.Client); err != nil {
				t.Errorf("%s with masters %v flushed, master 2 frozen: %v; want it served by masters 0 and 1", s.name, flushed, err)
			}
		})
	}
}
