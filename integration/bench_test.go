package integration

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/metrics"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// BenchmarkLockCycle measures lock+unlock cycles on distinct keys, each a
// SET key token NX PX and a compare-and-delete script (redsync: Lock and
// Unlock), at 1, 16 and 64 concurrent go-redis clients, against one
// redis-server directly, the same through a do-nothing TCP relay (the
// cost of one extra hop), the proxy over 3 and over 5 masters, and
// redsync over the same 3 and 5 masters; and, at 64 clients, the proxy
// over 5 masters with its Prometheus metrics off and on, in alternating
// rounds (7-metrics-ab), so that the machine's load drifts over both
// alike. Everything runs on this machine,
// the client goroutines included, so ratios are read from one run:
//
//	go test ./integration -run '^$' -bench LockCycle -count 3
//
// At the end it prints a markdown table of medians and the targets.
func BenchmarkLockCycle(b *testing.B) {
	masters := startNodes(b, 5)
	relay := startRelay(b, masters.addrs[0], relayOpts{})
	proxy3 := startBenchProxy(b, masters.addrs[:3]...)
	proxy5 := startBenchProxy(b, masters.addrs...)
	proxy5m := startBenchProxyMetrics(b, masters.addrs...)
	proxy5f := serveProxy(b, proxy.Config{CommandTimeout: commandTimeout, FenceKeys: []string{"fencing:*", "counter:{*}:n"}},
		newEngine(b, engineConfig(), masters.addrs...)).Addr
	cases := []struct {
		name string
		new  func(b *testing.B, clients int) cycler
	}{
		{"1-direct", func(b *testing.B, n int) cycler { return newRedisCycler(b, masters.addrs[0], n) }},
		{"2-relay", func(b *testing.B, n int) cycler { return newRedisCycler(b, relay, n) }},
		{"3-proxy3", func(b *testing.B, n int) cycler { return newRedisCycler(b, proxy3, n) }},
		{"4-proxy5", func(b *testing.B, n int) cycler { return newRedisCycler(b, proxy5, n) }},
		{"5-redsync3", func(b *testing.B, n int) cycler { return newRedsyncCycler(b, masters.addrs[:3], n) }},
		{"6-redsync5", func(b *testing.B, n int) cycler { return newRedsyncCycler(b, masters.addrs, n) }},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			for _, clients := range []int{1, 16, 64} {
				// -count runs a sub-benchmark that many times, each with a
				// B of its own; of a B's runs, the last is the one b.N was
				// sized for, and the ones before it only size it.
				last := map[*testing.B]cycleResult{}
				b.Run(fmt.Sprintf("c=%02d", clients), func(b *testing.B) {
					last[b] = runCycles(b, cs.name, clients, cs.new(b, clients), masters)
				})
				for _, r := range last {
					if r.perSec > 0 {
						recordCycles(cs.name, clients, r)
					}
				}
			}
		})
	}
	// runABRow is one A/B row at 64 clients: off and on in alternating
	// rounds, recorded under offName and onName.
	runABRow := func(name, offName, onName string, off, on func(b *testing.B) cycler) {
		b.Run(name, func(b *testing.B) {
			last := map[*testing.B][2]cycleResult{}
			b.Run("c=64", func(b *testing.B) {
				x, y := runAB(b, 64, off(b), on(b), masters)
				last[b] = [2]cycleResult{x, y}
			})
			for _, r := range last {
				if r[0].perSec > 0 && r[1].perSec > 0 {
					recordCycles(offName, 64, r[0])
					recordCycles(onName, 64, r[1])
				}
			}
		})
	}
	runABRow("7-metrics-ab", "7-metrics-off", "7-metrics-on",
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5, 64) },
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5m, 64) })
	// A lock served by its effect (go-zero's acquire through the wrapper;
	// its release is the catalogue's) against the catalogue's SET NX,
	// both over 5 masters, in alternating rounds.
	runABRow("8-effect-ab", "8-catalogue", "8-effect",
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5, 64) },
		func(b *testing.B) cycler { return newGoZeroCycler(b, proxy5, 64) })
	// The harness's own check: the catalogue against itself (two clients
	// of one proxy) in the same alternating rounds must read about 1.00.
	runABRow("8-aa", "8-aa-a", "8-aa-b",
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5, 64) },
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5, 64) })
	// A client that never fences, through a proxy with fence_keys set
	// (every command's keys matched against its patterns) and without.
	runABRow("9-fence-ab", "9-fence-off", "9-fence-on",
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5, 64) },
		func(b *testing.B) cycler { return newRedisCycler(b, proxy5f, 64) })
	printLockCycleTable(os.Stdout)
}

// newGoZeroCycler is go-zero's RedisLock protocol (its scripts, byte for
// byte) from a go-redis client to addr: acquire, served by effect, then
// release, a catalogue script.
func newGoZeroCycler(b *testing.B, addr string, clients int) cycler {
	c := newClient(b, addr, func(o *redis.Options) { o.PoolSize = clients + 4 })
	return func(ctx context.Context, key, token string) (time.Duration, error) {
		start := time.Now()
		v, err := goZeroLockScript.Run(ctx, c, []string{key}, token, "10500").Result()
		d := time.Since(start)
		if err != nil || v != "OK" {
			return d, fmt.Errorf("go-zero acquire = %v, %v; want OK", v, err)
		}
		n, err := goZeroReleaseScript.Run(ctx, c, []string{key}, token).Int64()
		if err != nil || n != 1 {
			return d, fmt.Errorf("go-zero release = %d, %v; want 1", n, err)
		}
		return d, nil
	}
}

// runAB runs about b.N cycles from clients goroutines, half through off
// and half through on, in alternating rounds (the order flipped every
// round), and reports each one's cycles/s, latencies and CPU per cycle.
func runAB(b *testing.B, clients int, off, on cycler, masters *cluster) (cycleResult, cycleResult) {
	const rounds = 10
	ctx := context.Background()
	prefix := fmt.Sprintf("ab:%d:", time.Now().UnixNano())
	cyclers := [2]cycler{off, on}
	type acc struct {
		elapsed, goCPU, nodeCPU time.Duration
		lat                     []time.Duration
	}
	var res [2]acc
	var wg sync.WaitGroup
	for v, cyc := range cyclers { // warm up: open every connection first
		for w := range clients {
			wg.Go(func() {
				key := fmt.Sprintf("%swarm%d:%d", prefix, v, w)
				if _, err := cyc(ctx, key, key); err != nil {
					b.Errorf("warm-up cycle: %v", err)
				}
			})
		}
	}
	wg.Wait()
	if b.Failed() {
		return cycleResult{}, cycleResult{}
	}
	per := max(b.N/(2*rounds), clients)
	runtime.GC() // the warm-up's garbage, before the first round
	b.ResetTimer()
	for r := range rounds {
		for k := range 2 {
			v := (r + k) % 2
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			goCPU, nodeCPU := selfCPU(), procsCPU(masters.procs)
			start := time.Now()
			for w := range clients {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(per) {
							return
						}
						s := fmt.Sprintf("%s%d:%d:%d", prefix, v, r, i)
						d, err := cyclers[v](ctx, s, s)
						if err != nil {
							b.Errorf("cycle: %v", err)
							return
						}
						lat[w] = append(lat[w], d)
					}
				})
			}
			wg.Wait()
			// Each round collects its own garbage, in its own time: none
			// is left to the next round, the other path's half the time.
			runtime.GC()
			res[v].elapsed += time.Since(start)
			res[v].goCPU += selfCPU() - goCPU
			res[v].nodeCPU += procsCPU(masters.procs) - nodeCPU
			res[v].lat = append(res[v].lat, slices.Concat(lat...)...)
		}
	}
	b.StopTimer()
	var out [2]cycleResult
	for v, a := range res {
		if len(a.lat) == 0 || b.Failed() {
			return cycleResult{}, cycleResult{}
		}
		slices.Sort(a.lat)
		n := float64(len(a.lat))
		out[v] = cycleResult{
			perSec:   n / a.elapsed.Seconds(),
			p50:      micros(a.lat[len(a.lat)/2]),
			p99:      micros(a.lat[len(a.lat)*99/100]),
			goCPU:    micros(a.goCPU) / n,
			nodesCPU: micros(a.nodeCPU) / n,
		}
	}
	b.ReportMetric(out[0].perSec, "off-cycles/s")
	b.ReportMetric(out[1].perSec, "on-cycles/s")
	b.ReportMetric(ratio(out[1].perSec, out[0].perSec), "on/off")
	b.ReportMetric(out[0].goCPU, "off-go-cpu-us")
	b.ReportMetric(out[1].goCPU, "on-go-cpu-us")
	return out[0], out[1]
}

// cycler runs one lock+unlock cycle on key and returns how long the lock
// took.
type cycler func(ctx context.Context, key, token string) (time.Duration, error)

// runCycles runs b.N cycles from clients goroutines and reports cycles/s
// and the acquire latency's p50 and p99.
func runCycles(b *testing.B, name string, clients int, cycle cycler, masters *cluster) cycleResult {
	ctx := context.Background()
	prefix := fmt.Sprintf("lc:%s:%d:%d:", name, clients, time.Now().UnixNano())
	// Warm up: open every client's connections before the clock starts.
	var wg sync.WaitGroup
	for w := range clients {
		wg.Go(func() {
			key := prefix + "warm" + strconv.Itoa(w)
			if _, err := cycle(ctx, key, key); err != nil {
				b.Errorf("warm-up cycle: %v", err)
			}
		})
	}
	wg.Wait()
	if b.Failed() {
		return cycleResult{}
	}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	b.ResetTimer()
	goCPU, nodeCPU := selfCPU(), procsCPU(masters.procs)
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, b.N/clients+1)
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					break
				}
				s := strconv.FormatInt(i, 10)
				d, err := cycle(ctx, prefix+s, "tok"+s)
				if err != nil {
					b.Errorf("cycle %d: %v", i, err)
					return
				}
				mine = append(mine, d)
			}
			lat[w] = mine
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	goCPU, nodeCPU = selfCPU()-goCPU, procsCPU(masters.procs)-nodeCPU
	all := slices.Concat(lat...)
	if len(all) == 0 || b.Failed() {
		return cycleResult{}
	}
	slices.Sort(all)
	r := cycleResult{
		perSec: float64(len(all)) / elapsed.Seconds(),
		p50:    micros(all[len(all)/2]),
		p99:    micros(all[len(all)*99/100]),
	}
	b.ReportMetric(r.perSec, "cycles/s")
	b.ReportMetric(r.p50, "lock-p50-us")
	b.ReportMetric(r.p99, "lock-p99-us")
	// Where the CPU went, per cycle: this process (clients, proxy, relay)
	// and the five masters.
	r.goCPU = micros(goCPU) / float64(len(all))
	r.nodesCPU = micros(nodeCPU) / float64(len(all))
	b.ReportMetric(r.goCPU, "go-cpu-us")
	b.ReportMetric(r.nodesCPU, "nodes-cpu-us")
	return r
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// distlockScript is the compare-and-delete release every case uses;
// Run sends EVALSHA and falls back to EVAL.
var distlockScript = redis.NewScript(distlockRelease)

// newRedisCycler is a go-redis client to addr with a pool for clients
// goroutines: SET NX PX, then the release script.
func newRedisCycler(b *testing.B, addr string, clients int) cycler {
	c := newClient(b, addr, func(o *redis.Options) { o.PoolSize = clients + 4 })
	return func(ctx context.Context, key, token string) (time.Duration, error) {
		start := time.Now()
		err := c.Do(ctx, "set", key, token, "nx", "px", 10000).Err()
		d := time.Since(start)
		if err != nil {
			return d, fmt.Errorf("SET: %w", err)
		}
		n, err := distlockScript.Run(ctx, c, []string{key}, token).Int64()
		if err != nil || n != 1 {
			return d, fmt.Errorf("release = %d, %v; want 1", n, err)
		}
		return d, nil
	}
}

// newRedsyncCycler is redsync over a go-redis pool per master: Lock with
// one try, then Unlock.
func newRedsyncCycler(b *testing.B, addrs []string, clients int) cycler {
	pools := make([]rsredis.Pool, len(addrs))
	for i, a := range addrs {
		pools[i] = goredis.NewPool(newClient(b, a, func(o *redis.Options) { o.PoolSize = clients + 4 }))
	}
	rs := redsync.New(pools...)
	return func(_ context.Context, key, token string) (time.Duration, error) {
		m := rs.NewMutex(key, redsync.WithExpiry(10*time.Second), redsync.WithTries(1),
			redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
		start := time.Now()
		err := m.Lock()
		d := time.Since(start)
		if err != nil {
			return d, fmt.Errorf("Lock: %w", err)
		}
		if ok, err := m.Unlock(); !ok || err != nil {
			return d, fmt.Errorf("Unlock = %v, %v; want true", ok, err)
		}
		return d, nil
	}
}

// startBenchProxy serves an in-process proxy over addrs with logs
// discarded, and returns its address.
func startBenchProxy(b *testing.B, addrs ...string) string {
	return serveProxy(b, proxy.Config{CommandTimeout: commandTimeout}, newEngine(b, engineConfig(), addrs...)).Addr
}

// startBenchProxyMetrics is startBenchProxy with the Prometheus metrics
// observing the engine and the server, as admin_listen turns them on.
func startBenchProxyMetrics(b *testing.B, addrs ...string) string {
	m := metrics.New(addrs, "bench")
	qcfg := engineConfig()
	qcfg.Observer = m
	return serveProxy(b, proxy.Config{CommandTimeout: commandTimeout, Observer: m}, newEngine(b, qcfg, addrs...)).Addr
}

// cycleResult is one run of one case at one client count.
type cycleResult struct {
	perSec, p50, p99 float64
	goCPU, nodesCPU  float64 // microseconds per cycle
}

var cycleResults = struct {
	sync.Mutex
	m map[string][]cycleResult // by "case/clients"
}{m: map[string][]cycleResult{}}

func recordCycles(name string, clients int, r cycleResult) {
	cycleResults.Lock()
	defer cycleResults.Unlock()
	k := name + "/" + strconv.Itoa(clients)
	cycleResults.m[k] = append(cycleResults.m[k], r)
}

// medianCycles is the run with the median cycles/s, and its p50 and p99
// medians, of every recorded run of name at clients.
func medianCycles(name string, clients int) (cycleResult, bool) {
	cycleResults.Lock()
	defer cycleResults.Unlock()
	rs := cycleResults.m[name+"/"+strconv.Itoa(clients)]
	if len(rs) == 0 {
		return cycleResult{}, false
	}
	med := func(f func(cycleResult) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return cycleResult{
		perSec:   med(func(r cycleResult) float64 { return r.perSec }),
		p50:      med(func(r cycleResult) float64 { return r.p50 }),
		p99:      med(func(r cycleResult) float64 { return r.p99 }),
		goCPU:    med(func(r cycleResult) float64 { return r.goCPU }),
		nodesCPU: med(func(r cycleResult) float64 { return r.nodesCPU }),
	}, true
}

// printLockCycleTable writes the medians recorded so far as a markdown
// table, and the targets as met or not.
func printLockCycleTable(w io.Writer) {
	fmt.Fprintln(w, "\n| case | 1 client cycles/s | lock p50 | 16 clients cycles/s | lock p99 at 16 | 64 clients cycles/s | lock p50 at 64 | lock p99 at 64 | CPU per cycle at 64: Go + masters |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	labels := []struct{ name, label string }{
		{"1-direct", "one redis-server, direct"},
		{"2-relay", "same, through a do-nothing Go TCP relay"},
		{"3-proxy3", "proxy over 3 masters"},
		{"4-proxy5", "proxy over 5 masters"},
		{"7-metrics-off", "proxy over 5 masters, metrics off (alternating rounds)"},
		{"7-metrics-on", "proxy over 5 masters, metrics on (alternating rounds)"},
		{"8-catalogue", "proxy over 5 masters, SET NX (catalogue; alternating rounds)"},
		{"8-effect", "proxy over 5 masters, go-zero's acquire served by effect (alternating rounds)"},
		{"9-fence-off", "proxy over 5 masters, no fence_keys (alternating rounds)"},
		{"9-fence-on", "proxy over 5 masters, fence_keys set, no client fences (alternating rounds)"},
		{"5-redsync3", "redsync over 3 masters"},
		{"6-redsync5", "redsync over 5 masters"},
	}
	for _, l := range labels {
		r1, ok1 := medianCycles(l.name, 1)
		r16, ok16 := medianCycles(l.name, 16)
		r64, ok64 := medianCycles(l.name, 64)
		if !ok1 && !ok16 && !ok64 {
			continue
		}
		cpu := "-"
		if ok64 {
			cpu = fmt.Sprintf("%.0f + %.0f us", r64.goCPU, r64.nodesCPU)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l.label,
			rate(r1, ok1), us(r1.p50, ok1), rate(r16, ok16), us(r16.p99, ok16),
			rate(r64, ok64), us(r64.p50, ok64), us(r64.p99, ok64), cpu)
	}
	fmt.Fprintln(w)
	get := func(name string, clients int) cycleResult { r, _ := medianCycles(name, clients); return r }
	d1, rl1, p3, p5, rs5 := get("1-direct", 1), get("2-relay", 1), get("3-proxy3", 1), get("4-proxy5", 1), get("6-redsync5", 1)
	d64, p3x, p5x, rs5x := get("1-direct", 64), get("3-proxy3", 64), get("4-proxy5", 64), get("6-redsync5", 64)
	rl64 := get("2-relay", 64)
	mOff, mOn := get("7-metrics-off", 64), get("7-metrics-on", 64)
	cat, eff := get("8-catalogue", 64), get("8-effect", 64)
	fOff, fOn := get("9-fence-off", 64), get("9-fence-on", 64)
	hop := rl1.p50 - d1.p50
	targets := []struct {
		what      string
		needs     []cycleResult
		got, want float64
		atMost    bool
		detail    string
	}{
		{"64 clients: proxy5 / redsync5 cycles/s", []cycleResult{p5x, rs5x}, ratio(p5x.perSec, rs5x.perSec), 3, false, ""},
		{"64 clients: proxy5 / direct cycles/s", []cycleResult{p5x, d64}, ratio(p5x.perSec, d64.perSec), 0.4, false, ""},
		{"64 clients: proxy3 / direct cycles/s", []cycleResult{p3x, d64}, ratio(p3x.perSec, d64.perSec), 0.6, false, ""},
		{"1 client: proxy5 lock p50 (us) vs redsync5 p50 + hop", []cycleResult{p5, rs5, rl1, d1}, p5.p50, rs5.p50 + hop, true,
			fmt.Sprintf(" (redsync5 %.0f + hop %.0f)", rs5.p50, hop)},
		{"1 client: proxy5 / proxy3 lock p50", []cycleResult{p5, p3}, ratio(p5.p50, p3.p50), 1.2, true, ""},
		// Issue 17's part 2: a node path faster than a relay.
		{"64 clients: proxy5 / relay cycles/s", []cycleResult{p5x, rl64}, ratio(p5x.perSec, rl64.perSec), 1, false, ""},
		{"64 clients: proxy5 Go CPU per cycle (us) vs the relay's", []cycleResult{p5x, rl64}, p5x.goCPU, rl64.goCPU, true, ""},
		{"1 client: proxy5 Go CPU per cycle (us) vs redsync5's", []cycleResult{p5, rs5}, p5.goCPU, rs5.goCPU, true, ""},
		{"1 client: proxy5 lock p50 (us) vs redsync5's", []cycleResult{p5, rs5}, p5.p50, rs5.p50, true, ""},
		{"64 clients: proxy5 metrics on / off cycles/s", []cycleResult{mOn, mOff}, ratio(mOn.perSec, mOff.perSec), 0.95, false, ""},
		{"64 clients: proxy5 effect / catalogue cycles/s (cost at most 1.3x)", []cycleResult{eff, cat}, ratio(eff.perSec, cat.perSec), 1 / 1.3, false, ""},
		{"64 clients: proxy5 metrics on / off Go CPU per cycle", []cycleResult{mOn, mOff}, ratio(mOn.goCPU, mOff.goCPU), 1.05, true, ""},
		{"64 clients: proxy5 fence_keys set / not, no client fences, cycles/s", []cycleResult{fOn, fOff}, ratio(fOn.perSec, fOff.perSec), 0.98, false, ""},
		{"64 clients: proxy5 fence_keys set / not, no client fences, Go CPU per cycle", []cycleResult{fOn, fOff}, ratio(fOn.goCPU, fOff.goCPU), 1.02, true, ""},
	}
	fmt.Fprintln(w, "| target | got | want | met |")
	fmt.Fprintln(w, "|---|---:|---:|---|")
	for _, t := range targets {
		if slices.ContainsFunc(t.needs, func(r cycleResult) bool { return r.perSec == 0 }) {
			continue // a case it needs did not run
		}
		op, met := ">=", t.got >= t.want
		if t.atMost {
			op, met = "<=", t.got <= t.want
		}
		fmt.Fprintf(w, "| %s | %.2f | %s %.2f%s | %s |\n", t.what, t.got, op, t.want, t.detail, yesNo(met))
	}
}

func rate(r cycleResult, ok bool) string {
	if !ok {
		return "-"
	}
	return thousands(int64(r.perSec + 0.5))
}

func us(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v >= 1000:
		return fmt.Sprintf("%.1f ms", v/1000)
	}
	return fmt.Sprintf("%.0f us", v)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func yesNo(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procsCPU is the CPU time the processes have used, from /proc (in clock
// ticks of 10ms); 0 where it cannot be read.
func procsCPU(procs []*redisProc) time.Duration {
	var total time.Duration
	for _, p := range procs {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses:
		// utime and stime are the 12th and 13th.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		for _, s := range f[11:13] {
			ticks, _ := strconv.ParseInt(s, 10, 64)
			total += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return total
}
