package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack10 F2: a seeded master that missed every FENCE (cut off while
// they ran, within the failure model) holds no counter, and once the two
// other masters of three restart empty (a majority lost), it must not
// read as a new deployment's: the next holder gets NOQUORUM, never a
// token at or below one already given. (Found with FENCE asking the
// same two masters every time; here the third's counter is deleted, as
// if it missed every FENCE.) The masters are tended by a plain counter
// read, GET of a fence_keys counter, as the attack did.
//
// "rolling": the two restart one after the other, with a counter read
// between (it marks the first), within max_ttl: the first is still
// waiting to be seeded when the second goes.
func TestAttack10FenceTokensDoNotGoBackAfterAMajorityRestartBesideAMasterThatMissedThem(t *testing.T) {
	for _, rolling := range []bool{false, true} {
		t.Run(map[bool]string{false: "at once", true: "rolling"}[rolling], func(t *testing.T) {
			attack10FenceTokensGoBack(t, rolling)
		})
	}
}

func attack10FenceTokensGoBack(t *testing.T, rolling bool) {
	c := startNodes(t, 3)
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = time.Second, time.Second
	p := startProxy(t, proxy.Config{FenceKeys: []string{"attack10:ctr"}}, qcfg, c.addrs...)
	ctx := t.Context()
	p.Client.Get(ctx, "attack10:ctr") // a new deployment: every master seeded at zero
	var last int64
	for n := range 3 {
		last = fenceHold(t, p.Client, "attack10:f", n, time.Second)
	}
	// Master 2 missed every FENCE: no counter, no hold record.
	c.direct[2].HDel(ctx, quorum.CountersKey, "c")
	c.direct[2].Del(ctx, quorum.CountersKey+":attack10:f")
	for i := range 3 {
		t.Logf("last token %d; master %d's counters %v", last, i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
	}
	for i := range 2 {
		c.procs[i] = restartRedis(t, c.procs[i])
		if rolling {
			time.Sleep(500 * time.Millisecond)
			p.Client.Get(ctx, "attack10:ctr") // marks it pending
		}
	}
	// The next holders, until the restart quarantines end and after the
	// seeding's wait (max_ttl).
	var f int64
	var err error
	for i := range 8 {
		time.Sleep(400 * time.Millisecond)
		// Any plain counter read (here GET of a fence_keys counter; INCR,
		// or GET of a latch_keys name, too) tends the restarted masters.
		p.Client.Get(ctx, "attack10:ctr")
		token := fmt.Sprintf("holder-next-%d", i)
		if ok, serr := p.Client.SetNX(ctx, "attack10:f", token, time.Second).Result(); serr != nil || !ok {
			t.Logf("SET NX %d: %v %v", i, ok, serr)
			continue
		}
		f, err = p.Client.Do(ctx, "FENCE", "attack10:f", token).Int64()
		t.Logf("FENCE of the next hold = %d, %v", f, err)
		if err == nil {
			break
		}
		p.Client.Del(ctx, "attack10:f")
	}
	switch {
	case err == nil && f <= last:
		t.Errorf("the next holder's token %d is not above the last one given, %d: tokens went back (2 of 3 masters restarted empty; the docs promise NOQUORUM)", f, last)
	case err == nil:
		t.Errorf("the next holder's token %d with 2 of 3 masters' counters lost; want NOQUORUM", f)
	case !strings.HasPrefix(err.Error(), "NOQUORUM"):
		t.Errorf("FENCE with 2 of 3 masters' counters lost = %v; want NOQUORUM", err)
	}
	for i := range 3 {
		t.Logf("master %d's counters %v", i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
	}
}
