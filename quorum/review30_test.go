package quorum

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fan-out's NOSCRIPT resend (fan.wait) under load: many fan-outs at
// once on real masters whose scripts are flushed all the time, one of
// them frozen and thawed, under a short node timeout. An op that answered
// NOSCRIPT is started again in place (its fan's ops[i]) while the others
// are in flight, and fans and scratches are pooled: under -race this
// checks each is touched by one goroutine at a time; in any build, that
// no two workers are ever granted one key while both leases are valid.
func TestReview30FanResendUnderFlushesAndAFrozenMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test of two seconds")
	}
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{NodeTimeout: 80 * time.Millisecond}, nodes...)
	ctx := t.Context()
	keys := []string{"k0", "k1", "k2", "k3"}
	until := time.Now().Add(review30Load)

	var wg sync.WaitGroup
	// SCRIPT FLUSH on a random master every few ms.
	admins := make([]*redis.Client, len(procs))
	for i, p := range procs {
		admins[i] = p.Client(t)
	}
	wg.Go(func() {
		for time.Now().Before(until) {
			admins[rand.IntN(len(admins))].ScriptFlush(ctx) // an error is a flush that did not happen
			time.Sleep(2 * time.Millisecond)
		}
	})
	// Master 2 frozen for 150ms every 400ms: not marked down (no monitor),
	// so every fan-out waits for it until the deadline.
	pid := procs[2].Pid()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
	wg.Go(func() {
		for time.Now().Before(until) {
			syscall.Kill(pid, syscall.SIGSTOP)
			time.Sleep(150 * time.Millisecond)
			syscall.Kill(pid, syscall.SIGCONT)
			time.Sleep(250 * time.Millisecond)
		}
	})

	type hold struct {
		token string
		lease Lease
	}
	var mu sync.Mutex
	held := map[string]hold{}
	var granted, extended, released [8]int
	for w := range 8 {
		wg.Go(func() {
			for n := 0; time.Now().Before(until); n++ {
				a := rand.IntN(len(keys))
				b := (a + 1 + rand.IntN(len(keys)-1)) % len(keys)
				l := Lock{Keys: []string{keys[a], keys[b]}, Token: fmt.Sprintf("w%d-%d", w, n)} // two keys: a script
				lease, err := e.Acquire(ctx, l, 400*time.Millisecond)
				if err != nil {
					continue
				}
				now := time.Now()
				mu.Lock()
				if lease.Valid(now) {
					granted[w]++
					for _, k := range l.Keys {
						if h, ok := held[k]; ok && h.lease.Valid(now) {
							t.Errorf("%s granted %s while %s holds it with %v of validity left", l.Token, k, h.token, h.lease.Expires.Sub(now))
						}
						held[k] = hold{l.Token, lease}
					}
				}
				mu.Unlock()
				if ext, err := e.Extend(ctx, l, 400*time.Millisecond); err == nil {
					extended[w]++
					mu.Lock()
					for _, k := range l.Keys {
						if h := held[k]; h.token == l.Token {
							held[k] = hold{l.Token, ext}
						}
					}
					mu.Unlock()
				}
				mu.Lock()
				for _, k := range l.Keys {
					if held[k].token == l.Token {
						delete(held, k)
					}
				}
				mu.Unlock()
				if _, err := e.Release(ctx, l); err == nil {
					released[w]++
				}
			}
		})
	}
	wg.Wait()
	t.Logf("granted %v, extended %v, released %v", granted, extended, released)
	total := 0
	for _, g := range granted {
		total += g
	}
	if total == 0 {
		t.Errorf("no acquire granted in 2s: the test checked nothing")
	}
}

// review30Load is how long the load test runs.
var review30Load = 2 * time.Second
