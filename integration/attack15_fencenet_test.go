package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack15's net over c8e5595 (FENCE's record on the masters not asked
// waits 2ms): the record still reaches every master while a hold is
// FENCEd again and again (the wait is never put off for good), for many
// holds fenced and never released, and when the engine closes right
// after the reply; and through one proxy, a hold released and taken again
// at once with its token (a plain release, which drops the waiting
// record, and Redisson's unlock served by its effect, which does not)
// gets a higher T each time.
func TestAttack15FenceRecordReachesEveryMasterAndRetakesGetHigherTokens(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig()
	qcfg.MaxTTL = 10 * time.Second
	p := mustStartMonitored(t, qcfg, c.addrs...).Client
	ctx := t.Context()
	record := func(i int, key string) string {
		return c.direct[i].Get(ctx, "redlock-proxy:fence:"+key).Val()
	}
	// everywhere waits until every master has key's record of T by token.
	everywhere := func(key, token string, T int64, within time.Duration) {
		t.Helper()
		want := strconv.FormatInt(T, 10) + " " + token
		for end := time.Now().Add(within); ; time.Sleep(2 * time.Millisecond) {
			got := []string{record(0, key), record(1, key), record(2, key)}
			if got[0] == want && got[1] == want && got[2] == want {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s's records %q %v after FENCE; want %q on every master", key, got, within, want)
			}
		}
	}
	fence := func(cl *redis.Client, key, token string) int64 {
		t.Helper()
		T, err := cl.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("FENCE %s: %v", key, err)
		}
		return T
	}
	for i := range 4 { // counters seeded; the window asked first agrees from now on
		k := fmt.Sprintf("net:warm:%d", i)
		p.SetNX(ctx, k, "w", 5*time.Second)
		fence(p, k, "w")
		p.Eval(ctx, distlockRelease, []string{k}, "w")
	}

	t.Run("repeated FENCEs of one hold", func(t *testing.T) {
		const key, token = "net:repeat", "rep"
		if err := p.SetNX(ctx, key, token, 8*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		T := fence(p, key, token)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var bad sync.Map
		for w := range 4 {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					if got, err := p.Do(ctx, "FENCE", key, token).Int64(); err != nil || got != T {
						bad.Store(fmt.Sprintf("worker %d call %d", w, n), fmt.Sprintf("%d, %v", got, err))
					}
				}
			})
		}
		everywhere(key, token, T, 2*time.Second) // while the repeats run
		close(stop)
		wg.Wait()
		bad.Range(func(k, v any) bool {
			t.Errorf("%s: FENCE of one hold = %s; want %d", k, v, T)
			return true
		})
		p.Eval(ctx, distlockRelease, []string{key}, token)
	})

	t.Run("many holds never released", func(t *testing.T) {
		Ts := map[string]int64{}
		for i := range 150 {
			key := fmt.Sprintf("net:many:%d", i)
			if err := p.SetNX(ctx, key, "m", 8*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			Ts[key] = fence(p, key, "m")
		}
		for key, T := range Ts {
			everywhere(key, "m", T, 2*time.Second)
		}
	})

	t.Run("engine closed right after the reply", func(t *testing.T) {
		e2 := quorum.New(qcfg, quorum.NewRedisNode(c.addrs[0], quorum.NodeOptions{}),
			quorum.NewRedisNode(c.addrs[1], quorum.NodeOptions{}), quorum.NewRedisNode(c.addrs[2], quorum.NodeOptions{}))
		if err := e2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		p2 := serveProxy(t, proxy.Config{CommandTimeout: commandTimeout}, e2)
		cl := newClient(t, p2.Addr, nil)
		for i := range 3 {
			key := fmt.Sprintf("net:close:%d", i)
			if err := cl.SetNX(ctx, key, "c", 8*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			fence(cl, key, "c")
		}
		const key = "net:close"
		if err := cl.SetNX(ctx, key, "c", 8*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		T := fence(cl, key, "c")
		if err := e2.Close(); err != nil {
			t.Logf("Close: %v", err)
		}
		everywhere(key, "c", T, 0) // written by Close, before it returned
	})

	t.Run("a hold taken again at once with its token", func(t *testing.T) {
		lock, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock)
		const key, token = "net:retake", "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
		last := int64(0)
		for round := range 40 {
			redisson := round%2 == 1
			if redisson {
				if err := lock.Run(ctx, p, []string{key}, 5000, token).Err(); err != redis.Nil {
					t.Fatalf("round %d: Redisson lock: %v", round, err)
				}
			} else if err := p.SetNX(ctx, key, token, 5*time.Second).Err(); err != nil {
				t.Fatalf("round %d: SET NX: %v", round, err)
			}
			T := fence(p, key, token)
			if T <= last {
				t.Fatalf("round %d (Redisson %v): T %d after an earlier hold's %d", round, redisson, T, last)
			}
			last = T
			if redisson {
				keys := []string{key, "redisson_lock__channel:{" + key + "}", "redisson_unlock_latch:{" + key + "}:" + token}
				if n, err := unlock.Run(ctx, p, keys, "0", 5000, token, "PUBLISH", 1000).Int64(); err != nil || n != 1 {
					t.Fatalf("round %d: Redisson unlock = %d, %v", round, n, err)
				}
				p.Del(ctx, keys[2])
			} else if n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int64(); err != nil || n != 1 {
				t.Fatalf("round %d: release = %d, %v", round, n, err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		for i := range 3 {
			if r := record(i, key); r != "" {
				t.Errorf("master %d keeps the record %q of a released hold", i, r)
			}
		}
	})
}
