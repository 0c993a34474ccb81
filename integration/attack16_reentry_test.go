package integration

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack16: review28 F0b's fix (a failed re-entrant acquire's undo gives
// back the token's earlier grant) under the races around it. The
// re-entrant acquire is bsm/redislock's obtain with a token of the
// client's own (Options.Token): its value's first len(token) bytes make
// a key already the token's.

// attack16Config is a proxy whose node_timeout is long enough for
// another proxy's commands to run while an acquire waits on a master
// that does not answer.
func attack16Config() quorum.Config {
	return quorum.Config{NodeTimeout: 500 * time.Millisecond, MinTTL: time.Second, MaxTTL: time.Minute}
}

// attack16Obtain is redislock's Obtain of key with token through rdb.
func attack16Obtain(ctx context.Context, rdb redislock.RedisClient, keys []string, token string, ttl time.Duration) error {
	_, err := redislock.New(rdb).ObtainMulti(ctx, keys, ttl, &redislock.Options{Token: token})
	return err
}

// attack16Warm waits until a lock through rdb is granted and given back
// (every master connected), so a loaded machine's first dial is not the
// scenario's first acquire.
func attack16Warm(t *testing.T, rdb *redis.Client) {
	t.Helper()
	for try := 0; ; try++ {
		ok, err := rdb.SetNX(t.Context(), "attack16:warm", "warm", 2*time.Second).Result()
		if err == nil && ok {
			if err := rdb.Eval(t.Context(), distlockRelease, []string{"attack16:warm"}, "warm").Err(); err != nil {
				t.Fatalf("warm-up release: %v", err)
			}
			return
		}
		if try == 20 {
			t.Fatalf("warm-up lock: %v, %v", ok, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// attack16Dump logs what each master holds at key, with its PTTL.
func attack16Dump(t *testing.T, c *cluster, what string, keys ...string) {
	t.Helper()
	for _, key := range keys {
		for i := range c.direct {
			if c.killed[i] {
				continue
			}
			v, _ := c.value(t, i, key)
			pttl := c.direct[i].PTTL(t.Context(), key).Val()
			t.Logf("%s: master %d %s = %q, PTTL %v", what, i, key, v, pttl)
		}
	}
}

// review28's scenario through the proxy with redislock: A holds K on
// masters 0 and 2 (master 1 has C's leftover), A re-obtains while master
// 2 is silent to P: no quorum. C must not then get K while A's first
// grant is valid.
func TestAttack16FailedReobtainKeepsTheEarlierGrantThroughTheProxy(t *testing.T) {
	c := startNodes(t, 3)
	var drop atomic.Bool
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{drop: &drop})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key = "attack16:review28"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	const tokC = "tokCCCCCCCCCCCCCCCCCCC"
	if err := c.direct[1].Set(ctx, key, tokC+"leftover", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 10*time.Second); err != nil {
		t.Fatalf("A's obtain: %v", err)
	}
	expires := start.Add(10 * time.Second)
	drop.Store(true)
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 10*time.Second); err == nil {
		t.Fatal("A's re-obtain with master 2 silent: granted; want no quorum")
	}
	attack16Dump(t, c, "after A's failed re-obtain", key)
	drop.Store(false)
	err := attack16Obtain(ctx, p, []string{key}, tokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's first grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

// ObtainMulti over k1 (A's already, on masters 0 and 2) and k2 (free):
// master 0 takes k1 again and k2 fresh, master 1 denies (C's leftover of
// k1), master 2 is silent. The undo must give k1 back and take k2 away,
// per key: C must not get k1 while A's grant is valid, and k2 must be
// left nowhere A was told nothing of (masters 0 and 1).
func TestAttack16FailedObtainMultiGivesBackTheReenteredKeyAndTakesTheFreshOne(t *testing.T) {
	c := startNodes(t, 3)
	var drop atomic.Bool
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{drop: &drop})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const k1, k2 = "attack16:multi1", "attack16:multi2"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	const tokC = "tokCCCCCCCCCCCCCCCCCCC"
	if err := c.direct[1].Set(ctx, k1, tokC+"leftover", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{k1}, tokA, 10*time.Second); err != nil {
		t.Fatalf("A's obtain of k1: %v", err)
	}
	expires := start.Add(10 * time.Second)
	drop.Store(true)
	if err := attack16Obtain(ctx, p, []string{k1, k2}, tokA, 10*time.Second); err == nil {
		t.Fatal("A's ObtainMulti(k1, k2) with master 2 silent: granted; want no quorum")
	}
	attack16Dump(t, c, "after the failed ObtainMulti", k1, k2)
	for _, i := range []int{0, 1} {
		if v, ok := c.value(t, i, k2); ok {
			t.Errorf("master %d keeps k2 = %q after the failed ObtainMulti; want none (it was free)", i, v)
		}
	}
	if v, _ := c.value(t, 0, k1); v != tokA {
		t.Errorf("master 0 k1 = %q after the failed ObtainMulti; want A's %q (its earlier grant)", v, tokA)
	}
	drop.Store(false)
	err := attack16Obtain(ctx, p, []string{k1}, tokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", k1)
		t.Errorf("C obtained k1 while A's grant is valid for %v more", time.Until(expires).Round(time.Millisecond))
	}
}

// A's failed re-obtain through P waits on a silent master 2; meanwhile
// A releases K through Q (told: released). P's undo must not give the
// earlier grant back on master 0: a released key that comes back holds
// off every other client for its old PTTL (and a release the client was
// told of is undone).
func TestAttack16FailedReentryUndoDoesNotResurrectAReleasedKey(t *testing.T) {
	c := startNodes(t, 3)
	var drop atomic.Bool
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{drop: &drop})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:released"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	if err := c.direct[1].Set(ctx, key, "leftover-of-another", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	lock, err := redislock.New(q).Obtain(ctx, key, 10*time.Second, &redislock.Options{Token: tokA})
	if err != nil {
		t.Fatalf("A's obtain through Q: %v", err)
	}
	drop.Store(true)
	failed := make(chan error, 1)
	go func() { failed <- attack16Obtain(ctx, p, []string{key}, tokA, 10*time.Second) }()
	time.Sleep(150 * time.Millisecond)
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("A's release through Q: %v", err)
	}
	if err := <-failed; err == nil {
		t.Fatal("P's obtain: granted; want no quorum")
	}
	attack16Dump(t, c, "after P's undo", key)
	for _, i := range []int{0, 2} {
		if v, ok := c.value(t, i, key); ok {
			t.Errorf("master %d %s = %q after A's release and P's undo; want none", i, key, v)
		}
	}
}

// A failed re-obtain keeps the hold's fencing token: A holds K on every
// master and FENCEs it (T1); A's re-obtain through P, whose replies from
// masters 1 and 2 come after node_timeout, fails (master 0 set back,
// masters 1 and 2 left as they took it again with the same TTL). The
// hold is the same: a FENCE through Q answers T1 again.
func TestAttack16FailedReobtainKeepsTheHoldsFencingToken(t *testing.T) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{replyDelay: slow}), startRelay(t, c.addrs[2], relayOpts{replyDelay: slow})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:fenced"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain: %v", err)
	}
	t1, err := q.Do(ctx, "FENCE", key, tokA).Int64()
	if err != nil {
		t.Fatalf("FENCE: %v", err)
	}
	slow.Store(int64(700 * time.Millisecond)) // past node_timeout (500ms)
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 30*time.Second); err == nil {
		t.Fatal("A's re-obtain with two replies late: granted; want no quorum")
	}
	slow.Store(0)
	attack16Dump(t, c, "after A's failed re-obtain", key)
	if t2, err := q.Do(ctx, "FENCE", key, tokA).Int64(); err != nil || t2 != t1 {
		t.Errorf("FENCE after the failed re-obtain = %d, %v; want the hold's %d", t2, err, t1)
	}
}

// attack16 R1 (fixed by d598eed): A holds K for 30s on masters 0 and 2
// (master 1 has C's leftover). A re-obtains K with a 2s TTL through P:
// master 0 takes it again, master 1 denies, master 2 takes it again too
// but its reply comes after P's node_timeout. No quorum: A keeps relying
// on its first grant. The undo gives master 0 back and leaves master 2
// alone (it did not answer), so master 2 keeps the re-entry's 2s. Once
// those run out, C gets masters 1 and 2 while A's first grant is valid
// for 25s more.
func TestAttack16TimedOutReentryLeavesTheEarlierGrantShortenedOnTheSilentMaster(t *testing.T) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{replyDelay: slow})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key = "attack16:silent"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	const tokC = "tokCCCCCCCCCCCCCCCCCCC"
	if err := c.direct[1].Set(ctx, key, tokC+"leftover", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain: %v", err)
	}
	expires := start.Add(30 * time.Second)
	slow.Store(int64(700 * time.Millisecond)) // past node_timeout (500ms)
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 2*time.Second); err == nil {
		t.Fatal("A's re-obtain with master 2's reply late: granted; want no quorum")
	}
	attack16Dump(t, c, "after A's failed re-obtain", key)
	slow.Store(0)
	time.Sleep(2200 * time.Millisecond)
	attack16Dump(t, c, "2.2s later", key)
	err := attack16Obtain(ctx, p, []string{key}, tokC, 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's first grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

// attack16 R1 (fixed by d598eed), with no other client's key anywhere,
// only a slow network: A holds K for 30s on every master; A re-obtains K
// with a 2s TTL through P, whose links to masters 1 and 2 answer after
// node_timeout. Master 0 grants (given back to 30s by the undo); masters
// 1 and 2 took K again with 2s and are left so. Once those run out C
// gets masters 1 and 2 while A's first grant is valid for 27s more.
func TestAttack16TimedOutReentriesLeaveTheEarlierGrantShortenedOnAQuorum(t *testing.T) {
	c := startNodes(t, 3)
	slow := fixedDelay(0)
	pAddrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{replyDelay: slow}), startRelay(t, c.addrs[2], relayOpts{replyDelay: slow})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:slownet"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA"
	start := time.Now()
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 30*time.Second); err != nil {
		t.Fatalf("A's obtain: %v", err)
	}
	expires := start.Add(30 * time.Second)
	slow.Store(int64(700 * time.Millisecond)) // past node_timeout (500ms)
	if err := attack16Obtain(ctx, p, []string{key}, tokA, 2*time.Second); err == nil {
		t.Fatal("A's re-obtain with two replies late: granted; want no quorum")
	}
	attack16Dump(t, c, "after A's failed re-obtain", key)
	time.Sleep(2200 * time.Millisecond)
	err := attack16Obtain(ctx, q, []string{key}, "tokCCCCCCCCCCCCCCCCCCC", 10*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's first grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
