package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// review28 F0 through proxies, with no internal hook: latch L (count 1)
// on every master; P1's countDown opens it, its claim reaches masters 0
// and 1 and is lost to master 2 (P1's link to it drops once master 2 has
// counted down): P1 sends the zero message. A new trySetCount(5) of L
// through P3 lands on master 0 at once and on masters 1 and 2 300ms
// later (a slow link). Meanwhile P2's countDown reads L open on masters
// 1 and 2 and the new count on master 0: it must not send the zero
// message a second time (one Redis: L's one opening, one "0").
//
// "failed": the new set never reaches masters 1 and 2 (P3's links to
// them cut): it fails, and its undo takes it off master 0 after P2's
// countDown.
func TestAttack16LatchZeroMessageOnceWhenANewSetLandsOnOneMasterFirst(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(map[bool]string{false: "late", true: "failed"}[failed], func(t *testing.T) { attack16LatchNewSet(t, failed) })
	}
}

func attack16LatchNewSet(t *testing.T, failed bool) {
	c := startNodes(t, 3)
	var drop2 atomic.Bool
	slow := fixedDelay(150 * time.Millisecond)
	p1Addrs := []string{c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{sendDelay: slow, drop: &drop2})}
	late := fixedDelay(300 * time.Millisecond)
	var cut atomic.Bool
	p3Addrs := []string{c.addrs[0], startRelay(t, c.addrs[1], relayOpts{sendDelay: late, drop: &cut}), startRelay(t, c.addrs[2], relayOpts{sendDelay: late, drop: &cut})}
	cfg := latchEngineConfig(time.Minute)
	p1 := startProxy(t, latchConfig(), cfg, p1Addrs...)
	p2 := startProxy(t, latchConfig(), cfg, c.addrs...)
	p3 := startProxy(t, latchConfig(), cfg, p3Addrs...)
	ctx := t.Context()
	const name = "latch:a16:f0"
	l1, l2, l3 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name), newLatchClient(p3.Client, name)
	var zeros atomic.Int64
	sub := c.direct[1].Subscribe(ctx, l1.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				zeros.Add(1)
			}
		}
	}()
	for _, l := range []latchClient{l1, l2, l3} { // the counters seeded, every link up
		if v, err := l.getCount(t); v != 0 || err != nil {
			t.Fatalf("getCount of a latch never set = %d, %v", v, err)
		}
	}
	if v, err := l2.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	// Drop P1's claim to master 2: cut the link once master 2 counted down.
	stop := make(chan struct{})
	watched := make(chan bool, 1)
	go func() {
		for {
			select {
			case <-stop:
				watched <- false
				return
			default:
			}
			if c.direct[2].HExists(ctx, quorum.CountersKey, "l:"+name).Val() == false {
				drop2.Store(true)
				watched <- true
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	err := l1.countDown(t)
	close(stop)
	if !<-watched {
		t.Fatal("master 2 never counted down")
	}
	if err != nil {
		t.Fatalf("P1's countDown: %v", err)
	}
	drop2.Store(false)
	time.Sleep(200 * time.Millisecond)
	t.Logf("after P1's countDown: master claims %q %q %q", c.direct[0].HGet(ctx, quorum.CountersKey, "m:"+name).Val(),
		c.direct[1].HGet(ctx, quorum.CountersKey, "m:"+name).Val(), c.direct[2].HGet(ctx, quorum.CountersKey, "m:"+name).Val())
	if got := zeros.Load(); got != 1 {
		t.Fatalf("%d zero messages after the opening countDown; want 1 (the scenario did not form)", got)
	}
	cut.Store(failed)
	set := make(chan error, 1)
	go func() {
		v, err := l3.trySetCount(t, 5)
		if !failed && err == nil && v != 1 {
			t.Errorf("the new trySetCount(5) = %d", v)
		}
		set <- err
	}()
	time.Sleep(60 * time.Millisecond) // on master 0, not yet on 1 and 2
	if err := l2.countDown(t); err != nil {
		t.Logf("P2's countDown: %v", err)
	}
	if err := <-set; err != nil {
		t.Logf("the new trySetCount: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	t.Logf("after: master claims %q %q %q", c.direct[0].HGet(ctx, quorum.CountersKey, "m:"+name).Val(),
		c.direct[1].HGet(ctx, quorum.CountersKey, "m:"+name).Val(), c.direct[2].HGet(ctx, quorum.CountersKey, "m:"+name).Val())
	if got := zeros.Load(); got != 1 {
		t.Errorf("%d zero messages for L's one opening; want 1", got)
	}
}
