package integration

import (
	"bufio"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trust_fsync_always trusts a restarted master whose own record "still
// names the process before it" (guarantees.md). The code trusts any self
// at all: a master restored from an older copy of its AOF (an operator's
// backup, taken while an earlier process ran) names that earlier process,
// not the one before it, and lost every lock granted since the copy; it
// counts at once.
func TestAttack5FsyncAlwaysTrustsAnOlderProcessesRecord(t *testing.T) {
	c := startNodesFsyncFirst(t)
	cfg := safetyConfig()
	cfg.TrustFsyncAlways = true
	cfg.MaxTTL = attack4MaxTTL
	p := mustStartMonitored(t, cfg, c.addrs...)
	ctx := t.Context()
	first := waitRunID(t, p, 0, "")
	// A copy of master 0's AOF while process A runs: its record's self is A.
	backup := t.TempDir()
	if err := os.CopyFS(backup, os.DirFS(filepath.Join(c.procs[0].Dir, "appendonlydir"))); err != nil {
		t.Fatal(err)
	}
	// Restarted with its AOF (process B): trusted, B verified and named.
	c.procs[0] = restartRedis(t, c.procs[0], fsyncAlways...)
	second := waitRunID(t, p, 0, first)
	waitSelf(t, c, 0, second)

	start := time.Now()
	const ttl = 8 * time.Second
	if err := p.Client.SetNX(ctx, "k", "first", ttl).Err(); err != nil {
		t.Fatalf("first SET NX: %v", err)
	}
	if err := c.direct[2].Del(ctx, "k").Err(); err != nil { // held on 0 and 1
		t.Fatal(err)
	}
	// Restored from the copy (process C): the lock is gone, self names A.
	c.procs[0].Kill()
	dir := filepath.Join(c.procs[0].Dir, "appendonlydir")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	c.procs[0] = restartRedis(t, c.procs[0], fsyncAlways...)
	waitSelf(t, c, 0, first)
	var f map[string]string
	deadline := time.Now().Add(3 * time.Second)
	for {
		f = nodeInfo(t, p.Client, 0)
		if f["run_id"] != second && (f["state"] == "up" || f["state"] == "quarantined") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node0 = %v; want the restored process seen", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := p.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-time.Second {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX = OK after master 0 came back from an AOF copy whose self names process A, not B before it: two holders; node0 %v", f)
	}
}

// waitRunID waits until the proxy shows node i up with a run_id other
// than not, and returns it.
func waitRunID(t *testing.T, p *proxyProc, i int, not string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := nodeInfo(t, p.Client, i)
		if f["state"] == "up" && f["run_id"] != not {
			return f["run_id"]
		}
		if time.Now().After(deadline) {
			t.Fatalf("node%d = %v; want up with a run_id other than %q", i, f, not)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSelf waits until master i's own membership record names runID.
func waitSelf(t *testing.T, c *cluster, i int, runID string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := c.direct[i].HGet(t.Context(), "redlock-proxy:members", "self").Result()
		if v == runID {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("master %d's self = %q; want %q", i, v, runID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// 53b2001 ends a restart quarantine no sooner than max_ttl after the last
// time this proxy saw the process before it (attack4 A6: a clock stepped
// forward after the restart makes the uptime too long). That time is set
// only when a probe finds the verified process, never by the requests it
// granted since: a lock granted a while after the last probe (up to a
// probe interval; 500ms by default) by a master that then restarts empty
// with its clock stepped forward outlives the quarantine by that while.
func TestAttack5ClockStepAfterRestartLaterThanTheLastProbe(t *testing.T) {
	c := startNodes(t, 3)
	relay := startClockRelay(t, c.addrs[0])
	relay.uptime.Store(true)
	cfg := safetyConfig()
	// The quarantine's end is seen at a probe: a max_ttl a little under
	// three probe intervals makes it seen at the third after the last
	// probe of the old process, so a lock granted 0.1-1s after that probe
	// outlives it.
	cfg.MaxTTL = 2900 * time.Millisecond
	cfg.ProbeInterval = time.Second
	p := mustStartMonitored(t, cfg, relay.Addr, c.addrs[1], c.addrs[2])
	ctx := t.Context()
	probed := time.Now()                // the probes tick from here
	time.Sleep(1500 * time.Millisecond) // half an interval after a probe

	start := time.Now()
	ttl := cfg.MaxTTL
	if err := p.Client.SetNX(ctx, "k", "first", ttl).Err(); err != nil {
		t.Fatalf("first SET NX: %v", err)
	}
	if err := c.direct[2].Del(ctx, "k").Err(); err != nil { // held on 0 and 1
		t.Fatal(err)
	}
	c.procs[0].Kill()
	relay.setSkew(func() time.Duration { return time.Hour })
	c.procs[0] = restartRedis(t, c.procs[0])
	deadline := time.Now().Add(ttl)
	var f map[string]string
	for {
		f = nodeInfo(t, p.Client, 0)
		if f["state"] == "up" {
			if n, _ := strconv.Atoi(f["keys"]); n == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			return // quarantined for the whole of the first lock: held
		}
		time.Sleep(20 * time.Millisecond)
	}
	err := p.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-100*time.Millisecond || start.Sub(probed) > 2*cfg.ProbeInterval {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	if err == nil {
		t.Errorf("second SET NX = OK %v after the first (PX %v), master 0 restarted empty with its clock stepped +1h: two holders; node0 %v", time.Since(start), ttl, f)
	}
}

// A proxy that starts verifies each master by its own record's self and
// then writes self again (writeRecord). A FLUSHALL between its read of the
// record and that write (a master on a slow link makes the read of every
// record, and so the gap, as long as its round trip) is hidden: the write
// puts self back into the flushed record, so no proxy, this one, one
// running or one started later, ever sees the flush (attack4 A4's case,
// in the start's own gap).
func TestAttack5FlushBetweenStartsRecordReadAndItsWrite(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	cfg.MaxTTL = attack4MaxTTL
	cfg1 := cfg
	cfg1.ProbeInterval = 10 * time.Second // P1 probes no more: as if stopped
	p1 := mustStartMonitored(t, cfg1, c.addrs...)
	ctx := t.Context()
	start := time.Now()
	const ttl = 8 * time.Second
	if err := p1.Client.SetNX(ctx, "k", "first", ttl).Err(); err != nil {
		t.Fatalf("first SET NX: %v", err)
	}
	if err := c.direct[2].Del(ctx, "k").Err(); err != nil { // held on 0 and 1
		t.Fatal(err)
	}

	// MONITOR on master 0: FLUSHALL once the next proxy has read its record.
	mon, err := net.Dial("tcp", c.addrs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	if _, err := mon.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(mon)
	if l, err := r.ReadString('\n'); err != nil || l != "+OK\r\n" {
		t.Fatalf("MONITOR = %q, %v", l, err)
	}
	flushed := make(chan error, 1)
	go func() {
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				flushed <- err
				return
			}
			if strings.Contains(strings.ToLower(l), `"hgetall" "redlock-proxy:members"`) {
				flushed <- c.direct[0].FlushAll(context.Background()).Err()
				return
			}
		}
	}()
	cfg2 := cfg
	cfg2.NodeTimeout = 2 * time.Second
	p2 := mustStartMonitored(t, cfg2, c.addrs[0], c.addrs[1], startRelay(t, c.addrs[2], relayOpts{replyDelay: fixedDelay(300 * time.Millisecond)}))
	if err := <-flushed; err != nil {
		t.Fatalf("FLUSHALL on master 0: %v", err)
	}
	if n, _ := c.direct[0].Exists(ctx, "k").Result(); n != 0 {
		t.Fatal("master 0 still holds k")
	}
	time.Sleep(3 * cfg.ProbeInterval) // P2 probes master 0 since
	err = p2.Client.SetNX(ctx, "k", "second", ttl).Err()
	if time.Since(start) > ttl-time.Second {
		t.Skip("too slow to judge: the first lock may have expired")
	}
	self, _ := c.direct[0].HGet(ctx, "redlock-proxy:members", "self").Result()
	if err == nil {
		t.Errorf("second SET NX = OK after master 0 was flushed during P2's start (master 0's self now %q): two holders; node0 %v", self, nodeInfo(t, p2.Client, 0))
	}
}
