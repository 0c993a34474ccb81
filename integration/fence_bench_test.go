package integration

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// BenchmarkFenceCycle measures what FENCE costs one client (C=1) over 5
// real masters: acquire + release against acquire + FENCE + release,
// alternating in one loop so that both see the same machine. It reports
// each cycle's p50 and their ratio, and the p50 of each step (set,
// fence, release; an f before it: in the fenced cycle).
func BenchmarkFenceCycle(b *testing.B) {
	c := startNodes(b, 5)
	// No debug log to b.Log, as BenchmarkLockCycle's proxies.
	p := serveProxy(b, proxy.Config{CommandTimeout: commandTimeout}, newEngine(b, engineConfig(), c.addrs...))
	p.Client = newClient(b, p.Addr, nil)
	ctx := b.Context()
	var steps [2][3][]time.Duration // [plain, fenced][set, fence, release]
	cycle := func(n int, fence bool) time.Duration {
		token := "t" + strconv.Itoa(n)
		k := 0
		if fence {
			k = 1
		}
		start := time.Now()
		if err := p.Client.SetNX(ctx, "bench:fence", token, 10*time.Second).Err(); err != nil {
			b.Fatalf("SET NX: %v", err)
		}
		t1 := time.Now()
		if fence {
			if err := p.Client.Do(ctx, "FENCE", "bench:fence", token).Err(); err != nil {
				b.Fatalf("FENCE: %v", err)
			}
		}
		t2 := time.Now()
		if err := p.Client.Eval(ctx, distlockRelease, []string{"bench:fence"}, token).Err(); err != nil {
			b.Fatalf("release: %v", err)
		}
		end := time.Now()
		steps[k][0] = append(steps[k][0], t1.Sub(start))
		steps[k][1] = append(steps[k][1], t2.Sub(t1))
		steps[k][2] = append(steps[k][2], end.Sub(t2))
		return end.Sub(start)
	}
	var plain, fenced []time.Duration
	n := 0
	for b.Loop() {
		plain = append(plain, cycle(n, false))
		fenced = append(fenced, cycle(n+1, true))
		n += 2
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	pp, fp := p50(plain), p50(fenced)
	b.ReportMetric(pp, "lock-release-p50-us")
	b.ReportMetric(fp, "lock-fence-release-p50-us")
	b.ReportMetric(fp/pp, "fenced/plain")
	b.ReportMetric(p50(steps[0][0]), "set-p50-us")
	b.ReportMetric(p50(steps[0][2]), "release-p50-us")
	b.ReportMetric(p50(steps[1][0]), "fset-p50-us")
	b.ReportMetric(p50(steps[1][1]), "fence-p50-us")
	b.ReportMetric(p50(steps[1][2]), "frelease-p50-us")
}
