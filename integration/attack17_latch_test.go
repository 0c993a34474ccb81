package integration

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack17: one Redisson count-down latch name used again and again
// through two proxies, its older lives' slots and tombstones left on the
// masters (an opened latch keeps its slot until delete()), while P's
// link to one master is cut for a round's set, for its countDowns, or
// not at all. Each life's zero message reaches each waiter once, never
// before its count of countDowns was sent, and once the latch reads open
// it reaches them (after one more countDown, where a cut left it
// unsent: the latch row of compatibility.md).
func TestAttack17LatchLivesThroughTwoProxiesWithCutLinksSendTheZeroMessageOnce(t *testing.T) {
	skipLong(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 17))
	c := startNodes(t, 3)
	var drops [3]atomic.Bool
	var pAddrs []string
	for i, a := range c.addrs {
		pAddrs = append(pAddrs, startRelay(t, a, relayOpts{drop: &drops[i]}))
	}
	qcfg := latchEngineConfig(time.Minute)
	p := startProxy(t, latchConfig(), qcfg, pAddrs...)
	q := startProxy(t, latchConfig(), qcfg, c.addrs...)
	const name = "latch:a17"
	ls := []latchClient{newLatchClient(p.Client, name), newLatchClient(q.Client, name)}
	// The masters' counters are seeded first (a new deployment's are
	// marked, then seeded, with every master answering).
	for _, cl := range []*redis.Client{p.Client, q.Client} {
		if _, err := newLatchClient(cl, "latch:a17warm").getCount(t); err != nil {
			t.Fatalf("warm-up getCount: %v", err)
		}
	}
	// The waiters: one through each proxy, read all along.
	var zeros [2]atomic.Int64
	var issued atomic.Int64 // countDowns sent in the life under way
	var need atomic.Int64   // that life's count
	var early atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var readers sync.WaitGroup
	var subs []*redis.PubSub
	for w, addr := range []string{p.Addr, q.Addr} {
		sub := newLatchClient(newClient(t, addr, nil), name).subscribe(t)
		subs = append(subs, sub)
		readers.Go(func() {
			for {
				msg, err := sub.ReceiveMessage(ctx)
				if err != nil {
					return
				}
				if msg.Payload != "0" {
					continue
				}
				zeros[w].Add(1)
				if issued.Load() < need.Load() {
					early.Add(1)
				}
			}
		})
	}
	recovered := 0 // lives whose message a later countDown sent
	for life := range 12 {
		fault := rng.IntN(3) // 0: none, 1: P cut from a master for the set, 2: for the countDowns
		cut := rng.IntN(3)
		n := int64(2 + rng.IntN(2))
		zeros[0].Store(0)
		zeros[1].Store(0)
		issued.Store(0)
		need.Store(n)
		setter := rng.IntN(2)
		if fault == 1 {
			setter = 0
			drops[cut].Store(true)
		}
		v, err := ls[setter].trySetCount(t, n)
		drops[cut].Store(false)
		if err != nil {
			// NOQUORUM: the cut master's answer missing, and one that
			// missed the last life's countDowns kept a count and denied.
			// The caller tries again with the link whole.
			t.Logf("life %d: trySetCount(%d) with master %d cut: %v; again", life, n, cut, err)
			v, err = ls[setter].trySetCount(t, n)
		}
		if err != nil || v != 1 {
			t.Fatalf("life %d (fault %d, master %d): trySetCount(%d) through %s = %d, %v; want 1", life, fault, cut, n, "PQ"[setter:setter+1], v, err)
		}
		if fault == 2 {
			drops[cut].Store(true)
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				issued.Add(1)
				if err := ls[(int(i)+life)%2].countDown(t); err != nil {
					t.Logf("life %d: countDown %d: %v", life, i, err)
				}
			})
		}
		wg.Wait()
		drops[cut].Store(false)
		// Until the latch reads open through both proxies, another
		// countDown (a Redisson client retrying one that failed).
		for try := 0; ; try++ {
			v0, err0 := ls[0].getCount(t)
			v1, err1 := ls[1].getCount(t)
			if err0 == nil && err1 == nil && v0 == 0 && v1 == 0 {
				break
			}
			if try == 10 {
				t.Fatalf("life %d: getCount through P, Q = %d, %v; %d, %v after %d tries; want 0", life, v0, err0, v1, err1, try)
			}
			issued.Add(1)
			if err := ls[try%2].countDown(t); err != nil {
				t.Logf("life %d: extra countDown: %v", life, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(600 * time.Millisecond) // the messages arrive
		if zeros[0].Load() == 0 && zeros[1].Load() == 0 {
			// A fault during the last countDowns can leave the message
			// unsent (compatibility.md's latch row): a later countDown
			// that reads the latch open claims it and sends it once.
			recovered++
			issued.Add(1)
			if err := ls[rng.IntN(2)].countDown(t); err != nil {
				t.Logf("life %d: countDown of the opened latch: %v", life, err)
			}
			time.Sleep(600 * time.Millisecond)
		}
		t.Logf("life %d: count %d, fault %d on master %d, set through %s, %d countDowns, zero messages %d and %d",
			life, n, fault, cut, "PQ"[setter:setter+1], issued.Load(), zeros[0].Load(), zeros[1].Load())
		for w := range 2 {
			if z := zeros[w].Load(); z != 1 {
				t.Errorf("life %d: the waiter through %s got %d zero messages; want 1", life, "PQ"[w:w+1], z)
			}
		}
		if zeros[0].Load() != 1 || zeros[1].Load() != 1 {
			attack17DumpLatch(t, c, name)
		}
		if rng.IntN(2) == 0 {
			if _, err := ls[rng.IntN(2)].delete(t); err != nil && !errors.Is(err, redis.Nil) {
				t.Logf("life %d: delete: %v", life, err)
			}
			t.Logf("life %d: deleted", life)
		}
	}
	t.Logf("%d of 12 lives needed a countDown of the opened latch", recovered)
	if e := early.Load(); e > 0 {
		t.Errorf("%d zero messages came before their life's count of countDowns was sent", e)
	}
	cancel()
	for _, sub := range subs {
		sub.Close() // ends its reader's ReceiveMessage
	}
	readers.Wait()
}

// attack17DumpLatch logs the counters' fields of latch name on each
// master.
func attack17DumpLatch(t *testing.T, c *cluster, name string) {
	t.Helper()
	for i := range c.direct {
		all, err := c.direct[i].HGetAll(t.Context(), quorum.CountersKey).Result()
		var mine []string
		for f, v := range all {
			if strings.HasSuffix(f, ":"+name) {
				mine = append(mine, f+"="+v)
			}
		}
		slices.Sort(mine)
		t.Logf("master %d: %v %v", i, mine, err)
	}
}
