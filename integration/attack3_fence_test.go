package integration

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// TestFenceRefusesAMarkerAsToken: a Redisson write lock's hash keeps its
// "mode" field beside the holder's; "mode" is a marker, no one's hold
// (the effect path's hold table says so). FENCE key mode by a client that
// does not hold the lock must be NOTHELD, not a fencing token: a token
// above the holder's would let that client's writes fence out the
// holder's at the resource, and the holder's own repeated FENCE must
// keep its T.
func TestFenceRefusesAMarkerAsToken(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	const name, holder = "rw:fenced", "8a1c-holder:1:write"
	if err := redis.NewScript(redissonWriteLock).Run(ctx, p.Client, []string{name}, 30000, holder).Err(); err != redis.Nil {
		t.Fatalf("Redisson write lock = %v; want nil (taken)", err)
	}
	t1, err := p.Client.Do(ctx, "FENCE", name, holder).Int64()
	if err != nil {
		t.Fatalf("FENCE by the holder: %v", err)
	}
	v, err := p.Client.Do(ctx, "FENCE", name, "mode").Result()
	if err == nil {
		t.Errorf("FENCE %s mode (no one's hold) = %v; want NOTHELD (the holder's token is %d)", name, v, t1)
	}
	// The contract: repeated FENCE calls during one hold return the same T.
	if t2, err := p.Client.Do(ctx, "FENCE", name, holder).Int64(); err != nil || t2 != t1 {
		t.Errorf("the holder's FENCE again = %d, %v; want %d (the same hold)", t2, err, t1)
	}
}

// TestFenceOfASharedReadLockKeepsEachReadersT: two Redisson readers share
// a read lock; each one's repeated FENCE during its hold returns the same
// T (the contract), or FENCE refuses a lock several tokens hold. One
// reader's FENCE must not change another's T mid-hold.
func TestFenceOfASharedReadLockKeepsEachReadersT(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	r1 := readLockClient{name: "rw:shared", thread: "1b2c-reader:1"}
	r2 := readLockClient{name: "rw:shared", thread: "1b2c-reader:2"}
	r1.mustTake(t, p.Client, 30000)
	r2.mustTake(t, p.Client, 30000)
	t1, err := p.Client.Do(ctx, "FENCE", r1.name, r1.thread).Int64()
	if err != nil {
		t.Logf("FENCE by reader 1 refused: %v (a refusal keeps the contract)", err)
		return
	}
	if _, err := p.Client.Do(ctx, "FENCE", r2.name, r2.thread).Int64(); err != nil {
		t.Fatalf("FENCE by reader 2: %v", err)
	}
	if again, err := p.Client.Do(ctx, "FENCE", r1.name, r1.thread).Int64(); err != nil || again != t1 {
		t.Errorf("reader 1's FENCE again during its hold = %d, %v; want %d (the same hold)", again, err, t1)
	}
}

// TestFenceLaterHoldAboveAnEarlierSameTokenHold: a later hold's FENCE
// is above every T an earlier hold got, also when the same token is used
// again after a release that reached only some masters (a proxy killed
// mid-release). Masters 3 and 4 miss the earlier hold (full: OOM), so
// their counters lag by one; the earlier hold's release reaches masters
// 1 and 2 only, so master 0 keeps that hold and its record. Master 0's
// record and masters 3 and 4's counters plus one then all say the
// earlier T: a quorum answering alike must not be taken for this hold's.
func TestFenceLaterHoldAboveAnEarlierSameTokenHold(t *testing.T) {
	c := startNodes(t, 5)
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
	ctx := t.Context()
	if err := p.Client.SetNX(ctx, "seed", "tok", 30*time.Second).Err(); err != nil {
		t.Fatalf("SET NX seed: %v", err)
	}
	if _, err := p.Client.Do(ctx, "FENCE", "seed", "tok").Int64(); err != nil {
		t.Fatalf("FENCE seed: %v", err)
	}
	for _, i := range []int{3, 4} {
		if err := c.direct[i].ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Fatalf("master %d: CONFIG SET maxmemory 1: %v", i, err)
		}
	}
	if err := p.Client.SetNX(ctx, "k", "X", 30*time.Second).Err(); err != nil {
		t.Fatalf("the earlier hold's SET NX (masters 0-2): %v", err)
	}
	t1, err := p.Client.Do(ctx, "FENCE", "k", "X").Int64()
	if err != nil {
		t.Fatalf("the earlier hold's FENCE: %v", err)
	}
	for _, i := range []int{3, 4} {
		if err := c.direct[i].ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
			t.Fatalf("master %d: CONFIG SET maxmemory 0: %v", i, err)
		}
	}
	// The release, as the engine's deletes the key and its record, lands
	// on masters 1 and 2 only.
	for _, i := range []int{1, 2} {
		if err := c.direct[i].Del(ctx, "k", quorum.CountersKey+":k").Err(); err != nil {
			t.Fatalf("master %d: release: %v", i, err)
		}
	}
	if err := p.Client.SetNX(ctx, "k", "X", 30*time.Second).Err(); err != nil {
		t.Fatalf("the later hold's SET NX (masters 1-4): %v", err)
	}
	if t2, err := p.Client.Do(ctx, "FENCE", "k", "X").Int64(); err != nil || t2 <= t1 {
		t.Errorf("the later hold's FENCE = %d, %v; want above the earlier hold's %d", t2, err, t1)
	}
}
