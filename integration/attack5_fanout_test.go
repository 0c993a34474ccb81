package integration

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Many clients while one master is frozen for longer than node_timeout
// (its socket buffers fill, every call to it is overdue, then it answers
// all at once): a SET NX of a key held on every master is never OK, and
// an OK for a free key is the caller's own (a quorum of masters hold its
// value). A late reply matched to another caller would break either.
func TestAttack5FrozenMasterRepliesGoToTheirCallers(t *testing.T) {
	for _, mode := range []string{"frozen", "killed", "frozen then killed"} {
		t.Run(mode, func(t *testing.T) { attack5ManyCallers(t, mode) })
	}
}

func attack5ManyCallers(t *testing.T, mode string) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	cfg.MaxTTL = 10 * time.Second
	p := mustStartMonitored(t, cfg, c.addrs...)
	ctx := t.Context()
	const held = 4
	for j := range held {
		if err := p.Client.SetNX(ctx, fmt.Sprintf("held%d", j), "owner", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var wrong atomic.Int64
	var oks, errs atomic.Int64
	var mu sync.Mutex
	var first string
	report := func(s string) {
		wrong.Add(1)
		mu.Lock()
		if first == "" {
			first = s
		}
		mu.Unlock()
	}
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			cl := redis.NewClient(&redis.Options{Addr: p.Addr, ReadTimeout: 5 * time.Second, MaxRetries: -1, PoolSize: 1})
			defer cl.Close()
			for n := 0; time.Now().Before(stop); n++ {
				k := fmt.Sprintf("held%d", (g+n)%held)
				if ok, err := cl.SetNX(context.Background(), k, fmt.Sprintf("g%d-%d", g, n), 5*time.Second).Result(); err == nil && ok {
					report(fmt.Sprintf("SET NX %s = OK (held by another)", k))
				}
				k, v := fmt.Sprintf("free%d-%d", g, n), fmt.Sprintf("v%d-%d", g, n)
				ok, err := cl.SetNX(context.Background(), k, v, 5*time.Second).Result()
				switch {
				case err == nil && !ok:
					report(fmt.Sprintf("SET NX %s = nil (free)", k))
				case err != nil:
					errs.Add(1)
				default:
					oks.Add(1)
					have := 0
					for i := range 2 { // master 2 frozen: 0 and 1 must both hold it
						if got, _ := c.direct[i].Get(context.Background(), k).Result(); got == v {
							have++
						}
					}
					if have < 2 {
						report(fmt.Sprintf("SET NX %s = OK, but masters 0 and 1 hold it %d times", k, have))
					}
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	switch mode {
	case "frozen":
		c.procs[2].Freeze(t)
		time.Sleep(2 * time.Second) // twice node_timeout
		c.procs[2].Thaw()
	case "killed":
		c.procs[2].Kill()
	case "frozen then killed":
		c.procs[2].Freeze(t)
		time.Sleep(1500 * time.Millisecond)
		c.procs[2].Kill()
	}
	wg.Wait()
	t.Logf("free keys: %d OK, %d errors", oks.Load(), errs.Load())
	if wrong.Load() > 0 {
		t.Errorf("%d wrong answers; first: %s", wrong.Load(), first)
	}
}
