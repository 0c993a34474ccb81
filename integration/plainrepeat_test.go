package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestPlainRepeatKeepsTheEarlierGrant: A holds K on masters 1 and 2
// (master 0 holds a leftover that ends in 2s) and sends its SET NX again
// with the same token, as redis-py's blocking acquire does after a
// timeout: masters 0 and 1 deny, and master 2's reply (a denial too) is
// held past node_timeout. One Redis answers A nil and keeps its lock, and
// so must the proxy: once the leftover ends, C must not get K while A's
// grant is valid. Before quorum's leavesSilent the failed repeat released
// master 2 (its write may have landed there, and nothing told it from
// A's grant), and C got K from masters 0 and 2. Over masters that reveal
// what a denied key holds (SET NX GET, once the engine's probes read
// Redis 7.0) and over masters it has not probed (plain SET NX, as on
// Redis 6).
func TestPlainRepeatKeepsTheEarlierGrant(t *testing.T) {
	for _, probed := range []bool{true, false} {
		t.Run(fmt.Sprintf("probed %v", probed), func(t *testing.T) {
			c := startNodes(t, 3)
			var h attack18HoldFirst
			e := newEngine(t, attack16Config(), c.addrs[0], c.addrs[1], startHoldRelay(t, c.addrs[2], &h))
			if probed {
				if err := e.Start(t.Context()); err != nil {
					t.Fatalf("Start: %v", err)
				}
			}
			p := newClient(t, serveProxy(t, proxy.Config{CommandTimeout: commandTimeout}, e).Addr, nil)
			attack16Warm(t, p)
			ctx := t.Context()
			const key = "repeat19:plain"
			const tokA, tokC = "tokA", "tokC"
			const leftover = 2 * time.Second
			begun := time.Now()
			if err := c.direct[0].Set(ctx, key, "leftover", leftover).Err(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if ok, err := p.SetNX(ctx, key, tokA, 10*time.Second).Result(); !ok || err != nil {
				t.Fatalf("A's SET NX = %v, %v; want OK", ok, err)
			}
			expires := start.Add(10 * time.Second)
			h.resetReplies(key, 1, 2*attack16Config().NodeTimeout)
			if ok, err := p.SetNX(ctx, key, tokA, 10*time.Second).Result(); ok || err != nil {
				t.Fatalf("A's repeated SET NX = %v, %v; want nil, as from one Redis", ok, err)
			}
			if _, verbs := h.held(); len(verbs) != 1 || verbs[0] != "set" {
				t.Fatalf("the relay held replies to %v; want the repeat's SET", verbs)
			}
			attack16Dump(t, c, "after A's repeat", key)
			if v, _ := c.value(t, 2, key); v != tokA {
				t.Errorf("master 2 holds %q after A's failed repeat; want A's grant, %q", v, tokA)
			}
			time.Sleep(time.Until(begun.Add(leftover + 100*time.Millisecond)))
			ok, err := p.SetNX(ctx, key, tokC, 10*time.Second).Result()
			if ok && time.Now().Before(expires) {
				attack16Dump(t, c, "after C's SET NX", key)
				t.Errorf("C got %s while A's grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
			} else if err != nil {
				t.Errorf("C's SET NX = %v; want nil", err)
			}
		})
	}
}

// TestPlainAcquireAnswersAsOneRedis: SET NX PX through a proxy whose
// masters answer SET NX GET replies as one Redis does to SET NX PX: OK on
// a free key, nil on a held one and on a key of another type (where SET
// NX GET answers WRONGTYPE), and the masters' GET values never reach the
// client.
func TestPlainAcquireAnswersAsOneRedis(t *testing.T) {
	c := startNodes(t, 3)
	e := newEngine(t, engineConfig(), c.addrs...)
	if err := e.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	p := newClient(t, serveProxy(t, proxy.Config{CommandTimeout: commandTimeout}, e).Addr, nil)
	ref := newClient(t, startRedis(t).Addr, nil)
	ctx := t.Context()
	setup := func(rdb *redis.Client) {
		t.Helper()
		for _, err := range []error{
			rdb.RPush(ctx, "r19:list", "tok").Err(),
			rdb.HSet(ctx, "r19:hash", "tok", "1").Err(),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	setup(ref)
	for i := range c.direct {
		setup(c.direct[i])
	}
	cmds := [][]any{
		{"SET", "r19:k", "tok", "NX", "PX", "10000"},
		{"SET", "r19:k", "tok", "NX", "PX", "10000"},
		{"SET", "r19:k", "other", "PX", "10000", "NX"},
		{"SET", "r19:list", "tok", "NX", "PX", "10000"},
		{"SET", "r19:hash", "tok", "PX", "10000", "NX"},
		{"SET", "r19:e", "", "NX", "PX", "10000"},
		{"SET", "r19:e", "", "NX", "PX", "10000"},
		{"GET", "r19:k"},
		{"TYPE", "r19:list"},
	}
	for _, cmd := range cmds {
		pv, perr := p.Do(ctx, cmd...).Result()
		rv, rerr := ref.Do(ctx, cmd...).Result()
		if fmt.Sprint(pv, errText(perr)) != fmt.Sprint(rv, errText(rerr)) {
			t.Errorf("%v: proxy %v %q, one Redis %v %q", cmd, pv, errText(perr), rv, errText(rerr))
		}
	}
}
