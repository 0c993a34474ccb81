package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/clientlua"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestSemaphoreScoredByAcquisitionIsRefused: with one master down, two
// clients acquiring a limit-1 redis-semaphore are never both told they
// hold it: its acquire is a write the wrapper cannot read as a hold (a
// member scored by the time it was taken, not by its expiry), refused
// with its reason on every master, and no master keeps any of it.
func TestSemaphoreScoredByAcquisitionIsRefused(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(4)
	ctx := t.Context()
	acquire := redis.NewScript(clientlua.SemaphoreAcquire)
	granted := 0
	for _, id := range []string{"client-a", "client-b"} {
		now := strconv.FormatInt(time.Now().UnixMilli(), 10)
		n, err := acquire.Run(ctx, p.Client, []string{"semaphore:s"}, 1, id, 10000, now).Int64()
		switch {
		case err == nil && n == 1:
			granted++
		case err == nil || !strings.Contains(err.Error(), "script refused: it scores a sorted-set member by what is not its expiry"):
			t.Errorf("%s: acquire = %d, %v; want refused", id, n, err)
		}
	}
	if granted > 0 {
		t.Errorf("%d clients hold a semaphore of limit 1 scored by acquisition time; want it refused", granted)
	}
	for _, i := range c.live() {
		if n := c.direct[i].Exists(ctx, "semaphore:s").Val(); n != 0 {
			t.Errorf("node %d keeps semaphore:s", i)
		}
	}
}

// TestForeignFieldCannotFreezeARedissonLock: a client without the token
// cannot add its field to another's Redisson hash through the proxy, so
// the owner's watchdog renewal keeps working (issue 16, finding 6).
func TestForeignFieldCannotFreezeARedissonLock(t *testing.T) {
	withTwoDown(t, "", func(t *testing.T, c *cluster, p *proxyProc, down int) {
		ctx := t.Context()
		lock, renew := redis.NewScript(redissonLock), redis.NewScript(redissonRenew)
		owner, thief := "owner-uuid:1", "thief-uuid:1"
		if err := lock.Run(ctx, p.Client, []string{"rl"}, 30000, owner).Err(); err != redis.Nil {
			t.Fatalf("lock: %v; want nil (acquired)", err)
		}
		err := p.Client.Eval(ctx, `redis.call("hset", KEYS[1], ARGV[1], 1) return 1`, []string{"rl"}, thief).Err()
		if err == nil || !strings.Contains(err.Error(), "adds to a key another token holds") {
			t.Errorf("foreign HSET: %v; want refused", err)
		}
		if v, err := renew.Run(ctx, p.Client, []string{"rl"}, 30000, owner).Int64(); v != 1 || err != nil {
			t.Errorf("owner's renewal = %d, %v; want 1", v, err)
		}
		for _, i := range c.live() {
			if h := c.direct[i].HGetAll(ctx, "rl").Val(); len(h) != 1 || h[owner] != "1" {
				t.Errorf("node %d: HGETALL rl = %v; want only the owner's field", i, h)
			}
		}
	})
}

// TestRefusedScriptPublishesNothing: a subscriber through the proxy gets
// the PUBLISH of a served script once, and never that of a refused one.
func TestRefusedScriptPublishesNothing(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	sub := newClient(t, p.Addr, nil).Subscribe(ctx, "events")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range c.direct {
		d.Set(ctx, "held", "other", 10*time.Second)
	}
	err := p.Client.Eval(ctx, `redis.call("publish", ARGV[2], ARGV[1]) return redis.call("del", KEYS[1])`, []string{"held"}, "refused", "events").Err()
	if err == nil || !strings.Contains(err.Error(), "another token's hold") {
		t.Fatalf("refused run: %v; want refused", err)
	}
	n, err := p.Client.Eval(ctx, `redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000) return redis.call("publish", ARGV[2], ARGV[1])`,
		[]string{"free"}, "served", "events").Int64()
	if err != nil || n != 0 {
		t.Fatalf("served run = %d, %v; want 0 (the count is not known while the run is judged)", n, err)
	}
	mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(mctx)
	if err != nil || msg.Payload != "served" {
		t.Fatalf("message = %v, %v; want served, never refused", msg, err)
	}
	// Nothing more arrives: the refused run's copies were never sent.
	mctx2, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if msg, err := sub.ReceiveMessage(mctx2); err == nil {
		t.Errorf("second message %q; want none", msg.Payload)
	}
}

// TestScriptFlushRemovesTheWrapperFromNodes: SCRIPT FLUSH through the
// proxy removes from every master what serving scripts by their effect
// left there (the wrapper's library, an older version's per-script
// libraries), and leaves other libraries; scripts run again after it.
func TestScriptFlushRemovesTheWrapperFromNodes(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	take := func(i int) {
		t.Helper()
		body := fmt.Sprintf(`local v = %d return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000)`, i)
		if err := p.Client.Eval(ctx, body, []string{fmt.Sprint("flush-", i)}, "tok").Err(); err != nil {
			t.Fatalf("EVAL %d: %v", i, err)
		}
	}
	for i := range 20 {
		take(i)
	}
	libraries := func(d *redis.Client) []string {
		t.Helper()
		libs, err := d.Do(ctx, "FUNCTION", "LIST").Slice()
		if err != nil {
			t.Fatalf("FUNCTION LIST: %v", err)
		}
		var names []string
		for _, l := range libs {
			f, _ := l.([]any)
			for i := 0; i+1 < len(f); i += 2 {
				if f[i] == "library_name" {
					names = append(names, fmt.Sprint(f[i+1]))
				}
			}
		}
		return names
	}
	for i, d := range c.direct {
		if names := libraries(d); len(names) != 1 || !strings.HasPrefix(names[0], "rlp_") {
			t.Errorf("node %d after 20 distinct scripts: libraries %q; want one rlp_ library", i, names)
		}
		for _, lib := range []string{"rlp_0123", "mine"} {
			if err := d.Do(ctx, "FUNCTION", "LOAD", "#!lua name="+lib+"\nredis.register_function('"+lib+"_f', function() return 1 end)").Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Client.ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
	for i, d := range c.direct {
		if names := libraries(d); len(names) != 1 || names[0] != "mine" {
			t.Errorf("node %d after SCRIPT FLUSH: libraries %q; want only mine", i, names)
		}
	}
	take(100)
}
