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
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// fenceHold takes key with a new token through c, fences it twice (the same
// token both times) and releases it; it returns the token.
func fenceHold(t *testing.T, c *redis.Client, key string, n int, ttl time.Duration) int64 {
	t.Helper()
	ctx := t.Context()
	token := fmt.Sprintf("holder-%d", n)
	if err := c.SetNX(ctx, key, token, ttl).Err(); err != nil {
		t.Fatalf("holder %d: SET NX: %v", n, err)
	}
	f, err := c.Do(ctx, "FENCE", key, token).Int64()
	if err != nil {
		t.Fatalf("holder %d: FENCE: %v", n, err)
	}
	if again, err := c.Do(ctx, "FENCE", key, token).Int64(); err != nil || again != f {
		t.Errorf("holder %d: FENCE again = %d, %v; want %d (the same hold)", n, again, err, f)
	}
	if _, err := c.Do(ctx, "FENCE", key, "not-"+token).Int64(); errText(err) != "NOTHELD the lock '"+key+"' is not held by this token (or its validity ran out)" {
		t.Errorf("holder %d: FENCE by another token: %v; want NOTHELD", n, err)
	}
	if err := c.Eval(ctx, distlockRelease, []string{key}, token).Err(); err != nil {
		t.Fatalf("holder %d: release: %v", n, err)
	}
	return f
}

// TestFenceIncreasesAcrossHolders: over 5 real masters, all up and then
// with 2 killed, each holder in turn gets a token above the one before,
// and the same one for every FENCE of its hold. (A new deployment starts
// its counters once every master has answered: the first holder runs
// with all up.)
func TestFenceIncreasesAcrossHolders(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	last := int64(0)
	for n := range 8 {
		if n == 4 {
			c.kill(0)
			c.kill(3)
		}
		f := fenceHold(t, p.Client, "fenced", n, 10*time.Second)
		if f <= last {
			t.Errorf("holder %d got token %d; want above %d", n, f, last)
		}
		last = f
	}
}

// TestFenceThroughTwoProxies: holders take turns through two proxies over
// the same masters; the tokens keep increasing.
func TestFenceThroughTwoProxies(t *testing.T) {
	c := startNodes(t, 5)
	cfg := proxy.Config{CommandTimeout: commandTimeout}
	ps := []*proxyProc{startProxy(t, cfg, engineConfig(), c.addrs...), startProxy(t, cfg, engineConfig(), c.addrs...)}
	last := int64(0)
	for n := range 6 {
		f := fenceHold(t, ps[n%2].Client, "fenced", n, 10*time.Second)
		if f <= last {
			t.Errorf("holder %d (proxy %d) got token %d; want above %d", n, n%2, f, last)
		}
		last = f
	}
}

// TestFenceMastersRestartedEmptyBetweenHolders restarts two of five
// masters without persistence between two holders, waits out max_ttl so
// that they are seeded again, then restarts two others: each holder's
// token is still above the one before. Without the seeding the last
// holder's read would find no quorum of masters with counters. The proxy
// runs its monitor, as every proxy does: FENCE asks a window of three
// masters first, and when both restarted ones are outside it (one port
// order in ten), the monitor's counter round is what marks and seeds
// them (without it, the last holder got NOQUORUM, 4 unseeded).
func TestFenceMastersRestartedEmptyBetweenHolders(t *testing.T) {
	c := startNodes(t, 5)
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = 2*time.Second, 2*time.Second // the seeding waits max_ttl
	p := mustStartMonitored(t, qcfg, c.addrs...)
	last := int64(0)
	hold := func(n int) {
		t.Helper()
		f := fenceHold(t, p.Client, "fenced", n, 2*time.Second)
		if f <= last {
			t.Errorf("holder %d got token %d; want above %d", n, f, last)
		}
		last = f
	}
	hold(0)
	hold(1)
	for _, i := range []int{0, 1} {
		c.procs[i] = restartRedis(t, c.procs[i])
	}
	hold(2) // masters 0 and 1 are marked, and do not count
	time.Sleep(2*time.Second + 100*time.Millisecond)
	hold(3) // seeds 0 and 1 from the others' maxima, if it asks them
	for _, i := range []int{0, 1} {
		// Their quarantine ends at a probe past max_ttl, which a loaded
		// machine can delay past hold(3): hold(4) needs them counted, and
		// their counters seeded (by hold(3) or the monitor's round).
		waitState(t, p.Client, i, "up", 10*time.Second)
		for end := time.Now().Add(10 * time.Second); c.direct[i].HGet(t.Context(), quorum.CountersKey, "seeded").Val() != "1"; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("master %d's counters not seeded 10s after hold 3", i)
			}
		}
	}
	for _, i := range []int{2, 3} {
		c.procs[i] = restartRedis(t, c.procs[i])
	}
	hold(4) // read from 0, 1 and 4
	for i, d := range c.direct {
		v, err := d.HGet(t.Context(), quorum.CountersKey, "c").Int64()
		if i == 2 || i == 3 {
			continue // marked, waiting out max_ttl
		}
		if err != nil || v != last {
			t.Errorf("master %d's counter = %d, %v; want %d", i, v, err, last)
		}
	}
}

// TestIncrFenceKeysCounter is the do-it-yourself pattern through two
// proxies, with 2 of 5 masters killed after the first INCR: every INCR reply is above every
// earlier one, replies at once never repeat, GET returns at least the
// last reply, and a lock taken with the value works unchanged.
func TestIncrFenceKeysCounter(t *testing.T) {
	c := startNodes(t, 5)
	cfg := proxy.Config{CommandTimeout: commandTimeout, FenceKeys: []string{"fencing:*"}}
	ps := []*proxyProc{startProxy(t, cfg, engineConfig(), c.addrs...), startProxy(t, cfg, engineConfig(), c.addrs...)}
	ctx := t.Context()
	if v, err := ps[0].Client.Incr(ctx, "fencing:first").Result(); err != nil || v != 1 {
		t.Fatalf("the first INCR, all up = %d, %v; want 1", v, err) // starts the counters
	}
	c.kill(0)
	c.kill(1)
	last := int64(0)
	for n := range 6 {
		v, err := ps[n%2].Client.Incr(ctx, "fencing:token:global").Result()
		if err != nil || v <= last {
			t.Fatalf("INCR %d through proxy %d = %d, %v; want above %d", n, n%2, v, err, last)
		}
		last = v
		if got, err := ps[(n+1)%2].Client.Get(ctx, "fencing:token:global").Int64(); err != nil || got < v {
			t.Errorf("GET through the other proxy = %d, %v; want at least %d", got, err, v)
		}
		token := strconv.FormatInt(v, 10)
		if err := ps[n%2].Client.SetNX(ctx, "lock:orders", token, 10*time.Second).Err(); err != nil {
			t.Fatalf("SET lock:orders %s NX: %v", token, err)
		}
		ps[n%2].Client.Eval(ctx, distlockRelease, []string{"lock:orders"}, token)
	}

	// 4 clients at once, through both proxies: no value twice, each
	// client's own replies increasing.
	var mu sync.Mutex
	seen := map[int64]int{}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			prev := int64(0)
			for range 10 {
				v, err := ps[w%2].Client.Incr(ctx, "fencing:busy").Result()
				if err != nil {
					t.Errorf("client %d: INCR: %v", w, err)
					return
				}
				if v <= prev {
					t.Errorf("client %d: INCR = %d after %d", w, v, prev)
				}
				prev = v
				mu.Lock()
				seen[v]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for v, n := range seen {
		if n > 1 {
			t.Errorf("INCR returned %d %d times", v, n)
		}
	}
	if err := ps[0].Client.Del(ctx, "fencing:busy").Err(); errText(err) != "ERR 'fencing:busy' is a fence_keys counter: only INCR, INCRBY and GET may name it" {
		t.Errorf("DEL of a counter: %v; want the counter refusal", err)
	}
}

// TestFenceUnderLeastPrivilegeNodeACL: FENCE, INCR and GET of a counter,
// and the seeding of a new deployment, need nothing beyond the docs'
// least-privilege ACL on the masters: no master logs a denied command.
func TestFenceUnderLeastPrivilegeNodeACL(t *testing.T) {
	masters := []*redisProc{startACLMaster(t), startACLMaster(t), startACLMaster(t)}
	nodes := make([]quorum.Node, len(masters))
	for i, m := range masters {
		nodes[i] = redisnode.NewRedisNode(m.Addr, redisnode.NodeOptions{Username: "redlock", Password: "node-secret"})
	}
	e := quorum.New(engineConfig(), nodes...)
	t.Cleanup(func() { e.Close() })
	cfg := proxy.Config{CommandTimeout: commandTimeout, FenceKeys: []string{"fencing:*"}}
	p := serveProxy(t, cfg, e)
	c := newClient(t, p.Addr, nil)
	ctx := t.Context()
	if f := fenceHold(t, c, "acl:fenced", 0, 10*time.Second); f != 1 {
		t.Errorf("FENCE on a new deployment = %d; want 1", f)
	}
	if v, err := c.Incr(ctx, "fencing:acl").Result(); err != nil || v != 1 {
		t.Errorf("INCR = %d, %v; want 1", v, err)
	}
	if v, err := c.Get(ctx, "fencing:acl").Result(); err != nil || v != "1" {
		t.Errorf("GET = %q, %v; want 1", v, err)
	}
	for i, m := range masters {
		if log, err := adminClient(t, m.Addr).Do(ctx, "ACL", "LOG").Slice(); err != nil || len(log) != 0 {
			t.Errorf("master %d ACL LOG = %v, %v; want no denied command", i, log, err)
		}
	}
}
