package integration

import (
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack6 A1. A proxy's max_ttl field (max_ttl:<ms> -> when) was stamped
// with that proxy's wall clock and judged stale by another proxy's wall
// clock (unrefreshed for max_ttl + 3 minutes): a proxy whose host clock
// was minutes behind wrote fields every other proxy read as stale, and a
// master restarted empty after it stopped was quarantined for a shorter
// max_ttl while its locks still ran. The attack emulated that clock by
// moving P1's stamps back; since ad227ff a stamp is the master's own
// clock, written and judged by that clock (quorum's
// TestMaxTTLStampOnTheNodesClock), so no proxy's clock can age it, and
// the emulation no longer stands for anything that can happen. The test
// keeps the rest: P2 (max_ttl 2s), started after P1 (8s) stopped, keeps a
// master restarted empty out for P1's 8s.
func TestAttack6MaxTTLOfAProxyGoneIsLearned(t *testing.T) {
	c := startNodes(t, 3)
	ctx := t.Context()
	long := safetyConfig()
	long.MaxTTL = 8 * time.Second
	log := slog.New(slog.NewTextHandler(newLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	long.Log = log
	e1 := newEngine(t, long, c.addrs...)
	if err := e1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p1 := serveProxy(t, proxy.Config{Log: log, CommandTimeout: commandTimeout}, e1)
	p1.Client = newClient(t, p1.Addr, nil)

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	p1.Server.Close()
	e1.Close()

	field := "max_ttl:" + strconv.FormatInt(ttl.Milliseconds(), 10)
	for i, d := range c.direct {
		if err := d.HGet(ctx, quorum.MembersKey, field).Err(); err != nil {
			t.Fatalf("master %d: %s: %v; want P1's stamp", i, field, err)
		}
	}

	p2 := mustStartMonitored(t, safetyConfig(), c.addrs...) // max_ttl 2s
	c.procs[0] = restartRedis(t, c.procs[0])
	waitState(t, p2.Client, 0, "quarantined", 5*time.Second)
	tries := 0
	for time.Since(start) < ttl-time.Second {
		tries++
		if err := p2.Client.SetNX(ctx, "k", "second", 2*time.Second).Err(); err == nil {
			t.Fatalf("SET k second NX PX 2000 through P2 (max_ttl 2s) = OK %v after P1 (max_ttl 8s) granted k for 8s on exactly masters 0 and 1 and master 0 restarted empty: two holders (node0 %v)",
				time.Since(start).Round(time.Millisecond), nodeInfo(t, p2.Client, 0))
		} else if !strings.Contains(errText(err), "NOQUORUM") && err.Error() != "redis: nil" {
			t.Logf("try %d: %v", tries, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tries < 3 {
		t.Skipf("too slow to judge: %d tries before the first lock's end", tries)
	}
}

// attack6 A1b. A max_ttl over 24h (config takes any) is never learned
// from the records (maxLearnedTTL): another proxy quarantines a master
// restarted empty for its own max_ttl, while a lock the first proxy
// granted still runs. Here P1 (max_ttl 25h) grants k for 8s and stops.
func TestAttack6MaxTTLOverADayIsNotLearned(t *testing.T) {
	c := startNodes(t, 3)
	ctx := t.Context()
	long := safetyConfig()
	long.MaxTTL = 25 * time.Hour
	log := slog.New(slog.NewTextHandler(newLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	long.Log = log
	e1 := newEngine(t, long, c.addrs...)
	if err := e1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	p1 := serveProxy(t, proxy.Config{Log: log, CommandTimeout: commandTimeout}, e1)
	p1.Client = newClient(t, p1.Addr, nil)

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	p1.Server.Close()
	e1.Close()

	p2 := mustStartMonitored(t, safetyConfig(), c.addrs...) // max_ttl 2s
	c.procs[0] = restartRedis(t, c.procs[0])
	waitState(t, p2.Client, 0, "quarantined", 5*time.Second)
	tries := 0
	for time.Since(start) < ttl-time.Second {
		tries++
		if err := p2.Client.SetNX(ctx, "k", "second", 2*time.Second).Err(); err == nil {
			t.Fatalf("SET k second NX PX 2000 through P2 (max_ttl 2s) = OK %v after P1 (max_ttl 25h) granted k for 8s on exactly masters 0 and 1 and master 0 restarted empty: two holders (node0 %v)",
				time.Since(start).Round(time.Millisecond), nodeInfo(t, p2.Client, 0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tries < 3 {
		t.Skipf("too slow to judge: %d tries before the first lock's end", tries)
	}
}

// attack6 A2. A running proxy sees a FLUSHALL only when a probe reads the
// master's own record (syncRecord), after INFO and TIME, within the same
// probe timeout (max(probe_interval, node_timeout)). A master whose
// round trip grew past a third of that (a congested link), still well
// within node_timeout, answers every lock call in time and counts, but
// its record is never read by a probe again, and nothing logs it: a
// FLUSHALL there is never seen.
func TestAttack6FlushOnASlowLinkIsNeverSeen(t *testing.T) {
	c := startNodes(t, 3)
	ctx := t.Context()
	var delay atomic.Int64
	slow := startRelay(t, c.addrs[0], relayOpts{replyDelay: &delay})
	cfg := safetyConfig() // node_timeout 1s, probe_interval 100ms: probes time out at 1s
	cfg.MaxTTL = 10 * time.Second
	p := mustStartMonitored(t, cfg, slow, c.addrs[1], c.addrs[2])

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p.Client, c, ttl)
	delay.Store(int64(400 * time.Millisecond)) // the connections are up; each reply now takes 400ms
	if err := c.direct[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // probes every 100ms, each about 1s long
	err := p.Client.SetNX(ctx, "k", "second", ttl).Err()
	f := nodeInfo(t, p.Client, 0)
	if err == nil {
		t.Fatalf("SET k second NX PX 8000 = OK %v after k first was granted on exactly masters 0 and 1 and master 0 was FLUSHALLed: two holders (node0 %v; its record %v)",
			time.Since(start).Round(time.Millisecond), f, c.direct[0].HGetAll(ctx, quorum.MembersKey).Val())
	}
	if f["state"] != "quarantined" {
		t.Errorf("node0 = %v 3s after its FLUSHALL; want quarantined (data lost)", f)
	}
}

// attack6 A4. trust_fsync_always trusts a restart when the process before
// it ran appendonly yes and appendfsync always (its record's fsync
// field). With no-appendfsync-on-rewrite yes (a common latency setting),
// Redis does not fsync while a BGSAVE or BGREWRITEAOF child runs: "the
// durability of Redis is the same as appendfsync no" (redis.conf), up to
// 30s of acknowledged writes lost in a host crash, while the record,
// written long before, survives. The proxy reads only appendfsync and
// trusts such a master. A host crash cannot be staged here; the test
// checks the decision: the restarted master must not count at once.
func TestAttack6FsyncAlwaysWithNoFsyncOnRewriteIsTrusted(t *testing.T) {
	before := append([]string{"--no-appendfsync-on-rewrite", "yes"}, fsyncAlways...)
	c := startNodesFirstWith(t, before...)
	cfg := safetyConfig()
	cfg.TrustFsyncAlways = true
	cfg.MaxTTL = time.Minute // a quarantine outlasts the test
	p := mustStartMonitored(t, cfg, c.addrs...)
	old := waitRunID(t, p, 0, "")
	waitSelf(t, c, 0, old)
	waitRecordField(t, c, 0, "fsync", "") // not named: it does not sync every write
	c.procs[0] = restartRedis(t, c.procs[0], before...)
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := nodeInfo(t, p.Client, 0)
		if f["run_id"] != old && f["state"] == "up" {
			t.Fatalf("node0 after a restart = %v: trusted, while the process before ran no-appendfsync-on-rewrite yes (no fsync during a BGSAVE or AOF rewrite: a host crash then loses acknowledged locks)", f)
		}
		if f["run_id"] != old && f["state"] == "quarantined" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node0 = %v; want the new process seen", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attack6 A8. A clock quarantine reaches proxies started after the jump
// only through the lost mark, field "lost:<address>", keyed by the
// address as the quarantining proxy spells it. A proxy that names the
// same master another way (localhost for 127.0.0.1: attack4 A1's
// premise, which self fixed for restarts) finds no mark, cannot see the
// jump itself (its first TIME is its baseline), and counts the master at
// once while locks that expired early there still run.
func TestAttack6ClockMarkUnderAnotherAddressSpelling(t *testing.T) {
	c := startNodes(t, 3)
	relay := startClockRelay(t, c.addrs[0])
	cfg := clockConfig()
	cfg.MaxTTL = 8 * time.Second
	p1 := mustStartMonitored(t, cfg, relay.Addr, c.addrs[1], c.addrs[2])
	ctx := t.Context()

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p1.Client, c, ttl)
	// Master 0's clock jumps 10s: k, with 8s left, expires there at once
	// (emulated: the relay moves only TIME).
	relay.setSkew(func() time.Duration { return 10 * time.Second })
	if err := c.direct[0].Del(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p1.Client, 0, "quarantined", 3*time.Second)
	// P1's mark reaches master 1's record (and every other).
	deadline := time.Now().Add(3 * time.Second)
	for !strings.HasSuffix(c.direct[1].HGet(ctx, quorum.MembersKey, "lost:"+relay.Addr).Val(), " clock") {
		if time.Now().After(deadline) {
			t.Fatalf("no clock mark for %s in master 1's record: %v", relay.Addr, c.direct[1].HGetAll(ctx, quorum.MembersKey).Val())
		}
		time.Sleep(20 * time.Millisecond)
	}

	_, port, _ := net.SplitHostPort(relay.Addr)
	p2 := mustStartMonitored(t, cfg, net.JoinHostPort("localhost", port), c.addrs[1], c.addrs[2])
	err := p2.Client.SetNX(ctx, "k", "second", 2*time.Second).Err()
	if err == nil && time.Since(start) < ttl-time.Second {
		t.Fatalf("SET k second NX through P2 (master 0 named localhost) = OK %v after k first was granted on exactly masters 0 and 1 and master 0's clock jumped 10s (P1 quarantined it, mark %q): two holders (P2's node0 %v)",
			time.Since(start).Round(time.Millisecond), mustField(t, c, 1, "lost:"+relay.Addr), nodeInfo(t, p2.Client, 0))
	}
}

// mustField is master i's own membership record's field.
func mustField(t *testing.T, c *cluster, i int, field string) string {
	t.Helper()
	v, err := c.direct[i].HGet(t.Context(), quorum.MembersKey, field).Result()
	if err != nil {
		t.Fatalf("master %d's record %s: %v", i, field, err)
	}
	return v
}
