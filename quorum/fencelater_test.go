package quorum

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// waitRecords writes every FENCE record still waiting for the nodes not
// asked, and waits for the writes.
func waitRecords(e *Engine) {
	e.later.mu.Lock()
	var rs []*restRecord
	for _, r := range e.later.m {
		rs = append(rs, r)
	}
	e.later.mu.Unlock()
	for _, r := range rs {
		e.writeRest(r)
	}
	e.writes.Wait()
}

// TestFenceRecordOnTheRestWaits: the record of a FENCE the quorum asked
// first agreed on reaches the nodes not asked recordWait after the reply;
// a release through the engine before then drops it (the release deletes
// the record anyway); a repeated FENCE before then writes it first; Close
// writes what still waits.
func TestFenceRecordOnTheRestWaits(t *testing.T) {
	const size = 3
	var down atomic.Int32
	down.Store(-1)
	rounds, writes := make([]atomic.Int64, size), make([]atomic.Int64, size)
	var nodes []Node
	for i := range size {
		nodes = append(nodes, countingWrites{redisNode: startRedis(t).node(t), i: int32(i), n: &writes[i], rounds: &rounds[i], down: &down})
	}
	e := New(Config{MaxTTL: 10 * time.Second}, nodes...)
	e.later.wait = time.Hour // what waits is written by a repeat, or Close, or waitRecords
	ctx := t.Context()
	if _, err := e.Incr(ctx, "seed", 1); err != nil {
		t.Fatalf("Incr: %v", err)
	}
	reset := func() {
		for i := range size {
			rounds[i].Store(0)
			writes[i].Store(0)
		}
	}
	// restWrites returns how many record writes reached the nodes the
	// last FENCE did not ask, and how many nodes it did not ask.
	restWrites := func() (w int64, rest int) {
		for i := range size {
			if rounds[i].Load() == 0 {
				rest++
				w += writes[i].Load()
			}
		}
		return w, rest
	}
	n := 0
	var last int64
	hold := func() Lock {
		t.Helper()
		n++
		l := Lock{Keys: []string{"k"}, Token: "t" + strconv.Itoa(n)}
		if _, err := e.Acquire(ctx, l, 5*time.Second); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		reset()
		f, err := e.Fence(ctx, "k", l.Token)
		if err != nil || f.Token <= last {
			t.Fatalf("Fence = %+v, %v; want above %d", f, err, last)
		}
		last = f.Token
		return l
	}
	// Warm up until a quorum asked first agrees.
	for range 3 {
		l := hold()
		waitRecords(e)
		e.Release(ctx, l)
	}

	l := hold()
	if w, rest := restWrites(); w != 0 || rest != size-e.quorum {
		t.Fatalf("at the reply: %d writes on the %d nodes not asked; want none yet, %d nodes", w, rest, size-e.quorum)
	}
	waitRecords(e)
	if w, rest := restWrites(); w != int64(rest) {
		t.Errorf("after the wait: %d writes on the %d nodes not asked; want one each", w, rest)
	}
	e.Release(ctx, l)

	l = hold()
	if _, err := e.Release(ctx, l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitRecords(e)
	if w, _ := restWrites(); w != 0 {
		t.Errorf("released at once: %d writes on the nodes not asked; want none", w)
	}

	l = hold()
	// A repeat at once writes the record first, then waits with its own.
	if f, err := e.Fence(ctx, "k", l.Token); err != nil || f.Token != last {
		t.Fatalf("a repeat: %+v, %v; want %d", f, err, last)
	}
	if w, rest := restWrites(); w != int64(rest) {
		t.Errorf("a repeat before the wait: %d writes on the %d nodes not asked before it; want one each", w, rest)
	}
	waitRecords(e)
	if w, rest := restWrites(); w != 2*int64(rest) {
		t.Errorf("a repeat, then the wait: %d writes on the %d nodes not asked; want two each", w, rest)
	}
	e.Release(ctx, l)

	// With the engine's own wait, the timer writes it.
	e.later.wait = recordWait
	l = hold()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if w, rest := restWrites(); w == int64(rest) {
			break
		} else if time.Now().After(end) {
			t.Fatalf("recordWait after the reply: %d writes on the %d nodes not asked after 5s; want one each", w, rest)
		}
	}
	e.Release(ctx, l)

	e.later.wait = time.Hour
	l = hold()
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if w, rest := restWrites(); w != int64(rest) {
		t.Errorf("Close at once: %d writes on the %d nodes not asked; want one each", w, rest)
	}
}

// TestCounterUnavailableNamesUnseededNodes: a counter round short of
// seeded nodes names them as unseeded, not quarantined (attack13): no
// lock quarantine is involved, and INFO shows none.
func TestCounterUnavailableNamesUnseededNodes(t *testing.T) {
	reads := []result[CounterEntry]{
		{v: CounterEntry{State: CounterSeeded, Value: 4}},
		{v: CounterEntry{State: CounterPending}},
		{err: errors.New("down")},
	}
	err := counterUnavailable(reads, 1)
	want := "quorum: unavailable: 1 granted, 1 unseeded, 0 denied, 1 failed of 3 nodes"
	if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("counterUnavailable = %v; want %q…, matching ErrUnavailable", err, want)
	}
}

// TestFenceWindowFollowsTheCounters: the window's place follows the last
// round's counters, down too (a new deployment's start from zero), so
// that it moves on again: before, it kept the highest counter ever seen.
func TestFenceWindowFollowsTheCounters(t *testing.T) {
	var nodes []Node
	for i := range 5 {
		nodes = append(nodes, &fakeNode{addr: strconv.Itoa(i)})
	}
	e := New(Config{MaxTTL: time.Second}, nodes...)
	round := func(v int64) []result[CounterEntry] {
		rs := make([]result[CounterEntry], 5)
		for i := range rs {
			rs[i] = result[CounterEntry]{v: CounterEntry{State: CounterSeeded, Value: v}}
		}
		rs[4].err = errNotAsked
		return rs
	}
	e.noteCounters(round(10 * fenceRotate))
	if got := e.hint.last.Load(); got != 10*fenceRotate {
		t.Fatalf("after a round at %d: the window's place %d", 10*fenceRotate, got)
	}
	e.noteCounters(round(3))
	if got := e.hint.last.Load(); got != 3 {
		t.Errorf("after a round at 3 (a new deployment): the window's place %d; want 3", got)
	}
}
