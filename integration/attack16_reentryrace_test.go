package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack16's findings against f0b2's undo (1ba528d): each fails on main.

// A failed re-entry through P (master 2 does not answer P, master 1
// holds another client's leftover) races a successful re-entry of the
// same token through Q: Q's obtain re-enters masters 0 and 2 and tells
// the client it holds K for 20s. P's undo then "gives back" master 0's
// earlier grant (its old PTTL, 2s) over Q's grant, whose value is the
// same. Once that runs out, and the leftover on master 1 with it,
// another client gets masters 0 and 1 while Q's grant is valid. One
// Redis: both obtains succeed; nothing is shortened.
func TestAttack16FailedReentryUndoShortensTheSameTokensConcurrentGrant(t *testing.T) {
	c := startNodes(t, 3)
	var drop atomic.Bool
	pAddrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{drop: &drop})}
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, attack16Config(), c.addrs...).Client
	attack16Warm(t, q)
	ctx := t.Context()
	const key = "attack16:same"
	const tokA = "tokAAAAAAAAAAAAAAAAAAA" // a redislock token: 22 bytes
	if err := c.direct[1].Set(ctx, key, "leftover-of-another", 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := attack16Obtain(ctx, q, []string{key}, tokA, 2*time.Second); err != nil {
		t.Fatalf("A's first obtain through Q (masters 0 and 2): %v", err)
	}
	drop.Store(true)
	failed := make(chan error, 1)
	go func() { failed <- attack16Obtain(ctx, p, []string{key}, tokA, 20*time.Second) }()
	time.Sleep(150 * time.Millisecond) // P's re-entry is on master 0; P waits for master 2
	start := time.Now()
	if err := attack16Obtain(ctx, q, []string{key}, tokA, 20*time.Second); err != nil {
		t.Fatalf("A's second obtain through Q: %v", err)
	}
	expires := start.Add(20 * time.Second)
	if err := <-failed; err == nil {
		t.Fatal("P's obtain: granted; want no quorum (master 1 another's, master 2 silent)")
	}
	attack16Dump(t, c, "after P's undo", key)
	time.Sleep(3100*time.Millisecond - time.Since(start)) // the leftover and the given-back PTTL run out
	err := attack16Obtain(ctx, q, []string{key}, "tokCCCCCCCCCCCCCCCCCCC", 20*time.Second)
	if err == nil && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's obtain", key)
		t.Errorf("C obtained %s while A's obtain through Q is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}

// A holds K for 30s on masters 0 and 2 (master 1 has C's leftover). A
// re-obtains K with a 2s TTL through P: master 0 takes it again, master
// 1 denies, master 2 takes it again too but its reply comes after P's
// node_timeout. No quorum: A keeps relying on its first grant. The undo
// gives master 0 back and leaves master 2 alone (it did not answer), so
// master 2 keeps the re-entry's 2s. Once those run out, C gets masters
// 1 and 2 while A's first grant is valid for 25s more.
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

// The same with no other client's key anywhere, only a slow network:
// A holds K for 30s on every master; A re-obtains K with a 2s TTL
// through P, whose links to masters 1 and 2 answer after node_timeout.
// Master 0 grants (given back to 30s by the undo); masters 1 and 2 took
// K again with 2s and are left so. Once those run out C gets masters 1
// and 2 while A's first grant is valid for 27s more.
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
