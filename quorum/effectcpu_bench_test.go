package quorum

import (
	"fmt"
	"strconv"
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
		n := NewRedisNode(redistest.Start(b).Addr, NodeOptions{})
		b.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	// A loaded machine may keep a node's answer past the default 50ms:
	// that is not what these measure.
	return New(Config{MaxTTL: time.Minute, NodeTimeout: time.Second}, nodes...)
}

// goZeroLock is go-zero's RedisLock acquire (a take, or a re-entrant
// refresh that answers bulk "OK"), as admission prints it back.
const goZeroLock = `if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
else
    return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
end`

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

// BenchmarkRunEffectTake is a new lock served by effect (go-zero's
// acquire) over five nodes; BenchmarkAcquireTake is the same take as the
// catalogue's SET NX. Compare them in one run:
//
//	go test ./quorum -run '^$' -bench 'Take$' -count 5
func BenchmarkRunEffectTake(b *testing.B) {
	e := benchEngine(b)
	eff := e.Wrap(goZeroLock, testCommands, nil)
	args := []string{"tok", "10500"}
	benchTakes(b, func(key string) error {
		res, err := e.RunEffect(b.Context(), eff, []string{key}, args)
		if err == nil && (!res.Granted || res.Reply.Str != "OK") {
			err = fmt.Errorf("RunEffect = %+v; want granted OK", res)
		}
		return err
	})
}

func BenchmarkAcquireTake(b *testing.B) {
	e := benchEngine(b)
	benchTakes(b, func(key string) error {
		_, err := e.Acquire(b.Context(), Lock{Keys: []string{key}, Token: "tok"}, 10500*time.Millisecond)
		return err
	})
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
