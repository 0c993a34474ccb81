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
// each cycle's p50 and their ratio.
func BenchmarkFenceCycle(b *testing.B) {
	c := startNodes(b, 5)
	p := startProxy(b, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), c.addrs...)
	ctx := b.Context()
	cycle := func(n int, fence bool) time.Duration {
		token := "t" + strconv.Itoa(n)
		start := time.Now()
		if err := p.Client.SetNX(ctx, "bench:fence", token, 10*time.Second).Err(); err != nil {
			b.Fatalf("SET NX: %v", err)
		}
		if fence {
			if err := p.Client.Do(ctx, "FENCE", "bench:fence", token).Err(); err != nil {
				b.Fatalf("FENCE: %v", err)
			}
		}
		if err := p.Client.Eval(ctx, distlockRelease, []string{"bench:fence"}, token).Err(); err != nil {
			b.Fatalf("release: %v", err)
		}
		return time.Since(start)
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
}
