package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// attack19: a decided publish over slow links (200ms round trips,
// node_timeout 500ms) from a proxy whose late-landing pipeline has not
// dialed yet: the read lock's last unlock message reaches a subscriber
// (4349955 sends no op on a new connection with less time left than its
// dial took; a decided publish must still go out).
func TestAttack19DecidedPublishOverSlowLinksIsDelivered(t *testing.T) {
	p, _ := slowLinkProxy(t)
	ctx := t.Context()
	const name = "a19pub"
	sub := p.Subscribe(ctx, "redisson_rwlock:{"+name+"}")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	attack16Warm(t, p) // the lock operations' connections dialed; not the late-landing ones
	r := readLockClient{name, "5e5e-0019:1"}
	if ms, err := r.take(t, p, 30000); err != redis.Nil {
		// A failed take may leave its count on a master (a retry by
		// the same thread would count twice): not this scenario.
		t.Skipf("read lock over slow links: %d, %v", ms, err)
	}
	v, err := r.unlock(t, p, "u1")
	t.Logf("unlock: %d, %v", v, err)
	if v != 1 || err != nil {
		t.Fatalf("unlock = %d, %v; want 1", v, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(rctx)
	if err != nil || msg.Payload != "0" {
		t.Errorf("the unlock message over slow links: %v, %v; want 0", msg, err)
	}
}
