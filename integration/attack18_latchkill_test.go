package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attack18 A4: a decided publish may land late (its limit on each
// master's clock, 5s). When it shared the lock operations' connection, a
// lock operation of another client that timed out behind it made the
// next connection kill that one (F4b), and the publish, still on its
// way, with it: the zero message was lost on every master. Late-landing
// operations now go on connections of their own, never killed.
// attack14 P2's scenario (every master's link holds the chunk that
// carries the latch's zero message 2.5s, within its limit: delivered
// once) with another client's SET NXs through the same proxy while the
// chunks are held: the zero message must still be delivered once.
func TestAttack18LatchZeroMessageLandsLateBesideALockOperation(t *testing.T) {
	c := startNodes(t, 3)
	const name = "latch:attack18:a4"
	channel := "redisson_countdownlatch__channel__{" + name + "}"
	var hold atomic.Int64
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = attack12PublishRelay(t, c.addrs[i], []byte(channel), &hold)
	}
	p := attack11StartMonitored(t, latchConfig(), engineConfig(), addrs...) // probed: each copy gets its limit
	l := newLatchClient(p.Client, name)
	sub := l.subscribe(t)

	var mu sync.Mutex
	var got []string
	go func() {
		for m := range sub.Channel() {
			mu.Lock()
			got = append(got, m.Payload)
			mu.Unlock()
		}
	}()

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	time.Sleep(500 * time.Millisecond)
	hold.Store(int64(2500 * time.Millisecond))
	// Another client locks other keys all along, so that a SET NX goes
	// out on a connection while the zero message's chunk is held on it.
	ctx := t.Context()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sets, failed atomic.Int64
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sets.Add(1)
			if ok, err := p.Client.SetNX(ctx, fmt.Sprintf("attack18:a4:other:%d", i), "other", 10*time.Second).Result(); err != nil || !ok {
				failed.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
		}
	})
	time.Sleep(20 * time.Millisecond)
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	hold.Store(0)
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	t.Logf("another client's SET NX: %d, %d failed", sets.Load(), failed.Load())
	time.Sleep(5 * time.Second) // the held chunks reach the masters 2.5s after the decision
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after the countDown = %d, %v; want 0 (open)", v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("messages through the proxy: %q", got)
	zeros := 0
	for _, m := range got {
		if m == "0" {
			zeros++
		}
	}
	if zeros != 1 {
		t.Errorf("%d zero messages for a latch(1) that opened (one Redis: 1)", zeros)
	}
}
