package integration

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack11 F3 (the new-deployment rule, fenceseed.go seedActions; F2's
// class, which fence18d is fixing for a seeded master): a master that
// was never seeded (restarted, so quarantined, when the deployment's
// first FENCE seeded the others at zero) stays pending for max_ttl after
// its mark. If the two masters that hold every token restart empty in
// that time (a majority lost: beyond the failure model, where fence.go
// promises that counters stop with NOQUORUM rather than go back), no
// master is seeded any more, every one answered missing or pending, and
// the rule takes it for a new deployment: the next holder's token is 1
// again, after 3. Nothing in the state tells the two apart: the pending
// master never learnt that a deployment had started (a seeding that
// wrote a mark of the deployment on every pending master it saw, up or
// not, would).
func TestAttack11FenceTokensDoNotGoBackBesideAMasterNeverSeeded(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig() // max_ttl 2s: a restart quarantine and the seeding's wait
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond // valid: at most half of min_ttl
	p := mustStartMonitored(t, qcfg, c.addrs...)
	ctx := t.Context()

	// Master 2 restarts just before the deployment's first FENCE: it is
	// quarantined, so the first FENCE seeds masters 0 and 1 only.
	c.procs[2] = restartRedis(t, c.procs[2])
	waitState(t, p.Client, 2, "quarantined", 5*time.Second)
	last := int64(0)
	for n := range 3 {
		f := fenceHold(t, p.Client, "attack11:f3", n, 1500*time.Millisecond)
		if f <= last {
			t.Fatalf("holder %d got token %d after %d", n, f, last)
		}
		last = f
	}
	for i, d := range c.direct {
		t.Logf("master %d's counters before the restarts: %v", i, d.HGetAll(ctx, quorum.CountersKey).Val())
	}
	if c.direct[2].HGet(ctx, quorum.CountersKey, "seeded").Val() == "1" {
		t.Fatal("master 2 was seeded already: the staging needs it pending")
	}
	// Masters 0 and 1, which hold every token, restart empty before master
	// 2 is seeded, while master 2 does not answer (stopped, its data
	// kept): the first counter read marks them pending and, without
	// master 2's answer, decides nothing else.
	c.procs[2].Freeze(t)
	c.procs[0] = restartRedis(t, c.procs[0])
	c.procs[1] = restartRedis(t, c.procs[1])
	for i := range 2 {
		waitState(t, p.Client, i, "up", 10*time.Second)
	}
	if err := p.Client.SetNX(ctx, "attack11:f3", "holder-x", 1500*time.Millisecond).Err(); err != nil {
		t.Fatalf("SET NX with master 2 stopped: %v", err)
	}
	_, ferr := p.Client.Do(ctx, "FENCE", "attack11:f3", "holder-x").Int64()
	t.Logf("FENCE with master 2 stopped: %v", ferr)
	p.Client.Eval(ctx, distlockRelease, []string{"attack11:f3"}, "holder-x")
	c.procs[2].Thaw()
	waitState(t, p.Client, 2, "up", 10*time.Second)
	if err := p.Client.SetNX(ctx, "attack11:f3", "holder-3", 1500*time.Millisecond).Err(); err != nil {
		t.Fatalf("holder 3: SET NX: %v", err)
	}
	f, err := p.Client.Do(ctx, "FENCE", "attack11:f3", "holder-3").Int64()
	for i, d := range c.direct {
		t.Logf("master %d's counters after: %v", i, d.HGetAll(ctx, quorum.CountersKey).Val())
	}
	if err == nil && f <= last {
		t.Errorf("holder 3's FENCE = %d after token %d: tokens went back (a majority lost its counters beside a master never seeded; want NOQUORUM rather than a lower token)", f, last)
	}
}

// attack11StartMonitored is mustStartMonitored with a proxy config of
// the test's own (latch_keys, fence_keys).
func attack11StartMonitored(t *testing.T, pcfg proxy.Config, qcfg quorum.Config, addrs ...string) *proxyProc {
	t.Helper()
	log := slog.New(slog.NewTextHandler(newLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
	qcfg.Log = log
	e := newEngine(t, qcfg, addrs...)
	if err := e.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	pcfg.Log = log
	p := serveProxy(t, pcfg, e)
	p.Client = newClient(t, p.Addr, nil)
	return p
}

// attack11 F3's latch twin (K3's class): a count-3 latch set while master
// 2 was quarantined (so only masters 0 and 1 were seeded, and got the
// set); masters 0 and 1 restart empty before master 2 is seeded, and are
// marked while master 2 does not answer (stopped). Every
// master is then missing or pending, taken for a new deployment: seeded
// at zero, no count anywhere, and getCount reads 0, the latch OPEN with
// no countDown. One Redis: 3; the docs promise NOQUORUM for a latch
// whose masters a majority restarted empty, never 0.
func TestAttack11LatchMajorityRestartedBesideAMasterNeverSeeded(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig()
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	p := attack11StartMonitored(t, latchConfig(), qcfg, c.addrs...)
	ctx := t.Context()
	const name = "latch:attack11:f3"
	l := newLatchClient(p.Client, name)

	c.procs[2] = restartRedis(t, c.procs[2])
	waitState(t, p.Client, 2, "quarantined", 5*time.Second)
	if v, err := l.trySetCount(t, 3); v != 1 || err != nil {
		t.Fatalf("trySetCount(3) = %d, %v", v, err)
	}
	if v, err := l.getCount(t); v != 3 || err != nil {
		t.Fatalf("getCount = %d, %v; want 3", v, err)
	}
	for i, d := range c.direct {
		t.Logf("master %d's counters before the restarts: %v", i, d.HGetAll(ctx, quorum.CountersKey).Val())
	}
	if c.direct[2].HGet(ctx, quorum.CountersKey, "seeded").Val() == "1" {
		t.Fatal("master 2 was seeded already: the staging needs it pending")
	}
	// As in F3: masters 0 and 1 are marked while master 2 (data kept)
	// does not answer.
	c.procs[2].Freeze(t)
	c.procs[0] = restartRedis(t, c.procs[0])
	c.procs[1] = restartRedis(t, c.procs[1])
	for i := range 2 {
		waitState(t, p.Client, i, "up", 10*time.Second)
	}
	v, err := l.getCount(t)
	t.Logf("getCount with master 2 stopped: %d, %v", v, err)
	c.procs[2].Thaw()
	waitState(t, p.Client, 2, "up", 10*time.Second)
	l.getCount(t) // seeds
	v, err = l.getCount(t)
	for i, d := range c.direct {
		t.Logf("master %d's counters after: %v", i, d.HGetAll(ctx, quorum.CountersKey).Val())
	}
	if err == nil && v == 0 {
		t.Errorf("getCount = 0 after 2 of 3 masters restarted empty beside one never seeded: the count-3 latch reads OPEN with no countDown (one Redis: 3; want NOQUORUM)")
	}
}

// attack11 F3c (for a new deployment made live with a master down): a
// deployment whose first FENCEs run with master 2 down (if they are served)
// has tokens on masters 0 and 1 only; master 2 comes back empty and waits
// max_ttl to be seeded; masters 0 and 1 restart empty in that time (a
// majority lost). No later FENCE may return a token at or below an
// earlier one (NOQUORUM is the promise). On a proxy that refuses a new
// deployment with a master down, no token is returned at first and the
// property holds trivially.
func TestAttack11FenceTokensDoNotGoBackAfterAMasterDownAtTheStart(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig()
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	p := mustStartMonitored(t, qcfg, c.addrs...)
	ctx := t.Context()
	c.kill(2)
	waitState(t, p.Client, 2, "down", 5*time.Second)
	last, served := int64(0), 0
	for n := range 3 {
		token := fmt.Sprintf("holder-%d", n)
		if err := p.Client.SetNX(ctx, "attack11:f3c", token, 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("holder %d: SET NX with master 2 down: %v", n, err)
		}
		f, err := p.Client.Do(ctx, "FENCE", "attack11:f3c", token).Int64()
		p.Client.Eval(ctx, distlockRelease, []string{"attack11:f3c"}, token)
		if err != nil {
			t.Logf("holder %d: FENCE with master 2 down: %v", n, err)
			continue
		}
		if f <= last {
			t.Fatalf("holder %d got token %d after %d", n, f, last)
		}
		last, served = f, served+1
	}
	t.Logf("%d FENCEs served with master 2 down at the start; last token %d", served, last)
	c.procs[2] = restartRedis(t, c.procs[2])
	waitState(t, p.Client, 2, "quarantined", 5*time.Second)
	p.Client.Do(ctx, "FENCE", "attack11:f3c", "nobody") // a read round: marks master 2 pending
	c.procs[0] = restartRedis(t, c.procs[0])
	c.procs[1] = restartRedis(t, c.procs[1])
	for i := range 3 {
		waitState(t, p.Client, i, "up", 10*time.Second)
	}
	for n := 3; n < 5; n++ {
		token := fmt.Sprintf("holder-%d", n)
		if err := p.Client.SetNX(ctx, "attack11:f3c", token, 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("holder %d: SET NX: %v", n, err)
		}
		f, err := p.Client.Do(ctx, "FENCE", "attack11:f3c", token).Int64()
		p.Client.Eval(ctx, distlockRelease, []string{"attack11:f3c"}, token)
		for i, d := range c.direct {
			t.Logf("holder %d: master %d's counters: %v", n, i, d.HGetAll(ctx, quorum.CountersKey).Val())
		}
		if err == nil && f <= last {
			t.Errorf("holder %d's FENCE = %d after token %d: tokens went back (a majority lost its counters beside a master that was down at the deployment's start)", n, f, last)
		}
		if err == nil {
			last = f
		}
	}
}

// attack11 (held on main; a net for FENCE asking a quorum first, whose
// first try 2915543 was reverted in b190dd3): a rolling restart of every
// master, one at a time, each restarted empty and waited for (max_ttl and
// its quarantine) before the next; a holder FENCEs after each restart and
// after each wait. Every FENCE is served (a minority is lost at most),
// and every token is above the one before.
func TestAttack11FenceThroughARollingRestartOfEveryMaster(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig() // max_ttl 2s
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	p := mustStartMonitored(t, qcfg, c.addrs...)
	ctx := t.Context()
	last, n := int64(0), 0
	hold := func(when string) {
		t.Helper()
		token := fmt.Sprintf("holder-%d", n)
		n++
		if err := p.Client.SetNX(ctx, "attack11:roll", token, 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("%s: SET NX: %v", when, err)
		}
		f, err := p.Client.Do(ctx, "FENCE", "attack11:roll", token).Int64()
		p.Client.Eval(ctx, distlockRelease, []string{"attack11:roll"}, token)
		if err != nil {
			t.Fatalf("%s: FENCE: %v (a minority is lost at most)", when, err)
		}
		if f <= last {
			t.Fatalf("%s: FENCE = %d after %d", when, f, last)
		}
		last = f
	}
	hold("before the restarts")
	for round := range 1 {
		for i := range 3 {
			c.procs[i] = restartRedis(t, c.procs[i])
			waitState(t, p.Client, i, "quarantined", 5*time.Second)
			hold(fmt.Sprintf("round %d, master %d restarted", round, i))
			waitState(t, p.Client, i, "up", 10*time.Second)
			time.Sleep(2100 * time.Millisecond) // its counters' wait: max_ttl + drift since the mark
			hold(fmt.Sprintf("round %d, master %d waited for", round, i))
			if s := c.direct[i].HGet(ctx, quorum.CountersKey, "seeded").Val(); s != "1" {
				t.Fatalf("round %d: master %d not seeded again after its wait (%v)", round, i, c.direct[i].HGetAll(ctx, quorum.CountersKey).Val())
			}
		}
	}
}
