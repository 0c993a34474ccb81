package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack17: many clients run every step of a lock's life (SET NX, a
// contended SET NX, FENCE, a redislock re-entry, the release, GET) on
// keys of their own, while the masters' script caches are flushed again
// and again (NOSCRIPT replies in the middle of the nodes' pipelines) and
// one master is frozen for a while and then answers everything at once.
// Errors are allowed (NOQUORUM while a master is silent); a wrong answer
// is not: every reply must be one a single Redis could give to that
// client for its own key. A reply matched to another caller's op, a
// NOSCRIPT answered with another op's body, or a body run twice would
// show here.
func TestAttack17MixedLockLivesKeepTheirAnswersThroughScriptFlushesAndAFrozenMaster(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", proto), func(t *testing.T) { attack17MixedLives(t, proto) })
	}
}

func attack17MixedLives(t *testing.T, proto int) {
	c := startNodes(t, 3)
	qcfg := quorum.Config{NodeTimeout: 300 * time.Millisecond, MinTTL: time.Second, MaxTTL: time.Minute}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, c.addrs...)
	ctx := t.Context()
	var wrong, oks, errs atomic.Int64
	var mu sync.Mutex
	var first []string
	report := func(s string) {
		wrong.Add(1)
		mu.Lock()
		if len(first) < 10 {
			first = append(first, s)
		}
		mu.Unlock()
	}
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	// The disturbances: SCRIPT FLUSH of one master after another every
	// 40ms; master 2 frozen from 1s to 2s.
	wg.Go(func() {
		for n := 0; time.Now().Before(stop); n++ {
			c.direct[n%2].ScriptFlush(context.Background())
			time.Sleep(40 * time.Millisecond)
		}
	})
	wg.Go(func() {
		time.Sleep(time.Second)
		c.procs[2].Freeze(t)
		time.Sleep(time.Second)
		c.procs[2].Thaw()
	})
	for g := range 12 {
		wg.Go(func() {
			cl := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: proto, ReadTimeout: 5 * time.Second, MaxRetries: -1, PoolSize: 1, DisableIdentity: true})
			defer cl.Close()
			bg := context.Background()
			for n := 0; time.Now().Before(stop); n++ {
				k := fmt.Sprintf("a17:mix:%d:%d:%d", proto, g, n)
				tok := fmt.Sprintf("tok17-%02d-%06d-xxxxxxxx", g, n) // 22 bytes
				pipe := cl.Pipeline()
				set := pipe.SetNX(bg, k, tok, 20*time.Second)
				other := pipe.SetNX(bg, k, "another", 20*time.Second)
				fence := pipe.Do(bg, "FENCE", k, tok)
				pipe.Exec(bg)
				if ok, err := set.Result(); err != nil {
					errs.Add(1)
					continue
				} else if !ok {
					report(fmt.Sprintf("SET NX %s (free) = nil", k))
					continue
				}
				if ok, err := other.Result(); err == nil && ok {
					report(fmt.Sprintf("SET NX %s by another after its grant = OK", k))
				}
				if v, err := fence.Int64(); err == nil && v <= 0 {
					report(fmt.Sprintf("FENCE %s = %d; want a positive token", k, v))
				} else if err != nil && errors.Is(err, redis.Nil) {
					report(fmt.Sprintf("FENCE %s by its holder = nil", k))
				}
				_, err := redislock.New(cl).Obtain(bg, k, 20*time.Second, &redislock.Options{Token: tok})
				switch {
				case errors.Is(err, redislock.ErrNotObtained):
					report(fmt.Sprintf("redislock re-entry of %s by its holder: not obtained", k))
				case err != nil:
					errs.Add(1)
				}
				n, err := cl.Eval(bg, distlockRelease, []string{k}, tok).Int64()
				switch {
				case err != nil:
					errs.Add(1)
					continue
				case n != 1:
					report(fmt.Sprintf("release of %s by its holder = %d", k, n))
					continue
				}
				if v, err := cl.Get(bg, k).Result(); err == nil {
					report(fmt.Sprintf("GET %s after its release = %q", k, v))
				} else if !errors.Is(err, redis.Nil) {
					errs.Add(1)
					continue
				}
				oks.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("resp%d: %d lives whole, %d errors, %d wrong answers", proto, oks.Load(), errs.Load(), wrong.Load())
	for _, s := range first {
		t.Error(s)
	}
	if oks.Load() == 0 {
		t.Errorf("no lock life went through whole")
	}
	if err := p.Client.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after the run: %v", err)
	}
}
