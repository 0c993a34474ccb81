package integration

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack11 Z1 (the latch's zero message; PRE-LANDING for latch20b, and on
// main's held-back latch): a claim is not tied to the latch it is for. A
// countDown Y of an opened latch that counted one master down (a master
// that missed the opening countDown X) reads it open and claims; its
// claims reach masters A and B (a slow link) after a NEW trySetCount of
// the same name landed there, which made their claim slot this new
// latch's. Y takes the new latch's slots on a quorum and sends "0" while
// the new latch's count is 2; when the new latch opens, its countDown
// finds Y's claims and sends nothing: its waiters never get the zero
// message (Redisson's await() wakes on "0" and re-reads getCount).
// One Redis: X's DECR sends "0", Y's DECR reads -1 and sends nothing,
// and the new latch's second countDown sends "0".
//
// 3 masters, P1 direct, P2 through delay relays to A and B (each chunk
// held 500ms: every round of P2 takes ~500ms, under node_timeout 900ms;
// min_ttl = max_ttl 2s). Latch(1) set and opened by X through P1; C
// missed X's decrement and claim (its count, nonce put back, claim
// deleted: a lost message). Y through P2: nonce read (~0.5s), decrement
// (~1s: C 1 -> 0, counted; A, B none), claim sent at ~1s, landing on A
// and B at ~1.5s. At ~1.25s trySetCount(2) through P1 sets A, B, C.
func TestAttack11LatchLateClaimTakesANewLatchsZeroMessage(t *testing.T) {
	c := startNodes(t, 3)
	var delay atomic.Int64
	rA, rB := startRelay(t, c.addrs[0], relayOpts{sendDelay: &delay}), startRelay(t, c.addrs[1], relayOpts{sendDelay: &delay})
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = 2*time.Second, 2*time.Second
	qcfg.NodeTimeout = 900 * time.Millisecond // valid: at most half of min_ttl
	p1 := startProxy(t, latchConfig(), qcfg, c.addrs...)
	p2 := startProxy(t, latchConfig(), qcfg, rA, rB, c.addrs[2])
	const name = "latch:attack11:z1"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	ctx := t.Context()
	field := func(i int, f string) string { return c.direct[i].HGet(ctx, quorum.CountersKey, f).Val() }

	sub := c.direct[0].Subscribe(ctx, l1.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var zeros []time.Time
	go func() {
		for m := range sub.Channel() {
			if untagged(m) == "0" {
				mu.Lock()
				zeros = append(zeros, time.Now())
				mu.Unlock()
			}
		}
	}()
	zerosSince := func(since time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, z := range zeros {
			if z.After(since) {
				n++
			}
		}
		return n
	}

	if v, err := l1.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	if v, err := l2.getCount(t); v != 1 || err != nil { // P2's connections are up
		t.Fatalf("getCount through P2 = %d, %v", v, err)
	}
	nonce := field(2, "n:"+name)
	if err := l1.countDown(t); err != nil { // X: opens the latch, sends "0"
		t.Fatalf("countDown X: %v", err)
	}
	// C missed X's decrement and claim (a lost message).
	if err := c.direct[2].HSet(ctx, quorum.CountersKey, "l:"+name, 1, "n:"+name, nonce).Err(); err != nil {
		t.Fatal(err)
	}
	c.direct[2].HDel(ctx, quorum.CountersKey, "m:"+name)
	time.Sleep(200 * time.Millisecond)
	if n := zerosSince(time.Time{}); n != 1 {
		t.Fatalf("zero messages after X = %d; want 1", n)
	}

	delay.Store(int64(500 * time.Millisecond))
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() {
		if err := l2.countDown(t); err != nil {
			t.Logf("countDown Y: %v", err)
		}
	})
	time.Sleep(time.Until(t0.Add(1250 * time.Millisecond)))
	set := time.Now()
	if v, err := l1.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("the new latch's trySetCount(2) = %d, %v", v, err)
	}
	wg.Wait()
	delay.Store(0)
	time.Sleep(200 * time.Millisecond)
	t.Logf("Y took %v; claims A %q B %q C %q", time.Since(t0), field(0, "m:"+name), field(1, "m:"+name), field(2, "m:"+name))
	if v, err := l1.getCount(t); v != 2 || err != nil {
		t.Fatalf("the new latch's getCount = %d, %v; want 2", v, err)
	}
	if n := zerosSince(set); n != 0 {
		t.Errorf("%d zero message(s) after the new latch's trySetCount(2), with its count 2 (one Redis: none; Y's DECR reads -1)", n)
	}
	if err := l1.countDown(t); err != nil {
		t.Fatalf("the new latch's first countDown: %v", err)
	}
	opened := time.Now() // its second countDown opens it
	if err := l1.countDown(t); err != nil {
		t.Fatalf("the new latch's second countDown: %v", err)
	}
	if v, err := l1.getCount(t); v != 0 || err != nil {
		t.Fatalf("the new latch's getCount after 2 countDowns = %d, %v; want 0", v, err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := zerosSince(opened); n != 1 {
		t.Errorf("the new latch opened (getCount 0 after its 2 countDowns) and %d zero message(s) were sent for it; one Redis sends 1 (its waiters wait forever)", n)
	}
}

// attack11 Z1b (Z1's root, one latch): the same late claim of countDown
// Y, with a delete() of the opened latch landing on A and B between Y's
// read of the latch open and its claims there. latch_del removes each
// master's claim slot with the count, so Y's claims take A and B and Y
// sends a second "0" for one latch. One Redis: X's DECR sends "0", the
// DEL finds no key (it reads 0 and publishes nothing), Y's DECR reads -1:
// one zero message.
func TestAttack11LatchLateClaimAfterADeleteSendsASecondZero(t *testing.T) {
	c := startNodes(t, 3)
	var delay atomic.Int64
	rA, rB := startRelay(t, c.addrs[0], relayOpts{sendDelay: &delay}), startRelay(t, c.addrs[1], relayOpts{sendDelay: &delay})
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = 2*time.Second, 2*time.Second
	qcfg.NodeTimeout = 900 * time.Millisecond
	p1 := startProxy(t, latchConfig(), qcfg, c.addrs...)
	p2 := startProxy(t, latchConfig(), qcfg, rA, rB, c.addrs[2])
	const name = "latch:attack11:z1b"
	l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
	ctx := t.Context()
	field := func(i int, f string) string { return c.direct[i].HGet(ctx, quorum.CountersKey, f).Val() }

	sub := c.direct[0].Subscribe(ctx, l1.channel)
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
	if v, err := l1.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	if v, err := l2.getCount(t); v != 1 || err != nil {
		t.Fatalf("getCount through P2 = %d, %v", v, err)
	}
	nonce := field(2, "n:"+name)
	if err := l1.countDown(t); err != nil { // X
		t.Fatalf("countDown X: %v", err)
	}
	if err := c.direct[2].HSet(ctx, quorum.CountersKey, "l:"+name, 1, "n:"+name, nonce).Err(); err != nil {
		t.Fatal(err)
	}
	c.direct[2].HDel(ctx, quorum.CountersKey, "m:"+name)

	delay.Store(int64(500 * time.Millisecond))
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Go(func() {
		if err := l2.countDown(t); err != nil {
			t.Logf("countDown Y: %v", err)
		}
	})
	time.Sleep(time.Until(t0.Add(1250 * time.Millisecond)))
	v, err := l1.delete(t)
	t.Logf("delete() = %d, %v (one Redis: 0, the key is gone)", v, err)
	wg.Wait()
	delay.Store(0)
	time.Sleep(300 * time.Millisecond)
	t.Logf("claims A %q B %q C %q", field(0, "m:"+name), field(1, "m:"+name), field(2, "m:"+name))
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages for one latch(1) (one Redis: 1)", n)
	}
}

// attack11 Z2 (after 2c30acb): a restarted master's claim slot is seeded
// "to take" when every dump has a count above 0 and a claim field, but a
// count above 0 does not prove the latch never opened: a master of the
// opening quorum restarted and re-seeded from the maxima carries a
// lagging master's count. 5 masters, latch(1): countDown Z opens it on
// A, B, C and claims them ("0"); D and E missed Z (its decrement and
// claim: state put back, a minority cut off). A restarts, is seeded
// (count 1 from D/E, slot nobody's). C restarts; its seed reads A, D, E
// (B stopped: its dump fails): all above 0 with a claim field, so C's
// slot is "to take". An extra countDown W (one Redis: DECR -1, nothing)
// counts A, C, D, E down, reads open and claims: A nobody's, B Z's, C, D,
// E W's: a quorum, a second "0" for one latch.
func TestAttack11LatchReseededSourceMakesASlotToTake(t *testing.T) {
	c := startNodes(t, 5)
	qcfg := safetyConfig() // max_ttl 2s: the restart quarantine and the seeding's wait
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	p := attack11StartMonitored(t, latchConfig(), qcfg, c.addrs...)
	const name = "latch:attack11:z2"
	l := newLatchClient(p.Client, name)
	ctx := t.Context()
	sub := c.direct[1].Subscribe(ctx, l.channel) // B is never restarted
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
	dump := func(i int) map[string]string { return c.direct[i].HGetAll(ctx, quorum.CountersKey).Val() }

	if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
		t.Fatalf("trySetCount(1) = %d, %v", v, err)
	}
	before := [5]map[string]string{}
	for i := range 5 {
		before[i] = dump(i)
	}
	if err := l.countDown(t); err != nil { // Z
		t.Fatalf("countDown Z: %v", err)
	}
	// D and E missed Z (cut off from its proxy): their latch fields as before.
	for _, i := range []int{3, 4} {
		for _, f := range []string{"l:", "n:", "m:", "o:"} {
			if v, ok := before[i][f+name]; ok {
				c.direct[i].HSet(ctx, quorum.CountersKey, f+name, v)
			}
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := zeros.Load(); n != 1 {
		t.Fatalf("zero messages after Z = %d; want 1", n)
	}
	restartAndSeed := func(i int) {
		t.Helper()
		c.procs[i] = restartRedis(t, c.procs[i])
		waitState(t, p.Client, i, "quarantined", 5*time.Second)
		l.getCount(t) // marks it
		waitState(t, p.Client, i, "up", 10*time.Second)
		time.Sleep(2100 * time.Millisecond) // its wait: max_ttl + drift since the mark
		l.getCount(t)                       // seeds it
		if dump(i)["seeded"] != "1" {
			t.Fatalf("master %d not seeded again: %v", i, dump(i))
		}
	}
	restartAndSeed(0)
	t.Logf("A seeded: %v", dump(0))
	c.procs[1].Freeze(t) // B's dump fails during C's seed
	restartAndSeed(2)
	c.procs[1].Thaw()
	waitState(t, p.Client, 1, "up", 10*time.Second)
	for i := range 5 {
		t.Logf("master %d: %v", i, dump(i))
	}
	if err := l.countDown(t); err != nil { // W: an extra countDown
		t.Fatalf("countDown W: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := zeros.Load(); n != 1 {
		t.Errorf("%d zero messages for one latch(1) (one Redis: 1; the extra countDown's DECR reads -1)", n)
	}
}
