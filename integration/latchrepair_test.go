package integration

import (
	"crypto/sha1"
	"encoding/hex"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The last countDown meets faults (its decrement's replies from two of 3
// masters come after node_timeout; the decrements land): it answers
// NOQUORUM, the latch is open on every master and no claim was made, so
// no zero message. The caller tries again, as after any error: that
// countDown counts none down (every master at 0). Before, only a
// countDown that counted one down claimed the message, so none was ever
// sent and an await() begun before waited for good; now it claims and
// sends it, once (a further countDown finds the slots taken). One Redis:
// the first countDown sends "0", the retry none.
func TestLatchCountDownAfterFaultsSendsTheZeroMessageOnce(t *testing.T) {
	src, err := os.ReadFile("../quorum/redisnode/lua/latch_decr.lua")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(src)
	sha := []byte(hex.EncodeToString(sum[:]))
	c := startNodes(t, 3)
	var hold atomic.Int64
	rB := attack12PublishRelay(t, c.addrs[1], sha, &hold)
	rC := attack12PublishRelay(t, c.addrs[2], sha, &hold)
	p := startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs[0], rB, rC)
	ctx := t.Context()

	warm := newLatchClient(p.Client, "latch:repair:warm") // the scripts loaded: EVALSHA from now on
	if v, err := warm.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	if err := warm.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}

	l := newLatchClient(p.Client, "latch:repair")
	sub := c.direct[0].Subscribe(ctx, l.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var zeros atomic.Int64
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				zeros.Add(1)
			}
		}
	}()
	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	hold.Store(int64(time.Second))
	if err := l.countDown(t); err == nil {
		t.Fatal("the countDown whose decrements' replies came late from 2 of 3 masters answered nil; want NOQUORUM")
	} else {
		t.Logf("the countDown met faults: %v", err)
	}
	hold.Store(0)
	time.Sleep(1500 * time.Millisecond) // the held decrements landed
	for i := range 3 {
		if f := c.direct[i].HGetAll(ctx, quorum.CountersKey).Val(); f["l:"+l.name] != "" {
			t.Fatalf("master %d still counts: %v (the held decrement did not land)", i, f)
		}
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after the countDown = %d, %v; want 0", v, err)
	}
	if n := zeros.Load(); n != 0 {
		t.Fatalf("%d zero messages before the retry; the countDown that met faults made no claim", n)
	}
	for range 2 { // the caller's retry, then one more
		if err := l.countDown(t); err != nil {
			t.Fatalf("countDown of the opened latch: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		if n := zeros.Load(); n != 1 {
			t.Errorf("%d zero messages after a countDown of the opened latch; want 1 (an await() begun before waits for it)", n)
		}
	}
}
