package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// safetyConfig is the engine config of the safety tests: a short max_ttl,
// so a restart quarantine lasts 2s + 22ms, and a fast probe.
func safetyConfig() quorum.Config {
	return quorum.Config{NodeTimeout: nodeTimeout, MaxTTL: 2 * time.Second, ProbeInterval: 100 * time.Millisecond}
}

// startMonitored is startProxy with the engine's monitor started, as main
// does over real masters. It returns the error of Start, if any, instead
// of a proxy.
func startMonitored(t testing.TB, qcfg quorum.Config, addrs ...string) (*proxyProc, error) {
	t.Helper()
	return startMonitoredWith(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, addrs...)
}

// startMonitoredWith is startMonitored serving with cfg (its Log set).
func startMonitoredWith(t testing.TB, cfg proxy.Config, qcfg quorum.Config, addrs ...string) (*proxyProc, error) {
	t.Helper()
	logs := newLogWriter(t)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	qcfg.Log = log
	e := newEngine(t, qcfg, addrs...)
	if err := e.Start(t.Context()); err != nil {
		return nil, err
	}
	cfg.Log = log
	p := serveProxy(t, cfg, e)
	p.Client = newClient(t, p.Addr, nil)
	return p, nil
}

func mustStartMonitored(t testing.TB, qcfg quorum.Config, addrs ...string) *proxyProc {
	t.Helper()
	p, err := startMonitored(t, qcfg, addrs...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p
}

// nodeInfo returns INFO's line for node i as its fields.
func nodeInfo(t testing.TB, c *redis.Client, i int) map[string]string {
	t.Helper()
	text, err := c.Info(t.Context()).Result()
	if err != nil {
		t.Fatalf("INFO: %v", err)
	}
	prefix := fmt.Sprintf("node%d:", i)
	for line := range strings.SplitSeq(text, "\r\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			fields := map[string]string{}
			for kv := range strings.SplitSeq(rest, ",") {
				k, v, _ := strings.Cut(kv, "=")
				fields[k] = v
			}
			return fields
		}
	}
	t.Fatalf("INFO has no %s line:\n%s", prefix, text)
	return nil
}

// waitState waits until INFO shows node i in state, and returns its fields.
func waitState(t testing.TB, c *redis.Client, i int, state string, within time.Duration) map[string]string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		f := nodeInfo(t, c, i)
		if f["state"] == state {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("node%d = %v after %v; want state=%s", i, f, within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFreshMastersServeAtOnce(t *testing.T) {
	c := startNodes(t, 3)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	// No wait: Start checked every node, and none is known as restarted.
	if err := p.Client.SetNX(t.Context(), "k", "t", time.Second).Err(); err != nil {
		t.Fatalf("SET NX right after start: %v", err)
	}
	for i := range c.addrs {
		if f := nodeInfo(t, p.Client, i); f["state"] != "up" || len(f["run_id"]) != 40 || f["addr"] != c.addrs[i] {
			t.Errorf("node%d = %v; want up with its run_id", i, f)
		}
		rec, err := c.direct[i].HGetAll(t.Context(), quorum.MembersKey).Result()
		if err != nil || rec["self"] != nodeInfo(t, p.Client, i)["run_id"] {
			t.Errorf("node %d membership record = %v, %v; want self = its run_id", i, rec, err)
		}
		for j, a := range c.addrs {
			if id := nodeInfo(t, p.Client, j)["run_id"]; rec[a] != id {
				t.Errorf("node %d membership record names %s as %q; want %q", i, a, rec[a], id)
			}
		}
	}
}

func TestRestartedMasterIsQuarantined(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	p := mustStartMonitored(t, cfg, c.addrs...)
	old := nodeInfo(t, p.Client, 0)["run_id"]

	c.procs[0] = restartRedis(t, c.procs[0])
	restarted := time.Now()
	f := waitState(t, p.Client, 0, "quarantined", 5*time.Second)
	if f["reason"] != "restarted" || f["run_id"] == old || f["until"] == "" {
		t.Fatalf("node0 = %v; want quarantined, reason restarted, a new run_id, an end", f)
	}
	until, err := time.Parse(time.RFC3339Nano, f["until"])
	if err != nil {
		t.Fatalf("until %q: %v", f["until"], err)
	}
	// max_ttl + drift from the node's start, which uptime gives to the
	// second (never early).
	if min := restarted.Add(cfg.MaxTTL - time.Second); until.Before(min) {
		t.Errorf("until = %v; want at least %v (restart + max_ttl, 1s for uptime's rounding)", until, min)
	}

	// Its grant does not count: node1 holds the key for another token,
	// so node0's and node2's grants would be a quorum only if node0's
	// counted. The reply is an error, not a nil "taken".
	if err := c.direct[1].Set(t.Context(), "k", "other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	err = p.Client.SetNX(t.Context(), "k", "t", time.Second).Err()
	if err == nil || errors.Is(err, redis.Nil) || !strings.HasPrefix(err.Error(), "NOQUORUM") {
		t.Errorf("SET NX with node0 quarantined = %v; want a NOQUORUM error", err)
	}
	// The write still went to node0 and was undone there.
	if v, ok := c.value(t, 0, "k"); ok {
		t.Errorf("node0 holds k = %q after the failed acquire; want it released", v)
	}

	// A proxy started after the restart never saw the old run_id, and
	// still quarantines node0, from the records on node1 and node2.
	p2 := mustStartMonitored(t, cfg, c.addrs...)
	// (The first proxy's mark may end it a probe later, "restarted
	// (seen by another proxy)".)
	if f2 := nodeInfo(t, p2.Client, 0); f2["state"] != "quarantined" || !strings.HasPrefix(f2["reason"], "restarted") {
		t.Errorf("second proxy: node0 = %v; want quarantined, restarted", f2)
	}

	// Once max_ttl has passed since the restart, both count it again.
	waitState(t, p.Client, 0, "up", cfg.MaxTTL+3*time.Second)
	if time.Now().Before(restarted.Add(cfg.MaxTTL)) {
		t.Errorf("node0 up %v after its restart; want at least max_ttl (%v)", time.Since(restarted), cfg.MaxTTL)
	}
	waitState(t, p2.Client, 0, "up", 2*time.Second)
	if err := p.Client.SetNX(t.Context(), "k", "t", time.Second).Err(); err != nil {
		t.Errorf("SET NX after the quarantine: %v", err)
	}
	// The record is rewritten just after the state changes.
	deadline := time.Now().Add(2 * time.Second)
	for {
		rec, _ := c.direct[1].HGet(t.Context(), quorum.MembersKey, c.addrs[0]).Result()
		if rec == f["run_id"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node1's record of node0 = %q; want the new run_id %q", rec, f["run_id"])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestAppendfsyncAlwaysIsTrusted(t *testing.T) {
	c := startNodesFsyncFirst(t)
	cfg := safetyConfig()
	cfg.TrustFsyncAlways = true
	cfg.MaxTTL = time.Minute // a quarantine would outlast the test
	p := mustStartMonitored(t, cfg, c.addrs...)
	if err := p.Client.SetNX(t.Context(), "k", "t", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	old := nodeInfo(t, p.Client, 0)["run_id"]
	c.procs[0] = restartRedis(t, c.procs[0], fsyncAlways...)
	// A new run_id, and up, never quarantined.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := nodeInfo(t, p.Client, 0)
		if f["state"] == "quarantined" {
			t.Fatalf("node0 = %v; want not quarantined: it runs appendfsync always", f)
		}
		if f["state"] == "up" && f["run_id"] != old {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node0 = %v; want up with a new run_id", f)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// It kept the lock through the restart.
	if v, _ := c.value(t, 0, "k"); v != "t" {
		t.Errorf("node0 GET k = %q after restart; want t (from its AOF)", v)
	}
}

// TestFsyncAlwaysTrustsOnlyWhatTheProcessBeforeSynced: trust_fsync_always
// trusts a restart only when the process before it ran appendfsync
// always (its own record says so), not when only the new process does:
// one that ran everysec may have lost its last second of grants.
func TestFsyncAlwaysTrustsOnlyWhatTheProcessBeforeSynced(t *testing.T) {
	everysec := []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	tests := []struct {
		name  string
		first []string
		// before, run on master 0 once it is verified, and what its own
		// record's fsync field must then say (want: its run_id or "").
		before func(t *testing.T, c *cluster)
		named  bool
	}{
		{"everysec, restarted with always", everysec, nil, false},
		{"always, set to everysec while it ran", fsyncAlways, func(t *testing.T, c *cluster) {
			if err := c.direct[0].ConfigSet(t.Context(), "appendfsync", "everysec").Err(); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"always throughout", fsyncAlways, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startNodesFirstWith(t, tt.first...)
			cfg := safetyConfig()
			cfg.TrustFsyncAlways = true
			cfg.MaxTTL = time.Minute // a quarantine outlasts the test
			p := mustStartMonitored(t, cfg, c.addrs...)
			old := waitRunID(t, p, 0, "")
			waitSelf(t, c, 0, old)
			if tt.before != nil {
				tt.before(t, c)
			}
			want := ""
			if tt.named {
				want = old
			}
			waitRecordField(t, c, 0, "fsync", want)
			c.procs[0] = restartRedis(t, c.procs[0], fsyncAlways...)
			deadline := time.Now().Add(5 * time.Second)
			for {
				f := nodeInfo(t, p.Client, 0)
				if f["run_id"] != old && (f["state"] == "up" || f["state"] == "quarantined") {
					if got := f["state"] == "up"; got != tt.named {
						t.Fatalf("node0 after the restart = %v; want up only if the process before synced every write (%v)", f, tt.named)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("node0 = %v; want the new process seen", f)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// waitRecordField waits until master i's own membership record has field
// set to want ("" also when it is missing).
func waitRecordField(t *testing.T, c *cluster, i int, field, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, _ := c.direct[i].HGet(t.Context(), "redlock-proxy:members", field).Result()
		if v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("master %d's record %s = %q; want %q", i, field, v, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestStartRefusesUnsafeMasters(t *testing.T) {
	tests := []struct {
		name  string
		addrs func(t *testing.T) []string
		want  []string // in Start's error
	}{
		{"replica", func(t *testing.T) []string {
			m := startRedis(t)
			_, port, _ := net.SplitHostPort(m.Addr)
			r := startRedis(t, "--replicaof", "127.0.0.1", port)
			return []string{m.Addr, r.Addr, startRedis(t).Addr}
		}, []string{"node 1 (", "role is slave"}},
		{"allkeys eviction", func(t *testing.T) []string {
			return []string{startRedis(t).Addr, startRedis(t).Addr, startRedis(t, "--maxmemory-policy", "allkeys-lru").Addr}
		}, []string{"node 2 (", "maxmemory-policy is allkeys-lru"}},
		{"one master twice", func(t *testing.T) []string {
			a := startRedis(t).Addr
			_, port, _ := net.SplitHostPort(a)
			return []string{a, startRedis(t).Addr, "localhost:" + port}
		}, []string{"node 2 (localhost:", "same run_id", "as node 0 (127.0.0.1:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := startMonitored(t, safetyConfig(), tt.addrs(t)...)
			if err == nil {
				t.Fatal("Start = nil; want it to refuse")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start = %q; want it to say %q", err, w)
				}
			}
		})
	}
}

// TestDeadMasterCostsLittle: with a master down, a request costs far less
// than node_timeout, once the breaker has opened: a killed master at once
// (its connection is refused), a frozen one after three timeouts.
func TestDeadMasterCostsLittle(t *testing.T) {
	for _, mode := range []string{"killed", "frozen"} {
		t.Run(mode, func(t *testing.T) {
			c := startNodes(t, 3)
			cfg := safetyConfig()
			cfg.NodeTimeout = 500 * time.Millisecond
			p := mustStartMonitored(t, cfg, c.addrs...)
			if mode == "killed" {
				c.kill(2)
			} else {
				c.procs[2].Freeze(t)
			}
			for i := range 3 { // opens the breaker
				p.Client.SetNX(t.Context(), fmt.Sprint("warm", i), "t", time.Second)
			}
			waitState(t, p.Client, 2, "down", 5*time.Second)
			const n = 20
			start := time.Now()
			for i := range n {
				if err := p.Client.SetNX(t.Context(), fmt.Sprint("k", i), "t", time.Second).Err(); err != nil {
					t.Fatalf("SET NX with node 2 down: %v", err)
				}
			}
			per := time.Since(start) / n
			t.Logf("%s master: %v per SET NX (node_timeout %v)", mode, per, cfg.NodeTimeout)
			if per > cfg.NodeTimeout/10 {
				t.Errorf("%v per SET NX with a %s master; want under a tenth of node_timeout (%v)", per, mode, cfg.NodeTimeout)
			}
			if f := nodeInfo(t, p.Client, 2); f["last_error"] == "" {
				t.Errorf("node2 = %v; want its last error", f)
			}
		})
	}
}

func TestMembershipRecordIsReserved(t *testing.T) {
	c := startNodes(t, 3)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	err := p.Client.SetNX(t.Context(), quorum.MembersKey, "t", time.Second).Err()
	if err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("SET NX %s = %v; want it refused as reserved", quorum.MembersKey, err)
	}
}

// TestBinaryRefusesReplicaAtStart: the real binary exits at start, naming
// the replica and why, before it serves anyone.
func TestBinaryRefusesReplicaAtStart(t *testing.T) {
	bin := buildProxyBinary(t)
	m := startRedis(t)
	_, port, _ := net.SplitHostPort(m.Addr)
	r := startRedis(t, "--replicaof", "127.0.0.1", port)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))),
		"-nodes", strings.Join([]string{m.Addr, r.Addr, startRedis(t).Addr}, ","))
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("redlock-proxy over a replica exited 0; want a refusal:\n%s", out)
	}
	if want := "node 1 (" + r.Addr + ") refused: role is slave"; !strings.Contains(string(out), want) {
		t.Errorf("redlock-proxy output:\n%s\nwant it to say %q", out, want)
	}
}

func TestFlushedMasterIsQuarantined(t *testing.T) {
	c := startNodes(t, 3)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	time.Sleep(300 * time.Millisecond) // a few probes have seen node1's record
	if err := c.direct[1].FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	f := waitState(t, p.Client, 1, "quarantined", 5*time.Second)
	if !strings.HasPrefix(f["reason"], "data lost") {
		t.Errorf("node1 = %v; want reason data lost", f)
	}
}

// A master that died while no request used it, and came back, counts at
// once: the proxy's connection to the dead process is not reused.
func TestMasterBackCountsAtOnce(t *testing.T) {
	c := startNodes(t, 3)
	cfg := safetyConfig()
	p := mustStartMonitored(t, cfg, c.addrs...)
	// A lock cycle opens the proxy's connection to every node.
	if err := p.Client.SetNX(t.Context(), "warm", "t", time.Second).Err(); err != nil {
		t.Fatalf("SET NX: %v", err)
	}
	c.kill(0)
	waitState(t, p.Client, 0, "down", 5*time.Second) // seen by a probe, no request
	c.procs[0] = restartRedis(t, c.procs[0])
	c.killed[0] = false
	waitState(t, p.Client, 0, "up", cfg.MaxTTL+5*time.Second)
	downs := nodeInfo(t, p.Client, 0)["downs"]

	if err := p.Client.SetNX(t.Context(), "back", "t", time.Second).Err(); err != nil {
		t.Fatalf("SET NX with every master back: %v", err)
	}
	if v, ok := c.value(t, 0, "back"); !ok || v != "t" {
		t.Errorf("node0 holds back = %q, %v; want t: its grant should have counted", v, ok)
	}
	if f := nodeInfo(t, p.Client, 0); f["state"] != "up" || f["downs"] != downs {
		t.Errorf("node0 after the SET = %v; want up, downs still %s", f, downs)
	}
}

// fsyncAlways are the options of a master that syncs every write.
var fsyncAlways = []string{"--appendonly", "yes", "--appendfsync", "always"}

// startNodesFsyncFirst starts three masters, the first with appendonly
// yes and appendfsync always.
func startNodesFsyncFirst(t *testing.T) *cluster {
	t.Helper()
	return startNodesFirstWith(t, fsyncAlways...)
}

// startNodesFirstWith starts three masters, the first with options first.
func startNodesFirstWith(t *testing.T, first ...string) *cluster {
	t.Helper()
	c := &cluster{killed: map[int]bool{}}
	for i := range 3 {
		var extra []string
		if i == 0 {
			extra = first
		}
		pr := startRedis(t, extra...)
		c.procs, c.addrs = append(c.procs, pr), append(c.addrs, pr.Addr)
		c.direct = append(c.direct, direct(t, pr.Addr))
	}
	return c
}
