package quorum

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// benchEngine is an engine over five real redis-servers, for measuring
// the Go side of one operation: its allocations, and this process's CPU
// time per operation (go-cpu-ns/op; the redis-servers are processes of
// their own).
func benchEngine(b *testing.B) *Engine {
	b.Helper()
	var nodes []Node
	for range 5 {
		n := RedisNode(redistest.Start(b).Addr, false)
		b.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	// A loaded machine may keep a node's answer past the default 50ms:
	// that is not what these measure.
	return New(Config{MaxTTL: time.Minute, NodeTimeout: time.Second}, nodes...)
}

// benchTakes runs take from 64 goroutines, each call on a key of its own,
// and reports this process's CPU time per call.
func benchTakes(b *testing.B, take func(key string) error) {
	var next atomic.Int64
	if err := take("bench:warm"); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(32) // 64 goroutines on 2 cores, as BenchmarkLockCycle's 64 clients
	b.ReportAllocs()
	b.ResetTimer()
	start := selfCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := take("bench:" + strconv.FormatInt(next.Add(1), 10)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(selfCPU()-start)/float64(b.N), "go-cpu-ns/op")
}

// effectTake and acquireTake take a new lock on key over e's nodes: by
// effect (go-zero's acquire), and as the catalogue's SET NX.
func effectTake(b *testing.B, e *Engine) func(key string) error {
	eff := e.Wrap(goZeroLock, nil)
	args := []string{"tok", "10500"}
	return func(key string) error {
		res, err := e.RunEffect(b.Context(), eff, []string{key}, args)
		if err == nil && (!res.Granted || res.Reply.Str != "OK") {
			err = fmt.Errorf("RunEffect = %+v; want granted OK", res)
		}
		return err
	}
}

func acquireTake(b *testing.B, e *Engine) func(key string) error {
	return func(key string) error {
		_, err := e.Acquire(b.Context(), Lock{Keys: []string{key}, Token: "tok"}, 10500*time.Millisecond)
		return err
	}
}

// BenchmarkRunEffectTake is a new lock served by effect over five nodes;
// BenchmarkAcquireTake is the same take as the catalogue's SET NX. Their
// allocs/op are exact; for CPU, BenchmarkTakeAB alternates the two:
//
//	go test ./quorum -run '^$' -bench 'Take' -count 3
func BenchmarkRunEffectTake(b *testing.B) {
	benchTakes(b, effectTake(b, benchEngine(b)))
}

// BenchmarkRunEffectTakeProbed is BenchmarkRunEffectTake with every
// node's clock read by a probe: the FCALL goes to each node with its own
// deadline field (a copy patched per node).
func BenchmarkRunEffectTakeProbed(b *testing.B) {
	e := benchEngine(b)
	if err := e.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	benchTakes(b, effectTake(b, e))
}

func BenchmarkAcquireTake(b *testing.B) {
	benchTakes(b, acquireTake(b, benchEngine(b)))
}

// BenchmarkTakeAB runs both takes on one engine from 64 goroutines, in
// alternating rounds (takesAB), and reports this process's CPU per call
// for each and the effect's over the catalogue's.
func BenchmarkTakeAB(b *testing.B) {
	e := benchEngine(b)
	cpu := takesAB(b, [2]func(key string) error{acquireTake(b, e), effectTake(b, e)})
	b.ReportMetric(cpu[0], "catalogue-go-cpu-ns/op")
	b.ReportMetric(cpu[1], "effect-go-cpu-ns/op")
	b.ReportMetric(cpu[1]/cpu[0], "effect/catalogue")
}

// BenchmarkSetNXGetAB is BenchmarkTakeAB for the catalogue's SET NX over
// nodes not probed (SET NX PX) and over the same servers' nodes whose
// probe read Redis 7.0 (SET NX PX GET, whose denial reveals what the key
// holds), each take on a new key, then each on a key another token
// holds (denied):
//
//	go test ./quorum -run '^$' -bench 'SetNXGetAB' -count 3
func BenchmarkSetNXGetAB(b *testing.B) {
	plain := benchEngine(b)
	var nodes []Node
	for _, n := range plain.nodes {
		rn := RedisNode(n.Addr(), false)
		b.Cleanup(func() { rn.Close() })
		if _, err := rn.Probe(b.Context()); err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, rn)
	}
	get := New(plain.cfg, nodes...)
	if plain.reveal() || !get.reveal() {
		b.Fatal("want the probed nodes alone to reveal")
	}
	for _, denied := range []bool{false, true} {
		b.Run(fmt.Sprintf("denied=%v", denied), func(b *testing.B) {
			takes := [2]func(key string) error{acquireTake(b, plain), acquireTake(b, get)}
			if denied {
				if _, err := plain.Acquire(b.Context(), Lock{Keys: []string{"bench:held"}, Token: "other"}, time.Minute); err != nil && !errors.Is(err, ErrDenied) {
					b.Fatal(err) // denied: an earlier run took it
				}
				for i, e := range []*Engine{plain, get} {
					takes[i] = func(string) error {
						if _, err := e.Acquire(b.Context(), Lock{Keys: []string{"bench:held"}, Token: "tok"}, 10500*time.Millisecond); !errors.Is(err, ErrDenied) {
							return fmt.Errorf("Acquire of a held key = %v; want denied", err)
						}
						return nil
					}
				}
			}
			cpu := takesAB(b, takes)
			b.ReportMetric(cpu[0], "setnx-go-cpu-ns/op")
			b.ReportMetric(cpu[1], "setnxget-go-cpu-ns/op")
			b.ReportMetric(cpu[1]/cpu[0], "get/plain")
		})
	}
}

// takesAB runs each take from 64 goroutines, each call on a key of its
// own, in alternating rounds (the order flipped every round) so that the
// machine's load drifts over both alike, and returns this process's CPU
// per call of each, in ns.
func takesAB(b *testing.B, takes [2]func(key string) error) [2]float64 {
	var seq atomic.Int64
	run := "bench:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":" // keys new to every run on the same servers
	key := func() string { return run + strconv.FormatInt(seq.Add(1), 10) }
	for _, take := range takes {
		if err := take(key()); err != nil {
			b.Fatal(err)
		}
	}
	const rounds, workers = 10, 64
	per := max(b.N/(2*rounds), workers)
	var cpu [2]time.Duration
	b.ResetTimer()
	for r := range rounds {
		for k := range 2 {
			v := (r + k) % 2
			var next atomic.Int64
			var wg sync.WaitGroup
			start := selfCPU()
			for range workers {
				wg.Go(func() {
					for next.Add(1) <= int64(per) {
						if err := takes[v](key()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			cpu[v] += selfCPU() - start
		}
	}
	calls := float64(rounds * per)
	return [2]float64{float64(cpu[0]) / calls, float64(cpu[1]) / calls}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
