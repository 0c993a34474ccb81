package integration

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack17 F3: the proxy's subscriber relay counted each master's copies
// of a message in order and delivered the k-th publish once a quorum sent
// their k-th copy; a master that missed a publish lagged behind. Three
// Redisson unlocks through P, each with P's link to another master cut
// (each unlock runs on the other two, and each of those publishes its
// copy): after the first two, every master has missed one. The third's
// copies came from two masters that each lagged by one, read as late
// copies of a publish already delivered, and the waiter never woke. Each
// unlock's copies now carry its tag (internal/pubid) and are counted by
// it.
func TestAttack17ThreeUnlocksEachMissingAnotherMasterWakeTheWaiterThreeTimes(t *testing.T) {
	c := startNodes(t, 3)
	var drops [3]atomic.Bool
	var pAddrs []string
	for i, a := range c.addrs {
		pAddrs = append(pAddrs, startRelay(t, a, relayOpts{drop: &drops[i]}))
	}
	qcfg := attack17NoscriptConfig()
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, pAddrs...).Client
	q := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, c.addrs...).Client
	ctx := t.Context()
	const name, channel = "redisson:a17", "redisson_lock__channel:{redisson:a17}"
	const owner = "9f1c2d3e-aaaa-bbbb-cccc-000000000017:1"
	sub := q.Subscribe(ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	lock, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonUnlock)
	for round, cut := range []int{2, 1, 0} {
		if err := lock.Run(ctx, p, []string{name}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("round %d: lock: %v; want nil (acquired)", round, err)
		}
		drops[cut].Store(true)
		keys := []string{name, channel, fmt.Sprintf("redisson_unlock_latch:{%s}:r%d", name, round)}
		v, err := unlock.Run(ctx, p, keys, 0, 30000, owner, "PUBLISH", 13500).Int64()
		drops[cut].Store(false)
		if v != 1 || err != nil {
			t.Fatalf("round %d (master %d cut): unlock = %d, %v; want 1", round, cut, v, err)
		}
		msg, err := sub.ReceiveTimeout(ctx, 2*time.Second)
		if m, ok := msg.(*redis.Message); err != nil || !ok || m.Payload != "0" {
			t.Fatalf("round %d (master %d cut): the waiter got %v, %v; want the unlock message 0", round, cut, msg, err)
		}
		// The cut master's leftover hold goes (as its TTL would end it).
		if err := c.direct[cut].Del(ctx, name).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
