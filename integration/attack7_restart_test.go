package integration

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack7 B1 (what ad227ff missed of attack6 A2). The record now has a
// timeout of its own, but the probe before it (INFO, then TIME, and
// CONFIG GET with AOF on) still runs on one probe timeout, and a probe
// that times out returns before the record is read. On a link whose
// round trip is over half the probe timeout (a third with AOF) while
// still under node_timeout, every probe times out; the breaker counts
// those stalls, but each lock call answered in time resets them, so a
// proxy with traffic never marks the node down. The node keeps counting,
// its record is never read, and a FLUSHALL there is never seen.
func TestAttack7FlushOnALinkTooSlowForTheProbe(t *testing.T) {
	c := startNodes(t, 3)
	ctx := t.Context()
	var delay atomic.Int64
	slow := startRelay(t, c.addrs[0], relayOpts{replyDelay: &delay})
	cfg := safetyConfig() // node_timeout 1s, probe_interval 100ms: probes time out at 1s
	cfg.MaxTTL = 10 * time.Second
	p := mustStartMonitored(t, cfg, slow, c.addrs[1], c.addrs[2])

	const ttl = 8 * time.Second
	start := holdOnTwoOfThree(t, p.Client, c, ttl)
	delay.Store(int64(600 * time.Millisecond)) // INFO + TIME: 1.2s, past the probe's 1s; a lock call: 0.6s
	if err := c.direct[0].FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// Other clients' lock traffic, one call at a time (each answered by
	// master 0 in 0.6s, within node_timeout), for 4s of probes.
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); {
		if err := p.Client.SetNX(ctx, "other", "x", 2*time.Second).Err(); err == nil {
			p.Client.Del(ctx, "other")
		}
		time.Sleep(200 * time.Millisecond)
	}
	err := p.Client.SetNX(ctx, "k", "second", ttl).Err()
	f := nodeInfo(t, p.Client, 0)
	if err == nil {
		t.Fatalf("SET k second NX PX 8000 = OK %v after k first was granted on exactly masters 0 and 1 and master 0 was FLUSHALLed: two holders (node0 %v; its record %v)",
			time.Since(start).Round(time.Millisecond), f, c.direct[0].HGetAll(ctx, quorum.MembersKey).Val())
	}
	if f["state"] == "up" {
		t.Errorf("node0 = %v 4s after its FLUSHALL, its probes all timed out; want it not counted", f)
	}
}

// attack7 B4 (regression of ad227ff, attack6 A1's fix). learnMaxTTL now
// judges a max_ttl field's age on its node's clock, and counts every
// field of a node whose clock this proxy has not read yet. At Start the
// first node's records are read (apply, probeRecords) before the other
// nodes' clocks are (each node's apply reads its own, in turn), so every
// field in those records counts, however old, and the learned max_ttl
// only ever grows: one field an old proxy (max_ttl 1h, gone for good)
// left in the records makes every later proxy quarantine a restarted
// master for an hour. Fields are never deleted; before ad227ff such a
// field was dropped 3 minutes after its max_ttl.
func TestAttack7AnOldMaxTTLFieldCountsAtEveryStart(t *testing.T) {
	c := startNodes(t, 3)
	ctx := t.Context()
	for i, d := range c.direct {
		now, err := d.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		// A proxy with max_ttl 1h last ran two hours ago (on this node's clock).
		if err := d.HSet(ctx, quorum.MembersKey, "max_ttl:3600000", now.Add(-2*time.Hour).UnixMilli()).Err(); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	cfg := safetyConfig() // max_ttl 2s
	p := mustStartMonitored(t, cfg, c.addrs...)
	old := waitRunID(t, p, 0, "")
	waitSelf(t, c, 0, old)
	c.procs[0] = restartRedis(t, c.procs[0])
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := nodeInfo(t, p.Client, 0)
		if f["run_id"] != old && f["state"] == "quarantined" {
			if until, err := time.Parse(time.RFC3339Nano, f["until"]); err == nil && time.Until(until) > time.Minute {
				t.Fatalf("node0 after a restart = %v: quarantined %v, for a max_ttl field stamped 2h ago by a proxy long gone (max_ttl 1h; this proxy's 2s)",
					f, time.Until(until).Round(time.Second))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node0 = %v; want the new process quarantined", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
