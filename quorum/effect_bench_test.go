package quorum

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// BenchmarkEffectWrapper measures what the wrapper costs a node: go-zero's
// acquire (a GET, then SET NX PX of a free key) run on one redis-server
// wrapped, as a library and as a script, against the same body alone as
// a function and against SET NX PX, in alternating rounds. It reports
// Redis's own time per call (INFO commandstats, usec_per_call: the
// command's run, no network), the wrapped library's over the bare
// function's, and the library's with a deadline field over without:
//
//	go test ./quorum -run '^$' -bench EffectWrapper -benchtime 20000x -count 3
func BenchmarkEffectWrapper(b *testing.B) {
	p := &redisProc{redistest.Start(b)}
	admin := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, DisableIdentity: true})
	defer admin.Close()
	ctx := context.Background()
	lib := p.nodeIn(b, asLibrary)
	scr := p.nodeIn(b, asScript)
	const body = goZeroLock
	eff := New(Config{MaxTTL: time.Minute}, lib).Wrap(body, []string{"GET", "1", "SET", "PX", "2", "OK", "NX"})
	bare := "#!lua name=rlp_bench_bare\nlocal KEYS, ARGV\nlocal function body()\n" + body +
		"\nend\nredis.register_function('rlp_bench_bare', function(k, a) KEYS, ARGV = k, a return body() end)"
	if err := admin.Do(ctx, "FUNCTION", "LOAD", "REPLACE", bare).Err(); err != nil {
		b.Fatalf("FUNCTION LOAD: %v", err)
	}
	type variant struct {
		name, stat string
		run        func(key string) error
	}
	variants := []variant{
		{"library", "fcall", func(key string) error {
			_, err := lib.RunEffect(ctx, eff, newEffectCall([]string{key}, []string{"tok", "10500"}, 1), nil)
			return err
		}},
		{"script", "evalsha", func(key string) error {
			_, err := scr.RunEffect(ctx, eff, newEffectCall([]string{key}, []string{"tok", "10500"}, 1), nil)
			return err
		}},
		{"bare", "fcall", func(key string) error {
			return admin.Do(ctx, "FCALL", "rlp_bench_bare", 1, key, "tok", "10500").Err()
		}},
		{"set", "set", func(key string) error {
			return admin.Do(ctx, "SET", key, "tok", "NX", "PX", "10500").Err()
		}},
		// The library with a deadline field, as a probed engine sends it
		// (attack18 A6): its TIME call beside the run.
		{"library-dated", "fcall", func(key string) error {
			c := newEffectCall([]string{key}, []string{"tok", "10500"}, 1)
			c.Until = time.Now().Add(time.Hour).UnixMilli()
			_, err := lib.RunEffect(ctx, eff, c, nil)
			return err
		}},
	}
	usec := make([]float64, len(variants))
	calls := make([]int64, len(variants))
	const rounds = 10
	per := max(b.N/rounds, 100)
	var seq atomic.Int64
	b.ResetTimer()
	for r := range rounds {
		for i, v := range variants {
			if err := admin.FlushAll(ctx).Err(); err != nil {
				b.Fatal(err)
			}
			admin.ConfigResetStat(ctx)
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for j := w; j < per; j += 4 {
						if err := v.run(fmt.Sprint("b:", seq.Add(1))); err != nil {
							b.Errorf("%s: %v", v.name, err)
							return
						}
					}
				})
			}
			wg.Wait()
			n, us := commandStat(b, admin, v.stat)
			calls[i] += n
			usec[i] += us
			_ = r
		}
	}
	b.StopTimer()
	for i, v := range variants {
		b.ReportMetric(usec[i]/float64(calls[i]), v.name+"-us/call")
	}
	b.ReportMetric((usec[0]/float64(calls[0]))/(usec[2]/float64(calls[2])), "library/bare")
	b.ReportMetric((usec[4]/float64(calls[4]))/(usec[0]/float64(calls[0])), "dated/library")
}

// commandStat reads a command's calls and total microseconds from INFO
// commandstats.
func commandStat(b *testing.B, c *redis.Client, name string) (calls int64, usec float64) {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		fields, ok := strings.CutPrefix(line, "cmdstat_"+name+":")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				calls, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				usec, _ = strconv.ParseFloat(v, 64)
			}
		}
	}
	if calls == 0 {
		b.Fatalf("no %s calls in INFO commandstats", name)
	}
	return calls, usec
}
