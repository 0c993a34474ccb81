package quorum

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
