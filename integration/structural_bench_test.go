package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Hand-written lock scripts the catalogue knows by their shape only (no
// client sends these exact bytes), and the same scripts with a failure
// reply the shapes do not take (tonumber("0") for 0), which the proxy
// therefore serves by their effect. Same replies, same keys.
const (
	shapeAcquire  = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 else return 0 end`
	shapeRelease  = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`
	effectAcquire = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 else return tonumber("0") end`
	effectRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return tonumber("0") end`
)

// newScriptCycler acquires and releases with the two scripts, by EVALSHA
// (EVAL on NOSCRIPT), as go-redis's Script does.
func newScriptCycler(b *testing.B, addr string, clients int, acquire, release string) cycler {
	c := newClient(b, addr, func(o *redis.Options) { o.PoolSize = clients + 4 })
	acq, rel := redis.NewScript(acquire), redis.NewScript(release)
	return func(ctx context.Context, key, token string) (time.Duration, error) {
		start := time.Now()
		n, err := acq.Run(ctx, c, []string{key}, token, 10000).Int64()
		d := time.Since(start)
		if err != nil || n != 1 {
			return d, fmt.Errorf("acquire = %d, %v; want 1", n, err)
		}
		if n, err := rel.Run(ctx, c, []string{key}, token).Int64(); err != nil || n != 1 {
			return d, fmt.Errorf("release = %d, %v; want 1", n, err)
		}
		return d, nil
	}
}

// BenchmarkShapeOrEffect measures what the catalogue's structural match
// is worth: a lock cycle by hand-written scripts it recognises by shape
// (off, the quorum operations) against the same scripts served by their
// effect (on, the wrapper on every master), over 5 masters, in
// alternating rounds:
//
//	go test ./integration -run '^$' -bench ShapeOrEffect -benchtime 4000x
func BenchmarkShapeOrEffect(b *testing.B) {
	masters := startNodes(b, 5)
	proxy5 := startBenchProxy(b, masters.addrs...)
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("c=%02d", clients), func(b *testing.B) {
			shape := newScriptCycler(b, proxy5, clients, shapeAcquire, shapeRelease)
			effect := newScriptCycler(b, proxy5, clients, effectAcquire, effectRelease)
			x, y := runAB(b, clients, shape, effect, masters)
			b.ReportMetric(x.p50, "shape-p50-us")
			b.ReportMetric(y.p50, "effect-p50-us")
			b.ReportMetric(x.nodesCPU, "shape-nodes-cpu-us")
			b.ReportMetric(y.nodesCPU, "effect-nodes-cpu-us")
		})
	}
}
