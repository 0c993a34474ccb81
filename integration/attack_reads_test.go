package integration

import (
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Attacks on the runbook's quorum reads (ZRANGE, HGETALL): what a quorum
// holds must be answered, never nothing.

// A limit-3 semaphore (a sorted set scored by expiry) whose holders each
// took it while a different master was down: every member is on 3 or 4
// of 5 masters (a quorum), but no two masters hold the same set. An
// operator's ZRANGE must list the three holders, not an empty set.
func TestAttackReadsSemaphoreHoldersOnDifferentQuorums(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	exp := float64(time.Now().Add(10 * time.Second).UnixMilli())
	members := [][]string{{"A", "B", "C"}, {"A", "B", "C"}, {"A", "B"}, {"A", "C"}, {"B", "C"}}
	for i, ms := range members {
		for _, m := range ms {
			c.direct[i].ZAdd(ctx, "sem:runbook", redis.Z{Score: exp, Member: m})
		}
		c.direct[i].PExpire(ctx, "sem:runbook", 10*time.Second)
	}
	cl := newClient(t, p.Addr, nil)
	got, err := cl.ZRange(ctx, "sem:runbook", 0, -1).Result()
	slices.Sort(got)
	if err != nil || !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Errorf("ZRANGE of a semaphore whose 3 holders each hold a quorum = %q, %v; want A, B, C", got, err)
	}
}

// The same for a hash whose fields are holders (a read lock's readers):
// each reader's field is on a quorum, no two masters hold the same hash.
// And with two masters down, a reader on 2 of the 3 that answer may be
// on the others too: the read is unavailable, never a silent partial.
func TestAttackReadsHashHoldersOnDifferentQuorums(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ctx := t.Context()
	fields := [][]string{{"A", "B", "C"}, {"A", "B", "C"}, {"A", "B"}, {"A", "C"}, {"B", "C"}}
	for i, fs := range fields {
		for _, f := range fs {
			c.direct[i].HSet(ctx, "rw:runbook", f, "1")
		}
		c.direct[i].PExpire(ctx, "rw:runbook", 10*time.Second)
	}
	cl := newClient(t, p.Addr, nil)
	got, err := cl.HGetAll(ctx, "rw:runbook").Result()
	if err != nil || len(got) != 3 || got["A"] != "1" || got["B"] != "1" || got["C"] != "1" {
		t.Errorf("HGETALL of a hash whose 3 fields each a quorum holds = %v, %v; want A, B, C", got, err)
	}
	if v, err := cl.HGet(ctx, "rw:runbook", "C").Result(); v != "1" || err != nil {
		t.Errorf("HGET of a field a quorum holds = %q, %v; want 1", v, err)
	}
	c.kill(0)
	c.kill(1)
	got, err = cl.HGetAll(ctx, "rw:runbook").Result()
	if err == nil {
		t.Errorf("HGETALL with 2 of 5 down, each field on 2 of the 3 that answer = %v; want an error (undecided)", got)
	}
}
