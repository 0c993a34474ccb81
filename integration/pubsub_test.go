package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// pubsubSession subscribes through addr and reads what comes back;
// publish publishes a message the way a lock script's release does: on
// one Redis, once; through the proxy, on every master.
func pubsubSession(t *testing.T, addr string, publish func(cmd, channel, payload string)) []string {
	t.Helper()
	c := dialRaw(t, addr)
	var out []string
	step := func(n int, args ...string) {
		c.send(encodeCommand(args...))
		got := make([]string, n)
		for i := range got {
			got[i] = c.reply()
		}
		out = append(out, strings.Join(args, " ")+" => "+strings.Join(got, " "))
	}
	step(2, "SUBSCRIBE", "redisson_lock__channel:{a}", "b")
	step(1, "SUBSCRIBE", "b")
	step(2, "PSUBSCRIBE", "redisson_lock__channel:*", "q*")
	step(1, "PING")
	step(1, "PING", "hi")
	step(1, "PING", "a", "b")
	step(1, "GET", "k")
	step(1, "SET", "k", "v", "NX", "PX", "1000")
	step(1, "MULTI")
	step(1, "subscribe")
	publish("PUBLISH", "redisson_lock__channel:{a}", "0")
	out = append(out, "message "+c.reply()+" "+c.reply())
	publish("PUBLISH", "qx", "")
	out = append(out, "pmessage "+c.reply())
	step(1, "SSUBSCRIBE", "redisson_lock__channel:{a}")
	publish("SPUBLISH", "redisson_lock__channel:{a}", "0")
	out = append(out, "smessage "+c.reply())
	step(2, "SUNSUBSCRIBE", "redisson_lock__channel:{a}", "nope")
	step(1, "SUNSUBSCRIBE")
	step(2, "UNSUBSCRIBE", "b", "nope")
	step(1, "UNSUBSCRIBE")
	step(2, "PUNSUBSCRIBE")
	step(1, "PUNSUBSCRIBE")
	step(1, "UNSUBSCRIBE")
	step(1, "PING")
	step(1, "QUIT")
	c.wantClosed(5 * time.Second)
	return out
}

func TestPubSubRepliesAsOneRedis(t *testing.T) {
	single := startRedis(t)
	one := direct(t, single.Addr)
	want := pubsubSession(t, single.Addr, func(cmd, ch, msg string) { one.Do(t.Context(), cmd, ch, msg) })
	c, p := setup(t, 3, proxy.Config{})
	got := pubsubSession(t, p.Addr, func(cmd, ch, msg string) {
		for _, d := range c.direct {
			d.Do(t.Context(), cmd, ch, msg)
		}
	})
	wantSameSteps(t, "", got, want)
}

// TestWaiterWakesThroughAnyProxy subscribes a waiter through proxy A,
// with 2 of 5 masters down, and releases the lock through proxy B with
// Redisson's unlock script, which publishes on every master it runs on:
// the waiter gets each release once, the copies collapsed.
func TestWaiterWakesThroughAnyProxy(t *testing.T) {
	c := startNodes(t, 5)
	c.kill(0)
	c.kill(1)
	a := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
	b := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
	lock, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock)
	name, channel := "rl", "redisson_lock__channel:{rl}"
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"

	// The waiter is a real client: go-redis's PubSub.
	ps := a.Client.Subscribe(t.Context(), channel)
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the confirmation
		t.Fatalf("SUBSCRIBE through proxy A: %v", err)
	}
	for round := range 2 { // two releases with the same payload: two wake-ups
		if err := lock.Run(t.Context(), b.Client, []string{name}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("round %d: lock through B: %v; want nil (acquired)", round+1, err)
		}
		keys := []string{name, channel, "redisson_unlock_latch:{rl}:r" + strconv.Itoa(round)}
		if v, err := unlock.Run(t.Context(), b.Client, keys, 0, 30000, owner, "PUBLISH", 3000).Int64(); v != 1 || err != nil {
			t.Fatalf("round %d: unlock through B = %d, %v; want 1", round+1, v, err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		msg, err := ps.ReceiveMessage(ctx)
		cancel()
		if err != nil {
			t.Fatalf("release %d: no message within 5s: %v", round+1, err)
		}
		if msg.Channel != channel || msg.Payload != "0" {
			t.Errorf("release %d: message %v; want 0 on %s", round+1, msg, channel)
		}
		// The other two copies of this release must not follow. (A timeout
		// given as such keeps go-redis's connection.)
		if extra, err := ps.ReceiveTimeout(t.Context(), 300*time.Millisecond); err == nil {
			t.Errorf("release %d: a second message %v; want the 3 copies collapsed into one", round+1, extra)
		}
	}
}

// TestSubscribersShareOneNodeConnection checks that many subscribed
// clients cost each master one subscriber, and nothing once they left.
func TestSubscribersShareOneNodeConnection(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	var subs []*redis.PubSub
	for range 20 {
		ps := p.Client.Subscribe(t.Context(), "ch")
		if _, err := ps.Receive(t.Context()); err != nil {
			t.Fatalf("SUBSCRIBE: %v", err)
		}
		subs = append(subs, ps)
	}
	for i, d := range c.direct {
		if n := d.PubSubNumSub(t.Context(), "ch").Val()["ch"]; n != 1 {
			t.Errorf("node %d: NUMSUB ch = %d with 20 subscribed clients; want 1", i, n)
		}
	}
	for _, ps := range subs {
		ps.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for i, d := range c.direct {
		for d.PubSubNumSub(t.Context(), "ch").Val()["ch"] != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still subscribed to ch 5s after every client left", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
