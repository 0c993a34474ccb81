package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// 16 clients, split over two proxies serving the same five nodes, contend
// for two keys: no key ever has two holders at once, and a counter
// incremented under the lock loses no update.
func TestConcurrentClientsNeverShareALock(t *testing.T) {
	const (
		clients = 16
		target  = 400 // acquisitions in all
		limit   = 30 * time.Second
	)
	c := startNodes(t, 5)
	proxies := []*proxyProc{
		startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...),
		startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...),
	}
	keys := []string{"mx-0", "mx-1"}
	var (
		holder   [2]atomic.Int64 // client id + 1 holding each key, 0 if none
		counter  [2]int          // guarded by the lock on keys[i], not by Go
		acquired atomic.Int64
		failMu   sync.Mutex
		failure  error
	)
	fail := func(err error) {
		failMu.Lock()
		defer failMu.Unlock()
		if failure == nil {
			failure = err
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			cl := proxies[id%len(proxies)].Client
			for n := 0; acquired.Load() < target && ctx.Err() == nil; n++ {
				k := rand.IntN(len(keys))
				tok := fmt.Sprintf("c%d-%d", id, n)
				err := cl.SetArgs(ctx, keys[k], tok, redis.SetArgs{Mode: "NX", TTL: 2 * time.Second}).Err()
				if errors.Is(err, redis.Nil) {
					time.Sleep(time.Duration(1+rand.IntN(3)) * time.Millisecond)
					continue
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("client %d: SET %s: %v", id, keys[k], err))
					}
					return
				}
				if !holder[k].CompareAndSwap(0, int64(id+1)) {
					fail(fmt.Errorf("client %d got %s while client %d held it", id, keys[k], holder[k].Load()-1))
					return
				}
				v := counter[k]
				time.Sleep(time.Millisecond)
				counter[k] = v + 1
				acquired.Add(1)
				holder[k].Store(0)
				if got, err := cl.Eval(ctx, distlockRelease, []string{keys[k]}, tok).Int64(); err != nil || got != 1 {
					fail(fmt.Errorf("client %d: release %s = %d, %v; want 1", id, keys[k], got, err))
					return
				}
			}
		})
	}
	wg.Wait()
	if failure != nil {
		t.Fatal(failure)
	}
	if got := acquired.Load(); got < target {
		t.Fatalf("%d acquisitions within %v; want %d", got, limit, target)
	}
	if sum := counter[0] + counter[1]; int64(sum) != acquired.Load() {
		t.Errorf("counters sum to %d after %d acquisitions; want equal (a lost update)", sum, acquired.Load())
	}
	for _, k := range keys {
		c.wantFreeEverywhere(t, k)
	}
}
