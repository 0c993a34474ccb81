package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fault suite's latch run: Redisson's RCountDownLatch (its scripts
// byte for byte, redissonlatch_test.go) through two proxy binaries over
// five masters, while masters are restarted empty, frozen, cut off and
// lose their replies, one at a time (a restart at most every
// latchRestartGap, so that a restarted master is seeded again before the
// next: never a majority lost). Each round sets a fresh latch to n,
// makes n+2 countDowns from three clients through both proxies, reads its
// count all along and listens for its messages through both proxies;
// checkLatch judges the history.

const (
	latchRounds     = 8
	latchRestartGap = faultMaxTTL + time.Second
)

// latchEvent is one thing the latch run saw, on one latch.
type latchEvent struct {
	kind       string // "countDown", "read", "message"
	sub        int    // the subscriber (message)
	start, end time.Duration
	value      string // a read's count ("0" for nil), a message, or "error: …"
}

// latchHistory is a latch run's events, by latch.
type latchHistory struct {
	mu     sync.Mutex
	base   time.Time
	counts map[string]int64 // each latch's n
	events map[string][]latchEvent
}

func (h *latchHistory) now() time.Duration { return time.Since(h.base) }

func (h *latchHistory) add(name string, e latchEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events[name] = append(h.events[name], e)
}

// checkLatch is the latch checker, per latch of count n:
//   - never early: a read that answered 0 (nil) ended after n countDowns
//     were sent; a zero message arrived after n countDowns were sent;
//   - no read answers more than n;
//   - each subscriber gets the zero message at most once.
//
// A countDown that answered an error may have landed: it counts as sent.
func checkLatch(counts map[string]int64, events map[string][]latchEvent) (bad []string) {
	for name, evs := range events {
		n := counts[name]
		var sent []time.Duration
		for _, e := range evs {
			if e.kind == "countDown" {
				sent = append(sent, e.start)
			}
		}
		sentBefore := func(t time.Duration) int64 {
			k := int64(0)
			for _, s := range sent {
				if s < t {
					k++
				}
			}
			return k
		}
		zeros := map[int]int{}
		for _, e := range evs {
			switch {
			case e.kind == "read" && e.value == "0":
				if k := sentBefore(e.end); k < n {
					bad = append(bad, fmt.Sprintf("%s (count %d): a read at %v-%v answered 0 after %d countDowns sent", name, n, e.start, e.end, k))
				}
			case e.kind == "read":
				if v, err := strconv.ParseInt(e.value, 10, 64); err == nil && (v > n || v < 0) {
					bad = append(bad, fmt.Sprintf("%s (count %d): a read at %v answered %d", name, n, e.start, v))
				}
			case e.kind == "message" && e.value == "0":
				zeros[e.sub]++
				if k := sentBefore(e.end); k < n {
					bad = append(bad, fmt.Sprintf("%s (count %d): subscriber %d got the zero message at %v after %d countDowns sent", name, n, e.sub, e.end, k))
				}
				if zeros[e.sub] == 2 {
					bad = append(bad, fmt.Sprintf("%s (count %d): subscriber %d got the zero message twice", name, n, e.sub))
				}
			}
		}
	}
	return bad
}

// TestFaultLatch is the latch run. Its faults are those of the lock
// scenarios, one master at a time; its checker is checkLatch, shown to
// catch each breach by TestFaultLatchCheckerCatches, and a broken proxy
// by TestFaultLatchNegativeControl.
func TestFaultLatch(t *testing.T) {
	skipLong(t)
	bad, stuck := runFaultLatch(t, proxyOpts{latchKeys: []string{"latch:*"}})
	for _, b := range append(bad, stuck...) {
		t.Error(b)
	}
}

// TestFaultLatchNegativeControl runs the latch run against the proxy
// built to take one master's answer for a quorum (brokenbuild, quorum1):
// the checker must flag it.
func TestFaultLatchNegativeControl(t *testing.T) {
	skipLong(t)
	po := proxyOpts{latchKeys: []string{"latch:*"}, bin: buildBrokenBinary(t), env: []string{"REDLOCK_PROXY_BROKEN=quorum1"}}
	bad, _ := runFaultLatch(t, po)
	if len(bad) == 0 {
		t.Error("the latch checker did not catch a proxy that takes one master's answer for a quorum")
	}
	for i, b := range bad[:min(len(bad), 3)] {
		t.Logf("caught (%d of %d): %s", i+1, len(bad), b)
	}
}

// runFaultLatch runs the latch rounds under faults and returns what the
// checker flagged, and the latches that did not open once healed.
func runFaultLatch(t *testing.T, po proxyOpts) (bad, stuck []string) {
	seed := seedFor(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	fc := startFaultCluster(t, faultMasters)
	var clients []*redis.Client
	for range 2 {
		ps := startProxySub(t, fc.addrs(), po)
		fc.waitAllUp(ps, 10*time.Second)
		clients = append(clients, newClient(t, ps.Addr, func(o *redis.Options) {
			o.ReadTimeout, o.WriteTimeout = 3*time.Second, 3*time.Second
		}))
	}
	h := &latchHistory{base: time.Now(), counts: map[string]int64{}, events: map[string][]latchEvent{}}
	ctx, stopFaults := context.WithCancel(context.Background())
	var faults sync.WaitGroup
	faults.Go(func() { latchFaults(ctx, fc, rand.New(rand.NewPCG(seed, 2))) })
	t.Cleanup(func() { stopFaults(); faults.Wait() })

	var names []string
	for round := range latchRounds {
		name := fmt.Sprintf("latch:fault%d", round)
		n := int64(3 + rng.IntN(3))
		names = append(names, name)
		h.counts[name] = n
		latchRound(t, h, clients, name, n, rng)
	}
	stopFaults()
	faults.Wait()
	for i := range fc.masters {
		fc.heal(i)
		if fc.masters[i].open("kill") >= 0 {
			fc.restart(i)
		}
	}
	time.Sleep(faultMaxTTL + 500*time.Millisecond) // every master seeded again
	// Liveness: healed, more countDowns open every latch.
	for _, name := range names {
		l := newLatchClient(clients[0], name)
		open := false
		for range int(h.counts[name]) + 2 {
			if v, err := l.getCount(t); err == nil && v == 0 {
				open = true
				break
			}
			l.countDown(t)
		}
		if v, err := l.getCount(t); !open && (err != nil || v != 0) {
			stuck = append(stuck, fmt.Sprintf("%s: after the faults healed and more countDowns, getCount = %d, %v; want open", name, v, err))
		}
	}
	bad = checkLatch(h.counts, h.events)
	reads, msgs := 0, 0
	for _, evs := range h.events {
		for _, e := range evs {
			reads += int(btoi(e.kind == "read"))
			msgs += int(btoi(e.kind == "message" && e.value == "0"))
		}
	}
	kinds := map[string]int{}
	for _, o := range fc.h.snapshot() {
		if o.Op == opFault {
			kinds[o.Result]++
		}
	}
	t.Logf("%d latches, %d reads, %d zero messages received (of %d possible); faults %v", len(names), reads, msgs, 2*len(names), kinds)
	return bad, stuck
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// latchRound sets a fresh latch to n and runs n+2 countDowns from three
// clients, a reader, and a subscriber per proxy, until every countDown
// answered and the last messages had time to arrive.
func latchRound(t *testing.T, h *latchHistory, clients []*redis.Client, name string, n int64, rng *rand.Rand) {
	t.Helper()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for k, cl := range clients {
		sub := newLatchClient(cl, name).subscribe(t)
		wg.Go(func() {
			for {
				msg, err := sub.ReceiveTimeout(context.Background(), 100*time.Millisecond)
				if m, ok := msg.(*redis.Message); ok && err == nil {
					h.add(name, latchEvent{kind: "message", sub: k, end: h.now(), value: m.Payload})
				}
				select {
				case <-done:
					sub.Close()
					return
				default:
				}
			}
		})
	}
	// trySetCount until it answers: 0 after an error is our own set
	// that landed with its reply lost (the name is fresh).
	set := false
	for try := 0; try < 50 && !set; try++ {
		v, err := newLatchClient(clients[try%2], name).trySetCount(t, n)
		switch {
		case err == nil && v == 1, err == nil && try > 0:
			set = true
		case err == nil:
			t.Fatalf("%s: trySetCount(%d) of a fresh name = 0", name, n)
		default:
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !set {
		t.Fatalf("%s: trySetCount(%d) failed 50 times", name, n)
	}
	wg.Go(func() { // the reader
		for k := 0; ; k++ {
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := h.now()
			v, err := newLatchClient(clients[k%2], name).getCount(t)
			h.add(name, latchEvent{kind: "read", start: start, end: h.now(), value: result(err, strconv.FormatInt(v, 10))})
		}
	})
	var downs sync.WaitGroup
	var next sync.Mutex
	left := n + 2
	for c := range 3 {
		pause := time.Duration(200+rng.IntN(300)) * time.Millisecond
		downs.Go(func() {
			l := newLatchClient(clients[c%2], name)
			for {
				next.Lock()
				if left == 0 {
					next.Unlock()
					return
				}
				left--
				start := h.now()
				h.add(name, latchEvent{kind: "countDown", start: start})
				next.Unlock()
				err := l.countDown(t)
				h.add(name, latchEvent{kind: "countDown-reply", start: start, end: h.now(), value: result(err, "nil")})
				time.Sleep(pause)
			}
		})
	}
	downs.Wait()
	time.Sleep(300 * time.Millisecond) // the last messages
	close(done)
	wg.Wait()
}

// latchFaults injects one fault at a time on a random master until ctx
// ends: a restart empty (at most every latchRestartGap), a freeze, a
// blackhole, or lost replies, each for 150-500ms.
func latchFaults(ctx context.Context, fc *faultCluster, rng *rand.Rand) {
	lastRestart := time.Time{}
	for ctx.Err() == nil {
		i := rng.IntN(len(fc.masters))
		d := time.Duration(150+rng.IntN(350)) * time.Millisecond
		switch k := rng.IntN(4); {
		case k < 2 && time.Since(lastRestart) > latchRestartGap:
			fc.kill(i)
			sleepCtx(ctx, d)
			fc.restart(i)
			lastRestart = time.Now()
		case k == 1:
			fc.freeze(i)
			sleepCtx(ctx, d)
			fc.thaw(i)
		case k == 2:
			fc.blackhole(i)
			sleepCtx(ctx, d)
			fc.heal(i)
		default:
			fc.loseReplies(i)
			sleepCtx(ctx, d)
			fc.heal(i)
		}
		sleepCtx(ctx, time.Duration(100+rng.IntN(300))*time.Millisecond)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// TestFaultLatchCheckerCatches: the latch checker flags a read of 0, and
// a zero message, before n countDowns were sent, a count above n, and a
// second zero message; and passes a latch that opened on time.
func TestFaultLatchCheckerCatches(t *testing.T) {
	ms := time.Millisecond
	cd := func(at time.Duration) latchEvent { return latchEvent{kind: "countDown", start: at} }
	rd := func(at time.Duration, v string) latchEvent {
		return latchEvent{kind: "read", start: at, end: at + ms, value: v}
	}
	msg := func(at time.Duration, sub int) latchEvent {
		return latchEvent{kind: "message", sub: sub, end: at, value: "0"}
	}
	good := []latchEvent{cd(1 * ms), rd(2*ms, "1"), cd(3 * ms), rd(4*ms, "0"), msg(5*ms, 0), msg(5*ms, 1), cd(6 * ms), rd(7*ms, "error: NOQUORUM")}
	if bad := checkLatch(map[string]int64{"l": 2}, map[string][]latchEvent{"l": good}); len(bad) > 0 {
		t.Errorf("a latch that opened after its countDowns: %q", bad)
	}
	for what, evs := range map[string][]latchEvent{
		"a read of 0 early":       {cd(1 * ms), rd(2*ms, "0"), cd(3 * ms)},
		"a zero message early":    {cd(1 * ms), msg(2*ms, 0), cd(3 * ms)},
		"a count above n":         {rd(1*ms, "3")},
		"the zero message twice":  {cd(1 * ms), cd(2 * ms), msg(3*ms, 1), msg(4*ms, 1)},
		"a read of nil (0) early": {rd(1*ms, "0")},
	} {
		if bad := checkLatch(map[string]int64{"l": 2}, map[string][]latchEvent{"l": evs}); len(bad) == 0 {
			t.Errorf("%s: not caught", what)
		}
	}
}
