package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// TestAttack13IncrMonotonicUnderTendingAndFlushes: two engines (two
// proxies, each with its own counter round) share three masters; one
// master at a time is flushed while both count. Every Incr, taken one
// after the other, must return more than the one before.
func TestAttack13IncrMonotonicUnderTendingAndFlushes(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	cfg := Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 150 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}
	var engines []*Engine
	for range 2 {
		var nodes []Node
		for _, p := range procs {
			nodes = append(nodes, p.node(t))
		}
		e := New(cfg, nodes...)
		t.Cleanup(func() { e.Close() })
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	ctx := t.Context()
	if _, err := engines[0].Incr(ctx, "n", 1); err != nil {
		t.Fatalf("first Incr: %v", err)
	}
	var last int64
	end := time.Now().Add(6 * time.Second)
	next := time.Now()
	for i := 0; time.Now().Before(end); i++ {
		if time.Now().After(next) {
			redistest.Flush(t, procs[i%3].Client(t))
			next = time.Now().Add(700 * time.Millisecond)
		}
		v, err := engines[i%2].Incr(ctx, "n", 1)
		if err != nil {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if v <= last {
			t.Fatalf("Incr %d via engine %d = %d after %d: the counter went back", i, i%2, v, last)
		}
		last = v
	}
	// Once the flushes stop, counting must come back.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := engines[0].Incr(ctx, "n", 1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Incr 5s after the last flush: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAttack13NewDeploymentWithOneMasterFlushedRepeatedly: a new
// deployment whose third master is flushed again and again (a quorum,
// two masters, healthy all along) should still start counting.
func TestAttack13NewDeploymentWithOneMasterFlushedRepeatedly(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	for _, p := range procs {
		nodes = append(nodes, p.node(t))
	}
	e := New(Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 150 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	admin := procs[2].Client(t)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // flushes the third master without pause
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			admin.FlushAll(context.Background())
		}
	}()
	defer func() { close(stop); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if _, err = e.Incr(ctx, "n", 1); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("a new deployment with two healthy masters of three never started counting in 5s: %v", err)
}

// TestAttack13FrozenMasterAndFlushesNeverGoBack: a master holding the
// counters is frozen while the two others are flushed one after the
// other, both proxies' counter rounds running; after the thaw, no Incr
// returns a value at or below one returned before.
func TestAttack13FrozenMasterAndFlushesNeverGoBack(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	cfg := Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}
	var engines []*Engine
	for range 2 {
		var nodes []Node
		for _, p := range procs {
			nodes = append(nodes, p.node(t))
		}
		e := New(cfg, nodes...)
		t.Cleanup(func() { e.Close() })
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		engines = append(engines, e)
	}
	ctx := t.Context()
	var last int64
	incr := func(i int) {
		v, err := engines[i%2].Incr(ctx, "n", 1)
		if err != nil {
			return
		}
		if v <= last {
			t.Fatalf("Incr via engine %d = %d after %d: the counter went back", i%2, v, last)
		}
		last = v
	}
	for i := range 5 {
		incr(i)
	}
	if last != 5 {
		t.Fatalf("Incr before any fault reached %d; want 5", last)
	}
	procs[2].Freeze(t)
	for i := range 20 {
		incr(i)
		time.Sleep(10 * time.Millisecond)
	}
	redistest.Flush(t, procs[0].Client(t))
	for i := range 60 {
		incr(i)
		time.Sleep(10 * time.Millisecond)
	}
	redistest.Flush(t, procs[1].Client(t))
	for i := range 60 {
		incr(i)
		time.Sleep(10 * time.Millisecond)
	}
	procs[2].Thaw()
	for i := range 200 {
		incr(i)
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("last value %d", last)
}

// TestAttack13NewDeploymentWithOneMasterDown: a new deployment whose
// third master never answers does not start counting (docs: "once every
// master answers"), and says so as unavailable, not as a value.
func TestAttack13NewDeploymentWithOneMasterDown(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	for _, p := range procs {
		nodes = append(nodes, p.node(t))
	}
	procs[2].Kill()
	e := New(Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var v int64
	var err error
	for range 30 { // past the start's quarantine
		if v, err = e.Incr(ctx, "n", 1); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		t.Fatalf("Incr with one master of three down in a new deployment = %d; the docs say it waits for every master", v)
	}
	t.Logf("Incr: %v", err)
	for i, p := range procs[:2] {
		n := p.Client(t).Exists(ctx, CountersKey).Val()
		t.Logf("node %d has the counters' hash: %d", i, n)
	}
}

// TestAttack13ProxyRestartThenFlushNeverGoesBack: a proxy counts to 5 and
// stops; a master is flushed; a new proxy starts (its monitor's counter
// round running from its start quarantine on), then a second master is
// flushed once the first is seeded again: Incr never goes back.
func TestAttack13ProxyRestartThenFlushNeverGoesBack(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	cfg := Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 100 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}
	start := func() *Engine {
		var nodes []Node
		for _, p := range procs {
			nodes = append(nodes, p.node(t))
		}
		e := New(cfg, nodes...)
		t.Cleanup(func() { e.Close() })
		if err := e.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		return e
	}
	ctx := t.Context()
	a := start()
	var last int64
	for range 5 {
		v, err := a.Incr(ctx, "n", 1)
		if err != nil {
			t.Fatalf("Incr: %v", err)
		}
		last = v
	}
	a.Close()
	redistest.Flush(t, procs[0].Client(t))
	b := start()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := procs[0].node(t).Counters(ctx)
		if err == nil && c[counterPrefix+"n"] == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flushed master not seeded again by the new proxy's monitor in 5s: %v, %v", c, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	redistest.Flush(t, procs[1].Client(t))
	for range 100 {
		v, err := b.Incr(ctx, "n", 1)
		if err == nil {
			if v <= last {
				t.Fatalf("Incr after a proxy restart and two flushes = %d after %d", v, last)
			}
			last = v
		}
		time.Sleep(10 * time.Millisecond)
	}
	if last <= 5 {
		t.Errorf("Incr never counted again after the restart: last %d", last)
	}
}
