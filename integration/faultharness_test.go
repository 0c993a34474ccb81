package integration

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

var faultSeed = flag.Uint64("fault.seed", 0, "seed of the fault scenarios; 0 picks one (also FAULT_SEED)")

// seedFor returns the seed of a scenario and logs it, so a failure can be
// replayed with -fault.seed.
func seedFor(t *testing.T) uint64 {
	t.Helper()
	seed := *faultSeed
	if s := os.Getenv("FAULT_SEED"); seed == 0 && s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -fault.seed %d)", seed, seed)
	return seed
}

// Settings of the proxies the scenarios start. The node timeout leaves
// room for a loaded machine; max_ttl is short so that quarantines fit the
// time budget.
const (
	faultNodeTimeout = 100 * time.Millisecond
	faultMaxTTL      = 2 * time.Second
	faultTTL         = 500 * time.Millisecond // the workload's TTL
)

// master is one redis-server behind an in-process toxiproxy. The proxy
// under test reaches it through tox; the checkers read it directly.
type master struct {
	i      int
	port   int
	proc   *redisProc
	tox    *toxiproxy.Proxy
	direct *redis.Client // bypasses tox, with short timeouts
	mu     sync.Mutex
	faults map[string]int // open fault name -> its op index in the history
}

// faultCluster is n masters behind fault injectors, a resource
// redis-server that is never faulted, and a history of everything.
type faultCluster struct {
	t        *testing.T
	h        *history
	masters  []*master
	resource *redis.Client
}

// startFaultCluster starts n masters, each behind its own toxiproxy, and
// the resource server.
func startFaultCluster(t *testing.T, n int) *faultCluster {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	fc := &faultCluster{t: t, h: newHistory()}
	for i := range n {
		p := startRedis(t)
		m := &master{i: i, proc: p, port: p.Port, faults: map[string]int{}}
		m.tox = toxiproxy.NewProxy(srv, fmt.Sprintf("master%d", i), "127.0.0.1:0", p.Addr)
		if err := m.tox.Start(); err != nil {
			t.Fatalf("start toxiproxy for %s: %v", p.Addr, err)
		}
		t.Cleanup(m.tox.Stop)
		m.direct = newClient(t, p.Addr, func(o *redis.Options) {
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
		})
		fc.masters = append(fc.masters, m)
	}
	fc.resource = newClient(t, startRedis(t).Addr, nil)
	return fc
}

// addrs returns the masters' addresses as the proxy sees them.
func (fc *faultCluster) addrs() []string {
	var a []string
	for _, m := range fc.masters {
		a = append(a, m.tox.Listen)
	}
	return a
}

// toxic adds a toxic named name on master i and records a fault.
func (fc *faultCluster) toxic(i int, name, typ, stream string, attrs string) {
	fc.toxicSome(i, name, typ, stream, attrs, 1)
}

// toxicSome is toxic on a share of the connections, chosen as each opens.
func (fc *faultCluster) toxicSome(i int, name, typ, stream string, attrs string, share float64) {
	fc.t.Helper()
	m := fc.masters[i]
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":%v,"attributes":{%s}}`, name, typ, stream, share, attrs)
	if _, err := m.tox.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		fc.t.Fatalf("master %d: add toxic %s: %v", i, body, err)
	}
	m.begin(fc.h, name)
}

// blackhole drops everything sent to master i: nothing it is asked lands.
func (fc *faultCluster) blackhole(i int) {
	fc.toxic(i, "blackhole", "timeout", "upstream", `"timeout":0`)
}

// loseReplies passes requests to master i but drops its replies: writes
// land and nobody hears of it.
func (fc *faultCluster) loseReplies(i int) {
	fc.toxic(i, "lose-replies", "timeout", "downstream", `"timeout":0`)
}

// slow delays every reply of master i by d.
func (fc *faultCluster) slow(i int, d time.Duration) {
	fc.toxic(i, "slow", "latency", "downstream", fmt.Sprintf(`"latency":%d`, d.Milliseconds()))
}

// heal removes every toxic from master i.
func (fc *faultCluster) heal(i int) {
	fc.t.Helper()
	m := fc.masters[i]
	for _, name := range []string{"blackhole", "lose-replies", "slow"} {
		if m.tox.Toxics.GetToxic(name) == nil {
			continue
		}
		if err := m.tox.Toxics.RemoveToxic(context.Background(), name); err != nil {
			fc.t.Fatalf("master %d: remove toxic %s: %v", i, name, err)
		}
		m.end(fc.h, name)
	}
}

// kill crashes master i (SIGKILL). It stays down until restart.
func (fc *faultCluster) kill(i int) {
	m := fc.masters[i]
	m.begin(fc.h, "kill")
	m.proc.Kill()
}

// restart starts master i again on the same port, empty: a restart
// without persistence. It first kills the running one, if any.
func (fc *faultCluster) restart(i int) {
	fc.t.Helper()
	m := fc.masters[i]
	if m.open("kill") < 0 {
		m.begin(fc.h, "kill")
	}
	m.proc.Kill()
	var err error
	for attempt := 0; attempt < 50; attempt++ { // the port may linger a moment
		if m.proc, err = redistest.StartOn(fc.t, m.port, fc.t.TempDir()); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		fc.t.Fatalf("restart master %d on port %d: %v", i, m.port, err)
	}
	m.end(fc.h, "kill")
}

// flushAll deletes every key on master i (FLUSHALL), in place: the same
// process, with its locks and the proxies' membership record gone.
func (fc *faultCluster) flushAll(i int) {
	fc.t.Helper()
	m := fc.masters[i]
	m.begin(fc.h, "flushall")
	if err := m.direct.FlushAll(context.Background()).Err(); err != nil {
		fc.t.Fatalf("FLUSHALL master %d: %v", i, err)
	}
	m.end(fc.h, "flushall")
}

// freeze stops master i (SIGSTOP); thaw resumes it.
func (fc *faultCluster) freeze(i int) {
	m := fc.masters[i]
	m.begin(fc.h, "freeze")
	m.proc.Freeze(fc.t)
}

func (fc *faultCluster) thaw(i int) {
	m := fc.masters[i]
	m.proc.Thaw()
	m.end(fc.h, "freeze")
}

func (m *master) begin(h *history, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.faults[name] = h.faultBegin(m.i, name)
}

func (m *master) end(h *history, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx, ok := m.faults[name]; ok {
		h.faultEnd(idx)
		delete(m.faults, name)
	}
}

func (m *master) open(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idx, ok := m.faults[name]; ok {
		return idx
	}
	return -1
}

// proxySub is the redlock-proxy binary run as a subprocess, so that it
// can be killed and paused.
type proxySub struct {
	t      *testing.T
	h      *history // if set, outages are recorded in it
	outage int      // the open outage's op index, or -1
	bin    string
	env    []string
	config string
	Addr   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// proxyOpts are the settings a scenario may change; zero means the
// normal build with the fault suite's defaults.
type proxyOpts struct {
	bin         string   // the binary; default the normal build
	env         []string // added to the environment, e.g. REDLOCK_PROXY_BROKEN=quorum1
	nodeTimeout time.Duration
	minTTL      time.Duration
	driftFactor float64       // default 0.01
	ttl         time.Duration // the workload's TTL; default faultTTL
	probe       time.Duration // probe_interval; default 100ms
	// families names the lock families the workload's keys are locked
	// by, in turn (faultfamily_test.go); default SET NX alone.
	families []string
	// latchKeys is latch_keys (faultlatch_test.go); default none.
	latchKeys []string
}

// defaults fills in the zero fields of po.
func (po *proxyOpts) defaults(t testing.TB) {
	if po.bin == "" {
		po.bin = buildProxyBinary(t)
	}
	if po.nodeTimeout == 0 {
		po.nodeTimeout = faultNodeTimeout
	}
	if po.minTTL == 0 {
		po.minTTL = 2 * po.nodeTimeout
	}
	if po.driftFactor == 0 {
		po.driftFactor = 0.01
	}
	if po.ttl == 0 {
		po.ttl = faultTTL
	}
	if po.probe == 0 {
		po.probe = 100 * time.Millisecond
	}
}

// drift is the proxy's drift allowance for ttl.
func (po *proxyOpts) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*po.driftFactor) + 2*time.Millisecond
}

// startProxySub writes a config for the masters to a temp dir and runs
// the proxy over them.
func startProxySub(t *testing.T, masters []string, po proxyOpts) *proxySub {
	t.Helper()
	po.defaults(t)
	dir := t.TempDir()
	ps := &proxySub{t: t, bin: po.bin, env: po.env, config: filepath.Join(dir, "config.toml"), outage: -1}
	ps.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	cfg := fmt.Sprintf(`listen = %q
nodes = ["%s"]
node_timeout = "%v"
min_ttl = "%v"
max_ttl = "%v"
drift_factor = %v
probe_interval = "%v"
command_timeout = "1s"
log_level = "error"
`, ps.Addr, strings.Join(masters, `", "`), po.nodeTimeout, po.minTTL, faultMaxTTL, po.driftFactor, po.probe)
	if len(po.latchKeys) > 0 {
		cfg += fmt.Sprintf("latch_keys = [\"%s\"]\n", strings.Join(po.latchKeys, `", "`))
	}
	if err := os.WriteFile(ps.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ps.start()
	return ps
}

// start runs the process on ps.Addr and waits until it serves.
func (ps *proxySub) start() {
	ps.t.Helper()
	logs := newLogWriter(ps.t)
	for attempt := 1; ; attempt++ {
		ps.cmd = exec.Command(ps.bin, "-config", ps.config)
		ps.cmd.Dir = filepath.Dir(ps.config)
		ps.cmd.Env = append(os.Environ(), ps.env...)
		ps.cmd.Stdout, ps.cmd.Stderr = logs, logs
		if err := ps.cmd.Start(); err != nil {
			ps.t.Fatalf("start %s: %v", ps.bin, err)
		}
		exited := make(chan struct{})
		ps.exited = exited
		cmd := ps.cmd
		go func() { // waited for through exited
			cmd.Wait()
			close(exited)
		}()
		ps.t.Cleanup(func() {
			cmd.Process.Signal(syscall.SIGCONT)
			cmd.Process.Kill()
			<-exited
		})
		b := &binProc{Addr: ps.Addr, cmd: cmd, exited: exited}
		if b.waitServing(10 * time.Second) {
			ps.outageEnd()
			return
		}
		if attempt == 3 {
			ps.t.Fatalf("redlock-proxy did not serve on %s within 10s", ps.Addr)
		}
		time.Sleep(200 * time.Millisecond) // the old port may be in use a moment
	}
}

// kill crashes the proxy (SIGKILL). It is out until start.
func (ps *proxySub) kill() {
	ps.outageBegin()
	ps.cmd.Process.Kill()
	<-ps.exited
}

// freeze stops the proxy (SIGSTOP); thaw resumes it.
func (ps *proxySub) freeze() {
	ps.outageBegin()
	ps.cmd.Process.Signal(syscall.SIGSTOP)
}

func (ps *proxySub) thaw() {
	ps.cmd.Process.Signal(syscall.SIGCONT)
	ps.outageEnd()
}

func (ps *proxySub) outageBegin() {
	if ps.h != nil && ps.outage < 0 {
		ps.outage = ps.h.faultBegin(-1, proxyOutage)
	}
}

func (ps *proxySub) outageEnd() {
	if ps.h != nil && ps.outage >= 0 {
		ps.h.faultEnd(ps.outage)
		ps.outage = -1
	}
}

var (
	brokenOnce sync.Once
	brokenPath string
	brokenErr  error
)

// buildBrokenBinary builds the proxy with the brokenbuild tag, whose
// REDLOCK_PROXY_BROKEN switch breaks it on purpose, and returns its path.
func buildBrokenBinary(t testing.TB) string {
	t.Helper()
	skipLong(t)                              // only the negative controls of the fault suite use it
	dir := filepath.Dir(buildProxyBinary(t)) // removed by TestMain
	brokenOnce.Do(func() {
		brokenPath = filepath.Join(dir, "redlock-proxy-broken")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "brokenbuild", "-o", brokenPath, ".")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			brokenErr = fmt.Errorf("go build -tags brokenbuild: %v\n%s", err, out)
		}
	})
	if brokenErr != nil {
		t.Fatal(brokenErr)
	}
	return brokenPath
}

// infoWatcher polls the INFO of one proxy and records, as a fault on a
// master, every time the proxy does not count that master as up (down,
// quarantined, unverified, refused): to the proxy the master is then
// unreachable, as if faulted, and checker (d) must leave it out. A down
// spell shorter than the poll interval shows only in the master's downs
// counter: it is recorded as a fault over the whole interval, from the
// sending of the poll before.
type infoWatcher struct {
	fc    *faultCluster
	k     int
	rdb   *redis.Client
	state []string      // each master's state at the last poll
	downs []string      // each master's downs counter at the last poll
	sent  time.Duration // when the last poll that read INFO was sent
}

func (fc *faultCluster) newWatcher(k int, ps *proxySub) *infoWatcher {
	return &infoWatcher{
		fc: fc, k: k,
		rdb: newClient(fc.t, ps.Addr, func(o *redis.Options) {
			o.PoolSize = 1
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
		}),
		state: make([]string, len(fc.masters)),
		downs: make([]string, len(fc.masters)),
		sent:  fc.h.now(),
	}
}

// run polls every 20ms until ctx ends.
func (w *infoWatcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.poll(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// poll reads INFO once and records what changed since the last poll. It
// returns the number of down spells it recorded.
func (w *infoWatcher) poll(ctx context.Context) (spells int, err error) {
	fc, k := w.fc, w.k
	sent := fc.h.now()
	info, err := w.rdb.Info(ctx).Result()
	if err != nil {
		return 0, err
	}
	now := fc.h.now()
	for _, line := range strings.Split(info, "\r\n") {
		var i int
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "node") {
			continue
		}
		if _, err := fmt.Sscanf(name, "node%d", &i); err != nil || i >= len(fc.masters) {
			continue
		}
		st, n := "", ""
		for _, f := range strings.Split(fields, ",") {
			if v, ok := strings.CutPrefix(f, "state="); ok {
				st = v
			}
			if v, ok := strings.CutPrefix(f, "downs="); ok {
				n = v
			}
		}
		if w.downs[i] != "" && n != w.downs[i] {
			// The last poll's reply was written after it was sent, so
			// the spell began after that.
			fc.h.faultSpan(i, fmt.Sprintf("proxy%d-down-spell", k), w.sent, now)
			spells++
		}
		w.downs[i] = n
		if st == w.state[i] {
			continue
		}
		m := fc.masters[i]
		if w.state[i] != "" && w.state[i] != "up" {
			m.end(fc.h, fmt.Sprintf("proxy%d-%s", k, w.state[i]))
		}
		if st != "up" {
			m.begin(fc.h, fmt.Sprintf("proxy%d-%s", k, st))
		}
		w.state[i] = st
	}
	w.sent = sent
	return spells, nil
}

// waitAllUp waits until proxy ps reports every master up in INFO.
func (fc *faultCluster) waitAllUp(ps *proxySub, limit time.Duration) {
	fc.t.Helper()
	rdb := proxyClient(fc.t, ps.Addr)
	deadline := time.Now().Add(limit)
	for {
		info, err := rdb.Info(context.Background()).Result()
		if err == nil && strings.Count(info, ",state=up,") == len(fc.masters) {
			return
		}
		if time.Now().After(deadline) {
			fc.t.Fatalf("proxy %s does not report every master up within %v: %v\n%s", ps.Addr, limit, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
