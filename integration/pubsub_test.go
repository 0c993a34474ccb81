package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// pubsubSession subscribes through addr and reads what comes back;
// publish publishes a message the way a lock script's release does: on
// one Redis, once; through the proxy, on every master.
func pubsubSession(t *testing.T, addr string, publish func(channel, payload string)) []string {
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
	publish("redisson_lock__channel:{a}", "0")
	out = append(out, "message "+c.reply()+" "+c.reply())
	publish("qx", "")
	out = append(out, "pmessage "+c.reply())
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
	want := pubsubSession(t, single.Addr, func(ch, msg string) { one.Publish(t.Context(), ch, msg) })
	c, p := setup(t, 3, proxy.Config{})
	got := pubsubSession(t, p.Addr, func(ch, msg string) {
		for _, d := range c.direct {
			d.Publish(t.Context(), ch, msg)
		}
	})
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("step %d through the proxy: %s\n            one redis-server: %s", i, g, w)
		}
	}
}

// TestWaiterWakesThroughAnyProxy subscribes through a proxy, with 2 of 5
// masters down, and publishes on the live masters as a publishing release
// script does through any proxy (one copy per master): the waiter gets
// each release once.
func TestWaiterWakesThroughAnyProxy(t *testing.T) {
	c := startNodes(t, 5)
	c.kill(0)
	c.kill(1)
	a := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)

	// The waiter is a real client: go-redis's PubSub.
	ps := a.Client.Subscribe(t.Context(), "redisson_lock__channel:{k}")
	t.Cleanup(func() { ps.Close() })
	if _, err := ps.Receive(t.Context()); err != nil { // the confirmation
		t.Fatalf("SUBSCRIBE through proxy A: %v", err)
	}
	publishLive := func(payload string) {
		for _, i := range c.live() {
			if err := c.direct[i].Publish(t.Context(), "redisson_lock__channel:{k}", payload).Err(); err != nil {
				t.Fatalf("PUBLISH on node %d: %v", i, err)
			}
		}
	}
	for round := range 2 { // two releases with the same payload: two wake-ups
		publishLive("0")
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		msg, err := ps.ReceiveMessage(ctx)
		cancel()
		if err != nil {
			t.Fatalf("release %d: no message within 5s: %v", round+1, err)
		}
		if msg.Channel != "redisson_lock__channel:{k}" || msg.Payload != "0" {
			t.Errorf("release %d: message %v; want 0 on redisson_lock__channel:{k}", round+1, msg)
		}
		// The other two copies of this release must not follow. (A timeout
		// given as such keeps go-redis's connection.)
		extra, err := ps.ReceiveTimeout(t.Context(), 300*time.Millisecond)
		if err == nil {
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
