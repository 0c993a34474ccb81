package integration

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attack14 P2 (the zero message LOST; f8f0a91, attack12 P1's fix): each
// master now drops its copy of a decided message when it runs it over 2s
// after the decision (quorum's publishWithin). When the proxy's sends to
// every master are late by more than that (a stalled proxy process, a
// stalled network on its host: here every master's link holds the chunk
// that carries the publish 2.5s), every copy is dropped and no waiter of
// any proxy hears the zero message, though the latch opened. Before
// f8f0a91 the copies arrived 2.5s late and were delivered once. One Redis:
// the countDown's PUBLISH reaches the subscriber. Redisson's await() with
// no timeout loops `while (getCount() > 0) wait for a message`: an await()
// that read the count before the countDown then waits for good.
func TestAttack14LatchZeroMessageLostWhenEveryCopyIsLate(t *testing.T) {
	latchZeroMessageHeldOnEveryLink(t, "latch:attack14:p2", false)
}

// latchZeroMessageHeldOnEveryLink opens a latch(1) named name through a
// proxy whose link to every master holds the chunk that carries the
// latch's zero message 2.5s (within its 5s limit), and wants the message
// delivered once. With busy, another client locks other keys through the
// same proxy every 2ms meanwhile (attack18 A4).
func latchZeroMessageHeldOnEveryLink(t *testing.T, name string, busy bool) {
	c := startNodes(t, 3)
	channel := "redisson_countdownlatch__channel__{" + name + "}"
	var hold atomic.Int64
	addrs := make([]string, 3)
	for i := range addrs {
		addrs[i] = attack12PublishRelay(t, c.addrs[i], []byte(channel), &hold)
	}
	p := attack11StartMonitored(t, latchConfig(), engineConfig(), addrs...) // probed: each copy gets its limit
	l := newLatchClient(p.Client, name)
	sub := l.subscribe(t) // Redisson's await(): SUBSCRIBE through the proxy

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
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sets, failed atomic.Int64
	if busy {
		// A SET NX goes out on a connection while the zero message's
		// chunk is held on it.
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sets.Add(1)
				if ok, err := p.Client.SetNX(t.Context(), fmt.Sprintf("%s:other:%d", name, i), "other", 10*time.Second).Result(); err != nil || !ok {
					failed.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
			}
		})
		time.Sleep(20 * time.Millisecond)
	}
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	hold.Store(0)
	if busy {
		time.Sleep(300 * time.Millisecond)
		close(stop)
		wg.Wait()
		t.Logf("another client's SET NX: %d, %d failed", sets.Load(), failed.Load())
	}
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
		t.Errorf("%d zero messages for a latch(1) that opened (one Redis: 1; before f8f0a91 the late copies were delivered once)", zeros)
	}
}
