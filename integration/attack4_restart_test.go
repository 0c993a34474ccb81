package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// attack4MaxTTL is the max_ttl of these tests: long enough that a lock
// taken at the start of a test is still valid at its end.
const attack4MaxTTL = 10 * time.Second

// Two proxies name the same masters, one by IP and one by host name (a
// rolling change of config, or a proxy in another network that reaches
// the masters by DNS). A master restarted empty while a lock is held on
// exactly a quorum: the proxy started after the restart must not count
// it, as a proxy naming it by the same address does not
// (TestRestartedMasterIsQuarantined). The membership record is keyed by
// the configured address, so the second spelling finds no record of the
// node's older process and counts the empty master at once.
func TestAttack4RestartSeenUnderAnotherAddressSpelling(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	cfg.MaxTTL = attack4MaxTTL
	p1 := mustStartMonitored(t, cfg, c.addrs...)
	ctx := t.Context()

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	c.procs[0] = restartRedis(t, c.procs[0])
	waitState(t, p1.Client, 0, "quarantined", 5*time.Second)

	// The same masters, by host name.
	var named []string
	for _, a := range c.addrs {
		named = append(named, strings.Replace(a, "127.0.0.1", "localhost", 1))
	}
	p2 := mustStartMonitored(t, cfg, named...)
	f := nodeInfo(t, p2.Client, 0)
	err := p2.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl/2 {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX through the proxy naming the masters by host name = OK while the first holder's lock runs (node0 there: %v); want NOQUORUM (node0 restarted empty)", f)
	} else if errors.Is(err, redis.Nil) {
		t.Errorf("second SET NX = nil; want NOQUORUM (node0 restarted empty, its 'no' cannot count)")
	}
}

// A proxy (re)started while two of three masters are unreachable, and the
// third restarted empty (it held a lock taken on exactly a quorum, 0 and
// 1): the only record the proxy reads is the empty master's own, which
// names nothing, so that master is "a first deployment" and up. When
// master 2 comes back, its record names master 0's older process, and
// the proxy quarantines master 0, but only after it has counted master 2:
// between the two (a probe's record write and read on master 2, here a
// slow link) an acquire is granted by master 0 (empty) and master 2.
func TestAttack4PartialStartCountsARestartedMaster(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	cfg.MaxTTL = 30 * time.Second
	cfg.NodeTimeout = 300 * time.Millisecond
	ctx := t.Context()
	// The first proxy probes only at start: it does not refill master
	// 0's record after the restart (as a proxy that stopped would not).
	cfg1 := cfg
	cfg1.ProbeInterval = time.Hour
	p1 := mustStartMonitored(t, cfg1, c.addrs...)
	const ttl = 20 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	c.procs[1].Freeze(t)
	c.procs[2].Freeze(t)
	c.procs[0] = restartRedis(t, c.procs[0])

	relay := startRelay(t, c.addrs[2], relayOpts{replyDelay: fixedDelay(40 * time.Millisecond)})
	p2 := mustStartMonitored(t, cfg, c.addrs[0], c.addrs[1], relay)
	c.procs[2].Thaw()

	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		err := p2.Client.SetNX(ctx, "k", "second", ttl).Err()
		if err == nil {
			if time.Since(start) < ttl-time.Second {
				t.Fatalf("second SET NX = OK while the first holder's lock runs (held on master 1, frozen; master 0 restarted empty): two holders; node0 now %v", nodeInfo(t, p2.Client, 0))
			}
			t.Skip("too slow to judge: the first lock may have expired")
		}
		if nodeInfo(t, p2.Client, 0)["state"] == "quarantined" && nodeInfo(t, p2.Client, 2)["state"] == "up" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two proxies over the same masters with different max_ttl (a rolling
// deploy that raises it: one proxy already runs the new file). A master
// restarted empty is quarantined by each for its own max_ttl, so the
// proxy with the shorter one counts it again while a lock the other
// granted, longer than that, still runs on the masters.
func TestAttack4ShorterMaxTTLOnAnotherProxyEndsTheQuarantineEarly(t *testing.T) {
	c := startNodes(t, 3)
	long := safetyConfig()
	long.MaxTTL = 8 * time.Second
	p1 := mustStartMonitored(t, long, c.addrs...)
	p2 := mustStartMonitored(t, safetyConfig(), c.addrs...) // max_ttl 2s
	ctx := t.Context()

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	c.procs[0] = restartRedis(t, c.procs[0])
	waitState(t, p1.Client, 0, "quarantined", 5*time.Second)
	waitState(t, p2.Client, 0, "quarantined", 5*time.Second)

	// Until the first lock's end, the proxy with max_ttl 2s never
	// grants k: its quarantine lasts for the longest max_ttl a proxy
	// over these masters grants.
	tries := 0
	for time.Since(start) < ttl-time.Second {
		tries++
		if err := p2.Client.SetNX(ctx, "k", "second", 2*time.Second).Err(); err == nil {
			t.Fatalf("second SET NX through the proxy with max_ttl 2s = OK %v after an 8s lock was granted on exactly a quorum and one of its masters restarted empty: two holders (node0 %v)",
				time.Since(start).Round(time.Millisecond), nodeInfo(t, p2.Client, 0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tries < 3 { // a denied try takes about a second (the proxy retries it)
		t.Skipf("too slow to judge: %d tries before the first lock's end", tries)
	}
}

// FLUSHALL on a master holding a lock on exactly a quorum is seen when a
// probe finds the master's own membership record empty (a documented
// gap of one probe interval, TestFaultFlushAllWhileHeldOnExactlyThree).
// A proxy that starts in that gap (a rolling deploy) verifies every
// master and writes every field into every record, the flushed master's
// included: the record is never found empty, by any proxy, and the
// master is never quarantined. The gap never closes.
func TestAttack4ProxyStartInTheFlushGapHidesTheFlush(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	cfg.MaxTTL = attack4MaxTTL
	cfg.ProbeInterval = time.Second
	p1 := mustStartMonitored(t, cfg, c.addrs...)
	ctx := t.Context()
	time.Sleep(1200 * time.Millisecond) // p1 has read each record once

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	if err := c.direct[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	p2 := mustStartMonitored(t, cfg, c.addrs...)
	if nodeInfo(t, p1.Client, 0)["state"] != "up" {
		t.Skip("the first proxy probed the flushed master before the second started (race lost)")
	}
	time.Sleep(2500 * time.Millisecond) // both have probed master 0 since
	err := p2.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-time.Second {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX = OK %v after master 0 was flushed under a lock held on exactly 0 and 1: two holders (node0: first proxy %v, second proxy %v)",
			time.Since(start).Round(time.Millisecond), nodeInfo(t, p1.Client, 0)["state"], nodeInfo(t, p2.Client, 0)["state"])
	}
}

// Replacing a master (a rolling change of the nodes list): while one
// proxy still runs the old list and another the new one, their quorums
// need not meet. The new master is "a first deployment" to the proxy
// that lists it, although every other master's record names a master
// the new list lacks: nothing stops or warns the proxy.
func TestAttack4ProxiesWithDifferentNodeListsGiveTwoHolders(t *testing.T) {
	c := startNodes(t, 4)
	cfg := safetyConfig()
	cfg.MaxTTL = attack4MaxTTL
	p1 := mustStartMonitored(t, cfg, c.addrs[0], c.addrs[1], c.addrs[2])
	ctx := t.Context()
	const ttl = 8 * time.Second
	start := time.Now()
	c.procs[0].Freeze(t) // master 0 misses the first lock
	if err := p1.Client.SetNX(ctx, "k", "first", ttl).Err(); err != nil {
		t.Fatalf("first SET NX: %v", err)
	}
	c.procs[0].Thaw()
	// Master 2 replaced by master 3 in the second proxy's list.
	p2 := mustStartMonitored(t, cfg, c.addrs[0], c.addrs[1], c.addrs[3])
	err := p2.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-time.Second {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX through the proxy listing master 3 instead of master 2 = OK while the first lock (masters 1 and 2) runs: two holders")
	}
}

// A master restarted empty whose wall clock then steps forward before the
// proxy's first probe of the new process (a host rebooted with a stale
// clock: redis-server starts at boot, NTP steps the clock a moment later).
// Redis reports uptime_in_seconds from its wall clock, so the new process
// seems to have started an hour ago, and the restart quarantine, counted
// from that start, is already over: the proxy that watched the old
// process counts the empty master at once. TIME moves with the step, but
// from the first reading of the new process on, so no jump is seen.
func TestAttack4ClockStepAfterRestartSkipsTheQuarantine(t *testing.T) {
	c := startNodes(t, 3)
	relay := startClockRelay(t, c.addrs[0])
	relay.uptime.Store(true)
	cfg := safetyConfig()
	cfg.MaxTTL = attack4MaxTTL
	p := mustStartMonitored(t, cfg, relay.Addr, c.addrs[1], c.addrs[2])
	ctx := t.Context()

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p.Client, c, ttl)
	c.procs[0].Kill()
	relay.setSkew(func() time.Duration { return time.Hour })
	c.procs[0] = restartRedis(t, c.procs[0])

	// The proxy sees the new process (and, if it quarantined it, for how long).
	deadline := time.Now().Add(3 * time.Second)
	var f map[string]string
	for {
		f = nodeInfo(t, p.Client, 0)
		if f["state"] == "up" || f["state"] == "quarantined" {
			if n, _ := strconv.Atoi(f["keys"]); n == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node0 = %v; want the restarted process seen", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := p.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-time.Second {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX = OK right after master 0 restarted empty (its clock stepped +1h after it started): two holders; node0 %v", f)
	}
}

// holdOnTwoOfThree has client take k for "first" with ttl, then removes
// it from master 2: held on exactly a quorum, masters 0 and 1 (master 2
// missed the write). It returns when the take began.
func holdOnTwoOfThree(t *testing.T, client *redis.Client, c *cluster, ttl time.Duration) time.Time {
	t.Helper()
	start := time.Now()
	if err := client.SetNX(t.Context(), "k", "first", ttl).Err(); err != nil {
		t.Fatalf("first SET NX: %v", err)
	}
	if err := c.direct[2].Del(t.Context(), "k").Err(); err != nil {
		t.Fatal(err)
	}
	return start
}
