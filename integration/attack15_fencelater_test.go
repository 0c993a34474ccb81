package integration

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// attack15 G1b (a hold of one token taken again at once, through another
// proxy, with another holder between): within P's 2ms, through
// Q, the hold is released, another client takes the key and FENCEs it
// (T2), releases it, and the first token takes the key again. P's waiting
// record of the first hold (T1) then lands on the master not asked, and
// the new hold's FENCE answers T1, below T2: tokens go down across
// holders, and a resource that saw T2 refuses the new holder's writes.
func TestAttack15FenceTokensGoDownWhenAWaitingRecordLandsAfterAnotherHolder(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig() // max_ttl 2s
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	var drops [3]atomic.Bool
	qAddrs := relaysInOrder(t, c.addrs, func(i int) relayOpts { return relayOpts{drop: &drops[i]} })
	p := mustStartMonitored(t, qcfg, c.addrs...).Client
	q := mustStartMonitored(t, qcfg, qAddrs...).Client
	ctx := t.Context()
	const key = "attack15:g1b"
	cut := 0 // the first master in address order: in P's window asked first
	for i := range 3 {
		if c.addrs[i] < c.addrs[cut] {
			cut = i
		}
	}
	// The masters know the release script before the cut: its body goes
	// out only once every master answered NOSCRIPT, which a cut master
	// that is not yet marked down never does (a liveness gap of its own,
	// not this test's subject).
	if err := q.Eval(ctx, distlockRelease, []string{key}, "warm").Err(); err != nil {
		t.Fatalf("warming the release script through Q: %v", err)
	}
	drops[cut].Store(true)
	waitNotUp(t, q, cut, 5*time.Second)

	const token = "5f0c1e2a-0000-4000-8000-000000000001:1"
	down := 0
	for round := range 40 {
		if err := p.SetNX(ctx, key, token, 1900*time.Millisecond).Err(); err != nil {
			t.Fatalf("round %d: SET NX through P: %v", round, err)
		}
		t1, err := p.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("round %d: FENCE through P: %v", round, err)
		}
		other := fmt.Sprintf("other-%d", round)
		pipe := q.Pipeline()
		rel := pipe.Eval(ctx, distlockRelease, []string{key}, token)
		oset := pipe.SetNX(ctx, key, other, 1900*time.Millisecond)
		ofence := pipe.Do(ctx, "FENCE", key, other)
		orel := pipe.Eval(ctx, distlockRelease, []string{key}, other)
		set := pipe.SetNX(ctx, key, token, 1900*time.Millisecond)
		pipe.Exec(ctx)
		if n, err := rel.Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: release through Q = %d, %v", round, n, err)
		}
		ok, err := oset.Result()
		if err != nil || !ok {
			t.Fatalf("round %d: the other client's SET NX through Q = %v, %v", round, ok, err)
		}
		t2, err := ofence.Int64()
		if err != nil || t2 <= t1 {
			t.Fatalf("round %d: the other client's FENCE = %d, %v after %d", round, t2, err, t1)
		}
		if n, err := orel.Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: the other client's release = %d, %v", round, n, err)
		}
		if ok, err := set.Result(); err != nil || !ok {
			t.Fatalf("round %d: SET NX again through Q = %v, %v", round, ok, err)
		}
		time.Sleep(50 * time.Millisecond)
		t3, err := p.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("round %d: FENCE of the new hold through P: %v", round, err)
		}
		if t3 <= t2 {
			down++
			t.Logf("round %d: holds got T %d, then %d (another client), then %d (the first token again)", round, t1, t2, t3)
		}
		if n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: release through P = %d, %v", round, n, err)
		}
	}
	if down > 0 {
		t.Errorf("%d of 40 rounds: a hold got a T below the previous holder's (the contract: strictly greater than every T returned to an earlier hold)", down)
	}
}

// attack15 G1c (G1b's root, before c8e5595 too): the record P writes on
// the master it did not ask lands late because P's link to that master
// is slow (100ms, below node_timeout), not because it waits 2ms. The
// same interleaving follows through Q: tokens go down across holders.
func TestAttack15FenceTokensGoDownWhenARecordLandsLateOnASlowLink(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig() // max_ttl 2s
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 400 * time.Millisecond
	cut, rest := 0, 0 // P's window asked first: the first two in address order
	for i := range 3 {
		if c.addrs[i] < c.addrs[cut] {
			cut = i
		}
		if c.addrs[i] > c.addrs[rest] {
			rest = i
		}
	}
	var drops [3]atomic.Bool
	var slow atomic.Int64
	pAddrs := relaysInOrder(t, c.addrs, func(i int) relayOpts {
		if i == rest {
			return relayOpts{sendDelay: &slow}
		}
		return relayOpts{}
	})
	qAddrs := relaysInOrder(t, c.addrs, func(i int) relayOpts { return relayOpts{drop: &drops[i]} })
	p := mustStartMonitored(t, qcfg, pAddrs...).Client
	q := mustStartMonitored(t, qcfg, qAddrs...).Client
	ctx := t.Context()
	const key = "attack15:g1c"
	for i := range 6 { // holds FENCEd through P: counters seeded, its window's moved on
		token := fmt.Sprintf("warm-%d", i)
		if err := p.SetNX(ctx, key, token, 1900*time.Millisecond).Err(); err != nil {
			t.Fatalf("SET NX: %v", err)
		}
		if _, err := p.Do(ctx, "FENCE", key, token).Int64(); err != nil {
			t.Fatalf("FENCE: %v", err)
		}
		p.Eval(ctx, distlockRelease, []string{key}, token)
	}
	drops[cut].Store(true)
	waitNotUp(t, q, cut, 5*time.Second)

	const token = "5f0c1e2a-0000-4000-8000-000000000001:1"
	down := 0
	for round := range 8 {
		slow.Store(0)
		if err := p.SetNX(ctx, key, token, 1900*time.Millisecond).Err(); err != nil {
			t.Fatalf("round %d: SET NX through P: %v", round, err)
		}
		slow.Store(int64(100 * time.Millisecond))
		t1, err := p.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("round %d: FENCE through P: %v", round, err)
		}
		other := fmt.Sprintf("other-%d", round)
		pipe := q.Pipeline()
		rel := pipe.Eval(ctx, distlockRelease, []string{key}, token)
		oset := pipe.SetNX(ctx, key, other, 1900*time.Millisecond)
		ofence := pipe.Do(ctx, "FENCE", key, other)
		orel := pipe.Eval(ctx, distlockRelease, []string{key}, other)
		set := pipe.SetNX(ctx, key, token, 1900*time.Millisecond)
		pipe.Exec(ctx)
		if n, err := rel.Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: release through Q = %d, %v", round, n, err)
		}
		if ok, err := oset.Result(); err != nil || !ok {
			t.Fatalf("round %d: the other client's SET NX through Q = %v, %v", round, ok, err)
		}
		t2, err := ofence.Int64()
		if err != nil || t2 <= t1 {
			t.Fatalf("round %d: the other client's FENCE = %d, %v after %d", round, t2, err, t1)
		}
		if n, err := orel.Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: the other client's release = %d, %v", round, n, err)
		}
		if ok, err := set.Result(); err != nil || !ok {
			t.Fatalf("round %d: SET NX again through Q = %v, %v", round, ok, err)
		}
		time.Sleep(250 * time.Millisecond) // P's record reached the slow master
		slow.Store(0)
		time.Sleep(150 * time.Millisecond)
		t3, err := p.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("round %d: FENCE of the new hold through P: %v", round, err)
		}
		if t3 <= t2 {
			down++
			t.Logf("round %d: holds got T %d, then %d (another client), then %d (the first token again)", round, t1, t2, t3)
		}
		if n, err := p.Eval(ctx, distlockRelease, []string{key}, token).Int64(); err != nil || n != 1 {
			t.Fatalf("round %d: release through P = %d, %v", round, n, err)
		}
	}
	if down > 0 {
		t.Errorf("%d of 8 rounds: a hold got a T below the previous holder's (the contract: strictly greater than every T returned to an earlier hold)", down)
	}
}
