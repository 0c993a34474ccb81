package integration

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// TestLatchResetOverAnOlderOpeningsClaimSplitClaimsSendOneZeroMessage
// (attack15 L5, a7dfbec; no fault during the new latch's life): master C
// missed one countDown of an older latch of the name (a lost message,
// here a proxy that cannot reach C), so after it opened C keeps a count
// of 1 beside the opening's claim c1. The new trySetCount(1) finds that
// count on C and resets it (resetLatch). The reset kept c1 as the new
// latch's claim there ("a countDown of this latch that read the older
// count may have taken it"): two last countDowns that split A and B then
// saw c1 on C, and the tie-break, when c1 was the least claim (the test
// reopens the older latch until c1 < 2^60), sent no zero message. The
// reset now keeps a claim only if it was given for the new latch's
// ballot (latch_reset.lua; else it is kept by its own, "p:"): one zero
// message per round.
func TestLatchResetOverAnOlderOpeningsClaimSplitClaimsSendOneZeroMessage(t *testing.T) {
	c := startNodes(t, 3)
	var slowB, slowA atomic.Int64
	var cut atomic.Bool
	cut.Store(true)
	rB := startRelay(t, c.addrs[1], relayOpts{sendDelay: &slowB})
	rA := startRelay(t, c.addrs[0], relayOpts{sendDelay: &slowA})
	rC := startRelay(t, c.addrs[2], relayOpts{drop: &cut}) // P3 never reaches C
	cfg := latchEngineConfig(time.Minute)
	p1 := startProxy(t, latchConfig(), cfg, c.addrs[0], rB, c.addrs[2])
	p2 := startProxy(t, latchConfig(), cfg, rA, c.addrs[1], c.addrs[2])
	p3 := startProxy(t, latchConfig(), cfg, c.addrs[0], c.addrs[1], rC)
	ctx := t.Context()
	var zeros sync.Map
	sub := c.direct[0].PSubscribe(ctx, "redisson_countdownlatch__channel__*")
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				n, _ := zeros.LoadOrStore(m.Channel, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
		}
	}()
	zeroCount := func(l latchClient) int64 {
		if n, ok := zeros.Load(l.channel); ok {
			return n.(*atomic.Int64).Load()
		}
		return 0
	}
	for _, p := range []*proxyProc{p1, p2, p3} {
		if v, err := newLatchClient(p.Client, "latch:a15:seed").getCount(t); v != 0 || err != nil {
			t.Fatalf("getCount of a latch never set = %d, %v", v, err)
		}
	}
	for round := range 3 {
		var name string
		var c1 int64
		for try := 0; ; try++ {
			if try == 100 {
				t.Fatal("no older claim under 2^60 in 100 openings")
			}
			name = fmt.Sprintf("latch:a15:reset:%d:%d", round, try)
			l, l3 := newLatchClient(p2.Client, name), newLatchClient(p3.Client, name)
			if v, err := l.trySetCount(t, 2); v != 1 || err != nil {
				t.Fatalf("trySetCount(2) = %d, %v", v, err)
			}
			if err := l3.countDown(t); err != nil { // C misses it
				t.Fatalf("countDown through P3: %v", err)
			}
			if err := l.countDown(t); err != nil {
				t.Fatalf("countDown: %v", err)
			}
			if v, err := l.getCount(t); v != 0 || err != nil {
				t.Fatalf("getCount of the opened latch = %d, %v", v, err)
			}
			c1, _ = strconv.ParseInt(c.direct[2].HGet(ctx, quorum.CountersKey, "m:"+name).Val(), 10, 64)
			if lc := c.direct[2].HGet(ctx, quorum.CountersKey, "l:"+name).Val(); lc != "1" {
				t.Fatalf("C's count after the opening = %q; want 1 (it missed a countDown)", lc)
			}
			if c1 > 0 && c1 < 1<<60 {
				break
			}
		}
		l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
		if v, err := l2.trySetCount(t, 1); v != 1 || err != nil {
			t.Fatalf("round %d: trySetCount(1) of the opened latch = %d, %v", round, v, err)
		}
		t.Logf("round %d: C after the new set: l:%s n:%s o:%s m:%s", round, c.direct[2].HGet(ctx, quorum.CountersKey, "l:"+name).Val(),
			c.direct[2].HGet(ctx, quorum.CountersKey, "n:"+name).Val(), c.direct[2].HGet(ctx, quorum.CountersKey, "o:"+name).Val(),
			c.direct[2].HGet(ctx, quorum.CountersKey, "m:"+name).Val())
		before := zeroCount(l1)
		slowA.Store(int64(150 * time.Millisecond))
		slowB.Store(int64(150 * time.Millisecond))
		var wg sync.WaitGroup
		for _, l := range []latchClient{l1, l2} {
			wg.Go(func() {
				if err := l.countDown(t); err != nil {
					t.Errorf("the last countDowns: %v", err)
				}
			})
		}
		wg.Wait()
		slowA.Store(0)
		slowB.Store(0)
		time.Sleep(500 * time.Millisecond)
		if v, err := l1.getCount(t); v != 0 || err != nil {
			t.Fatalf("round %d: getCount after the last countDowns = %d, %v; want 0", round, v, err)
		}
		got := zeroCount(l1) - before
		t.Logf("round %d (%s): C's older claim %d; zero messages of the new opening: %d; claims %q %q %q", round, name, c1, got,
			c.direct[0].HGet(ctx, quorum.CountersKey, "m:"+name).Val(), c.direct[1].HGet(ctx, quorum.CountersKey, "m:"+name).Val(),
			c.direct[2].HGet(ctx, quorum.CountersKey, "m:"+name).Val())
		if got != 1 {
			t.Fatalf("round %d: %d zero messages for the new latch's opening (one Redis: 1)", round, got)
		}
	}
}
