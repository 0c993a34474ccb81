package quorum

import (
	"testing"
	"time"
)

// BenchmarkEngineCycle is one lock+unlock cycle (Acquire, then Release)
// on the engine over five real nodes from 64 goroutines: the Go side of
// the node path alone, its allocations and this process's CPU per cycle.
func BenchmarkEngineCycle(b *testing.B) {
	e := benchEngine(b)
	benchTakes(b, lockCycle(b, e))
}

// BenchmarkEngineCycleProbed is BenchmarkEngineCycle with every node's
// clock read by a probe: the release goes to each node with its own
// deadline field (a copy of the command patched per node).
func BenchmarkEngineCycleProbed(b *testing.B) {
	e := benchEngine(b)
	if err := e.Start(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	benchTakes(b, lockCycle(b, e))
}

// lockCycle is one lock+unlock cycle of key on e: Acquire, then Release.
func lockCycle(b *testing.B, e *Engine) func(key string) error {
	return func(key string) error {
		l := Lock{Keys: []string{key}, Token: "tok"}
		if _, err := e.Acquire(b.Context(), l, 10*time.Second); err != nil {
			return err
		}
		_, err := e.Release(b.Context(), l)
		return err
	}
}
