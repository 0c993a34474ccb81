package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/metrics"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// opsProc is the real binary run with a config file, its admin listener
// on, and its log kept for the test to read.
type opsProc struct {
	Addr, Admin string
	cmd         *exec.Cmd
	cfgPath     string
	exited      chan struct{}
	log         *syncBuffer
}

// syncBuffer is the process's log, written by exec's copier and read by
// the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	out io.Writer // also sent here (the test log)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf.Write(p)
	b.mu.Unlock()
	return b.out.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startOps runs the binary over masters with cfg (TOML lines without
// listen, admin_listen and nodes, which it adds) and waits until it
// serves. It is stopped, if still running, when the test ends.
func startOps(t *testing.T, masters []string, cfg string) *opsProc {
	t.Helper()
	bin := buildProxyBinary(t)
	dir := t.TempDir()
	for attempt := 1; ; attempt++ {
		p := &opsProc{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))),
			Admin:   net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t))),
			cfgPath: filepath.Join(dir, "config.toml"),
			exited:  make(chan struct{}),
			log:     &syncBuffer{out: newLogWriter(t)},
		}
		p.writeConfig(t, masters, cfg)
		p.cmd = exec.Command(bin, "-config", p.cfgPath)
		p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", bin, err)
		}
		go func() { // waited for through exited, by the test or the cleanup
			p.cmd.Wait()
			close(p.exited)
		}()
		t.Cleanup(func() {
			p.cmd.Process.Kill()
			<-p.exited
		})
		if p.waitServing(10 * time.Second) {
			return p
		}
		if attempt == 3 {
			t.Fatalf("redlock-proxy did not serve on %s and %s within 10s", p.Addr, p.Admin)
		}
	}
}

// writeConfig (re)writes the process's config file.
func (p *opsProc) writeConfig(t *testing.T, masters []string, cfg string) {
	t.Helper()
	text := fmt.Sprintf("listen = %q\nadmin_listen = %q\nnodes = [\"%s\"]\n%s\n", p.Addr, p.Admin, strings.Join(masters, `", "`), cfg)
	if err := os.WriteFile(p.cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (p *opsProc) waitServing(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if redistest.Ping(p.Addr) == nil {
			if c, err := net.Dial("tcp", p.Admin); err == nil {
				c.Close()
				return true
			}
		}
		select {
		case <-p.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.cmd.Process.Kill()
	<-p.exited
	return false
}

// get fetches path from the admin listener and returns its status and body.
func (p *opsProc) get(t *testing.T, path string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Get("http://" + p.Admin + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return res.StatusCode, string(b)
}

// scrape returns /metrics parsed, and its text.
func (p *opsProc) scrape(t *testing.T) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := p.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", code)
	}
	var parser expfmt.TextParser
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams, body
}

// metric sums the series of fam whose labels include the given pairs: a
// counter's or gauge's value, a histogram's sample count.
func metric(fams map[string]*dto.MetricFamily, fam string, labels ...string) float64 {
	sum := 0.0
	f, ok := fams[fam]
	if !ok {
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// readyz is /readyz's status and body.
type readyBody struct {
	Ready, Draining bool
	Up, Quorum      int
	Nodes           []struct{ Addr, State, Reason string }
}

func (p *opsProc) readyz(t *testing.T) (int, readyBody) {
	t.Helper()
	code, body := p.get(t, "/readyz")
	var rb readyBody
	if err := json.Unmarshal([]byte(body), &rb); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	return code, rb
}

// waitReady polls /readyz until it answers want, or fails after timeout.
func (p *opsProc) waitReady(t *testing.T, want int, timeout time.Duration) readyBody {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, rb := p.readyz(t)
		if code == want {
			return rb
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %+v for %v; want %d", code, rb, timeout, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// promtool runs promtool check metrics over a scrape's text.
func promtool(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed (Debian package prometheus)")
		}
		t.Skip("promtool not on PATH")
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// Metrics move as locks are taken and masters die; /readyz turns 503 when
// 3 of 5 masters are killed and 200 again once they are back and out of
// their restart quarantine; a real scrape passes promtool.
func TestBinaryMetricsAndReadiness(t *testing.T) {
	c := startNodes(t, 5)
	p := startOps(t, c.addrs, `node_timeout = "20ms"
min_ttl = "100ms"
max_ttl = "2s"
probe_interval = "100ms"`)
	if code, body := p.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d %q; want 200", code, body)
	}
	rb := p.waitReady(t, http.StatusOK, 5*time.Second)
	if rb.Up != 5 || rb.Quorum != 3 || rb.Draining {
		t.Errorf("/readyz over 5 healthy masters = %+v; want up 5, quorum 3, not draining", rb)
	}

	cl := newClient(t, p.Addr, nil)
	ctx := t.Context()
	for i := range 3 {
		if err := cl.SetNX(ctx, "m"+strconv.Itoa(i), "tok", 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("SET m%d: %v", i, err)
		}
	}
	if ok, err := cl.SetNX(ctx, "m0", "other", 1500*time.Millisecond).Result(); err != nil || ok {
		t.Fatalf("SET m0 again = %v, %v; want nil (taken)", ok, err)
	}
	if n, err := cl.Eval(ctx, distlockRelease, []string{"m0"}, "tok").Int(); err != nil || n != 1 {
		t.Fatalf("release m0 = %v, %v; want 1", n, err)
	}
	if err := cl.Get(ctx, "m1").Err(); err != nil {
		t.Fatalf("GET m1: %v", err)
	}
	if err := cl.Do(ctx, "SET", "m9", "tok", "NX", "PX", "999999999").Err(); err == nil {
		t.Fatalf("SET over max_ttl succeeded")
	}

	fams, text := p.scrape(t)
	promtool(t, text)
	tests := []struct {
		fam    string
		labels []string
		want   float64
	}{
		{"redlock_proxy_operations_total", []string{"op", "acquire", "outcome", "granted"}, 3},
		{"redlock_proxy_operations_total", []string{"op", "acquire", "outcome", "denied"}, 1},
		{"redlock_proxy_operations_total", []string{"op", "acquire", "outcome", "refused"}, 1},
		{"redlock_proxy_operations_total", []string{"op", "release", "outcome", "granted"}, 1},
		{"redlock_proxy_operations_total", []string{"op", "read", "outcome", "granted"}, 1},
		{"redlock_proxy_operation_duration_seconds", []string{"op", "acquire"}, 4},
		{"redlock_proxy_validity_ratio", nil, 3},
		{"redlock_proxy_node_state", []string{"state", "up"}, 5},
		{"redlock_proxy_clients_connected", nil, 1},
		{"redlock_proxy_build_info", nil, 1},
	}
	for _, tt := range tests {
		if got := metric(fams, tt.fam, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v; want %v", tt.fam, tt.labels, got, tt.want)
		}
	}
	// Every node answered each of the 4 acquires, the release and the read.
	for _, a := range c.addrs {
		if got := metric(fams, "redlock_proxy_node_request_duration_seconds", "node", a); got != 6 {
			t.Errorf("node_request_duration_seconds{node=%s} count = %v; want 6", a, got)
		}
	}

	// Three of five masters die: not ready, and acquires fail as no_quorum.
	for _, i := range []int{0, 1, 2} {
		c.kill(i)
	}
	for n := 0; n < 5; n++ { // the breaker opens on the request path too
		cl.SetNX(ctx, "dead"+strconv.Itoa(n), "tok", time.Second)
	}
	rb = p.waitReady(t, http.StatusServiceUnavailable, 5*time.Second)
	if rb.Ready || rb.Up > 2 {
		t.Errorf("/readyz with 3 of 5 masters dead = %+v; want not ready, at most 2 up", rb)
	}
	err := cl.SetNX(ctx, "dead", "tok", time.Second).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
		t.Errorf("SET with 3 of 5 masters dead = %v; want NOQUORUM", err)
	}
	fams, _ = p.scrape(t)
	if got := metric(fams, "redlock_proxy_operations_total", "op", "acquire", "outcome", "no_quorum"); got < 6 {
		t.Errorf("acquire no_quorum = %v; want at least 6", got)
	}
	for _, i := range []int{0, 1, 2} {
		a := c.addrs[i]
		if got := metric(fams, "redlock_proxy_node_state", "node", a, "state", "down"); got != 1 {
			t.Errorf("node_state{node=%s,state=down} = %v; want 1", a, got)
		}
		if got := metric(fams, "redlock_proxy_node_errors_total", "node", a); got < 1 {
			t.Errorf("node_errors_total{node=%s} = %v; want at least 1", a, got)
		}
	}
	if got := metric(fams, "redlock_proxy_node_state", "state", "up"); got != 2 {
		t.Errorf("node_state{state=up} summed = %v; want 2", got)
	}

	// They return empty: quarantined for max_ttl (2s), then ready again.
	restarted := time.Now()
	for _, i := range []int{0, 1, 2} {
		c.procs[i] = restartRedis(t, c.procs[i])
		c.killed[i] = false
	}
	// Ready again once a quorum is up: the two survivors and at least
	// one restarted master out of its quarantine.
	rb = p.waitReady(t, http.StatusOK, 15*time.Second)
	if took := time.Since(restarted); took < 2*time.Second {
		t.Errorf("/readyz was 200 %v after 3 masters restarted empty; want their quarantine (max_ttl 2s) first", took)
	}
	for deadline := time.Now().Add(10 * time.Second); rb.Up < 5; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz 10s after ready = %+v; want all 5 up", rb)
		}
		_, rb = p.readyz(t)
	}
	fams, text = p.scrape(t)
	if got := metric(fams, "redlock_proxy_node_quarantines_total", "reason", "restart"); got < 3 {
		t.Errorf("node_quarantines_total{reason=restart} = %v; want at least 3", got)
	}
	promtool(t, text)
	if err := cl.SetNX(ctx, "back", "tok", time.Second).Err(); err != nil {
		t.Errorf("SET after the masters returned: %v", err)
	}
}

// On SIGTERM, 32 clients busy taking and releasing locks each get a reply
// or a DRAINING error, never a cut connection; /readyz turns 503 at once;
// holders still release during shutdown_grace; the process then exits 0,
// and no lock is left on any master.
func TestBinaryDrainsOnSIGTERM(t *testing.T) {
	c := startNodes(t, 3)
	// The default node_timeout (50ms) is an outage to 32 clients on a
	// loaded machine: NOQUORUM replies and the breaker opening on every
	// master. This test is about the drain, so the masters must stay up.
	p := startOps(t, c.addrs, `shutdown_grace = "1500ms"
node_timeout = "1s"
min_ttl = "2s"`)
	p.waitReady(t, http.StatusOK, 5*time.Second)

	const clients = 32
	type tally struct {
		granted, taken, draining, released int
		other                              []string // any other error
	}
	var (
		mu      sync.Mutex
		total   tally
		started sync.WaitGroup
		wg      sync.WaitGroup
	)
	started.Add(clients)
	for w := range clients {
		cl := newClient(t, p.Addr, func(o *redis.Options) { o.PoolSize = 1; o.MaxRetries = -1 })
		wg.Go(func() {
			var mine tally
			defer func() {
				mu.Lock()
				total.granted += mine.granted
				total.taken += mine.taken
				total.draining += mine.draining
				total.released += mine.released
				total.other = append(total.other, mine.other...)
				mu.Unlock()
			}()
			first := true
			for n := 0; n < 100000; n++ {
				key, tok := fmt.Sprintf("drain:%d:%d", w, n), fmt.Sprintf("t%d-%d", w, n)
				ok, err := cl.SetNX(t.Context(), key, tok, 10*time.Second).Result()
				if first {
					started.Done()
					first = false
				}
				switch {
				case err != nil && strings.HasPrefix(err.Error(), "DRAINING "):
					mine.draining++
					return
				case err != nil:
					mine.other = append(mine.other, "acquire: "+err.Error())
					return
				case !ok:
					mine.taken++
					continue
				}
				mine.granted++
				time.Sleep(5 * time.Millisecond) // the work under the lock
				rel, err := cl.Eval(t.Context(), distlockRelease, []string{key}, tok).Int()
				if err != nil || rel != 1 {
					mine.other = append(mine.other, fmt.Sprintf("release %s: %v, %v", key, rel, err))
					return
				}
				mine.released++
			}
		})
	}
	started.Wait()
	time.Sleep(200 * time.Millisecond) // every client is mid-cycle
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// At once: well within the grace, while the masters are all up.
	if rb := p.waitReady(t, http.StatusServiceUnavailable, time.Second); !rb.Draining || rb.Up != 3 {
		t.Errorf("/readyz after SIGTERM = %+v; want draining with every master up", rb)
	}
	wg.Wait()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("redlock-proxy still running 10s after SIGTERM")
	}
	exitAfter := time.Since(signalled)
	if !p.cmd.ProcessState.Success() {
		t.Errorf("redlock-proxy exited with %v; want 0", p.cmd.ProcessState)
	}
	if exitAfter < 1500*time.Millisecond {
		t.Errorf("redlock-proxy exited %v after SIGTERM; want after shutdown_grace (1.5s)", exitAfter)
	}
	t.Logf("granted %d, released %d, taken %d, DRAINING %d, exit %v after SIGTERM", total.granted, total.released, total.taken, total.draining, exitAfter)
	if len(total.other) > 0 {
		t.Errorf("%d clients got something other than a reply or DRAINING: %q", len(total.other), total.other)
	}
	if total.draining != clients {
		t.Errorf("%d of %d clients were told DRAINING; want all", total.draining, clients)
	}
	if total.granted != total.released {
		t.Errorf("granted %d locks, released %d; want every grant released by its holder", total.granted, total.released)
	}
	// No lock is left: no key is held by a quorum of masters. A key left
	// on one master alone is the documented cost of a breaker that opened
	// on an overloaded machine (the release skipped that master; the key
	// ends with its TTL), logged here, never a lock.
	holders := map[string]int{}
	for i, d := range c.direct {
		keys, err := d.Keys(t.Context(), "drain:*").Result()
		if err != nil {
			t.Fatalf("node %d KEYS: %v", i, err)
		}
		for _, k := range keys {
			holders[k]++
		}
		if len(keys) > 0 {
			t.Logf("node %d still holds %d lock keys after the drain (a minority copy unless another node holds them too): %q", i, len(keys), keys[:min(5, len(keys))])
		}
	}
	for k, n := range holders {
		if n >= 2 {
			t.Errorf("%s is still held by %d of 3 masters after the drain: a lock left behind", k, n)
		}
	}
	if !strings.Contains(p.log.String(), "msg=draining") {
		t.Errorf("no draining line in the log")
	}
}

// SIGHUP applies log_level and max_clients at once, and refuses a changed
// node_timeout with a log line naming it, keeping the running value.
func TestBinaryReloadsOnSIGHUP(t *testing.T) {
	c := startNodes(t, 3)
	base := `node_timeout = "50ms"
log_level = "info"
`
	p := startOps(t, c.addrs, base+"max_clients = 2\n")
	a, b := newClient(t, p.Addr, func(o *redis.Options) { o.PoolSize = 1 }), newClient(t, p.Addr, func(o *redis.Options) { o.PoolSize = 1 })
	for _, cl := range []*redis.Client{a, b} {
		// The start's readiness PING closed its connection; until the
		// proxy has seen that close, it counts towards max_clients.
		var err error
		for range 40 {
			if err = cl.Ping(t.Context()).Err(); err == nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("PING: %v", err)
		}
	}
	if got := firstLine(t, p.Addr); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("third client at max_clients 2 got %q; want max number of clients reached", got)
	}

	p.writeConfig(t, c.addrs, `node_timeout = "20ms"
log_level = "debug"
max_clients = 3
`)
	reloads := strings.Count(p.log.String(), "msg=\"config reloaded\"")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=\"config reloaded\"", reloads+1)
	logText := p.log.String()
	if !strings.Contains(logText, `key=node_timeout running=50ms file=20ms`) {
		t.Errorf("log after SIGHUP with node_timeout changed lacks the refusal naming node_timeout:\n%s", logText)
	}
	third := newClient(t, p.Addr, func(o *redis.Options) { o.PoolSize = 1; o.MaxRetries = -1 })
	if err := third.Ping(t.Context()).Err(); err != nil {
		t.Errorf("third client after max_clients 3 was reloaded: %v", err)
	}
	// log_level debug: each command is logged now.
	before := strings.Count(p.log.String(), "msg=command")
	if err := a.Echo(t.Context(), "hello").Err(); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=command", before+1)

	// The running node_timeout stays 50ms: a second SIGHUP still names it.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=\"config reloaded\"", reloads+2)
	if n := strings.Count(p.log.String(), `key=node_timeout running=50ms file=20ms`); n != 2 {
		t.Errorf("refusals of node_timeout after two SIGHUPs = %d; want 2 (the running value kept)", n)
	}

	// A config that fails validation changes nothing.
	p.writeConfig(t, c.addrs, base+"max_clients = -1\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, p, "msg=\"reload refused; the running config stays\"", 1)
	if err := a.Ping(t.Context()).Err(); err != nil {
		t.Errorf("PING after a refused reload: %v", err)
	}
}

// firstLine connects to addr and returns the first line the server sends
// unasked (a refusal), or "" if none comes within a second.
func firstLine(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// waitLog waits until the process's log holds at least n lines with s.
func waitLog(t *testing.T, p *opsProc, s string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for strings.Count(p.log.String(), s) < n {
		if time.Now().After(deadline) {
			t.Fatalf("log has %d lines with %q after 5s; want %d:\n%s", strings.Count(p.log.String(), s), s, n, p.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// While draining, a script served by its effect (Redisson's lock) that
// would take a new lock gets DRAINING and leaves nothing on the masters;
// the holder's re-entry and renewal of a lock taken before, and its
// unlock, are served.
func TestDrainRefusesNewLocksOfEffectScripts(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	cl := newClient(t, p.Addr, nil)
	lock, renew := redis.NewScript(redissonLock), redis.NewScript(redissonRenew)
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
	if err := lock.Run(ctx, cl, []string{"held"}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("lock before the drain: %v; want nil (acquired)", err)
	}
	p.Server.Drain()
	err := lock.Run(ctx, cl, []string{"new"}, 30000, owner).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "DRAINING ") {
		t.Errorf("lock of a free key while draining: %v; want DRAINING", err)
	}
	for i := range c.direct {
		if n := c.direct[i].Exists(ctx, "new").Val(); n != 0 {
			t.Errorf("node %d holds the lock refused while draining", i)
		}
	}
	if err := lock.Run(ctx, cl, []string{"held"}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
		t.Errorf("re-entry of a lock held before the drain: %v; want nil (served)", err)
	}
	if n, err := renew.Run(ctx, cl, []string{"held"}, 30000, owner).Int(); err != nil || n != 1 {
		t.Errorf("renewal while draining = %d, %v; want 1", n, err)
	}
}

// Real clients surface DRAINING as an error, never as "taken": redis-py's
// Lock raises ResponseError from acquire, and redis-cli prints the error
// text; both release a lock taken before the drain.
func TestDrainingIsAnErrorToClients(t *testing.T) {
	py := needTool(t, systemPython)
	cli := needTool(t, "redis-cli")
	c, p := setup(t, 3, proxy.Config{})
	host, port, _ := net.SplitHostPort(p.Addr)
	if err := p.Client.SetNX(t.Context(), "before", "tok", 10*time.Second).Err(); err != nil {
		t.Fatalf("SET NX before the drain: %v", err)
	}
	p.Server.Drain()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	script := `
import sys, redis
r = redis.Redis(host=sys.argv[1], port=int(sys.argv[2]))
try:
    got = r.lock("new", timeout=10).acquire(blocking=False)
    print("acquire returned", got)
except redis.exceptions.ResponseError as e:
    print("ResponseError", str(e).split()[0])
print("release", r.eval('if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end', 1, "before", "tok"))
`
	out, err := exec.CommandContext(ctx, py, "-c", script, host, port).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-py: %v\n%s", err, out)
	}
	if got := string(out); got != "ResponseError DRAINING\nrelease 1\n" {
		t.Errorf("redis-py while draining printed %q; want a ResponseError DRAINING from acquire, then release 1", got)
	}
	out, err = exec.CommandContext(ctx, cli, "-h", host, "-p", port, "SET", "new2", "tok", "NX", "PX", "10000").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "DRAINING ") {
		t.Errorf("redis-cli SET NX while draining = %q, %v; want the DRAINING error text", out, err)
	}
	c.wantFreeEverywhere(t, "new")
	c.wantFreeEverywhere(t, "new2")
	c.wantFreeEverywhere(t, "before")
}

// Scripts served by their effect are counted as the catalogue's are:
// Redisson's first lock is an acquire; its re-entry, its renewal and the
// unlock that only counts the re-entry down are extends; the last unlock
// is a release.
func TestEffectScriptsInOperationMetrics(t *testing.T) {
	c := startNodes(t, 3)
	m := metrics.New(c.addrs, "test")
	qcfg := engineConfig()
	qcfg.Observer = m
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout, Observer: m}, qcfg, c.addrs...)
	ctx := t.Context()
	lock, renew, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonRenew), redis.NewScript(redissonUnlock)
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
	for i := range 2 {
		if err := lock.Run(ctx, p.Client, []string{"rl"}, 30000, owner).Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("lock #%d: %v; want nil (acquired)", i+1, err)
		}
	}
	if n, err := renew.Run(ctx, p.Client, []string{"rl"}, 30000, owner).Int(); err != nil || n != 1 {
		t.Fatalf("renew = %d, %v; want 1", n, err)
	}
	for i, want := range []int{0, 1} { // re-entered twice: the first unlock counts down
		keys := []string{"rl", "redisson_lock__channel:{rl}", fmt.Sprintf("redisson_unlock_latch:{rl}:%d", i)}
		if n, err := unlock.Run(ctx, p.Client, keys, 0, 30000, owner, "publish", 5000).Int(); err != nil || n != want {
			t.Fatalf("unlock = %d, %v; want %d", n, err, want)
		}
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	var parser expfmt.TextParser
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		op   string
		want float64
	}{{"acquire", 1}, {"extend", 3}, {"release", 1}} {
		if got := metric(fams, "redlock_proxy_operations_total", "op", tt.op, "outcome", "granted"); got != tt.want {
			t.Errorf("operations_total{op=%s,outcome=granted} = %v; want %v", tt.op, got, tt.want)
		}
	}
}
