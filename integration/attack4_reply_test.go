package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// SCRIPT FLUSH through the proxy deletes the wrapper's library on every
// master; other clients' scripts served by their effect that are in
// flight then, or whose library load races the next flush, get "ERR
// Function not found" from the masters, counted as failures: NOQUORUM
// with every master up. With one Redis, another client's SCRIPT FLUSH
// never fails an EVAL (it carries its body).
func TestAttack4ScriptFlushFailsOtherClientsScripts(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	const take = "local v = redis.call('get', KEYS[1]) if v == false then return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) end return v"
	const rel = "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) return 'gone' end return 'kept'"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[string]int{}
	for cl := range 8 {
		rc := dialRaw(t, p.Addr)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("f:%d:%d", cl, i)
				r := rc.do("EVAL", take, "1", k, "tok", "10000")
				if r == "+OK" {
					if r2 := rc.do("EVAL", rel, "1", k, "tok"); r2 != `"gone"` {
						r = "release: " + r2
					}
				} else {
					r = "take: " + r
				}
				if r != "+OK" {
					mu.Lock()
					bad[r]++
					mu.Unlock()
				}
			}
		})
	}
	fl := dialRaw(t, p.Addr)
	for range 60 {
		if r := fl.do("SCRIPT", "FLUSH"); r != "+OK" {
			t.Fatalf("SCRIPT FLUSH = %q", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for r, n := range bad {
		t.Errorf("%d of other clients' lock scripts, every master up, answered %s", n, r)
	}
}
