package proxy

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A command's context ends at its deadline, as context.WithTimeout's
// does: Done closes and Err says why, whether Done was asked for before
// the deadline, after it, or never.
func TestCmdContextEndsAtItsDeadline(t *testing.T) {
	c, cancel := newCmdContext(time.Now(), 30*time.Millisecond)
	defer cancel()
	if err := c.Err(); err != nil {
		t.Fatalf("Err before the deadline = %v", err)
	}
	if dl, ok := c.Deadline(); !ok || time.Until(dl) > 30*time.Millisecond {
		t.Fatalf("Deadline = %v, %v", dl, ok)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the deadline")
	}
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline = %v", err)
	}
	cancel()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the deadline and cancel = %v", err)
	}

	late, cancel2 := newCmdContext(time.Now(), time.Millisecond)
	defer cancel2()
	time.Sleep(5 * time.Millisecond)
	if err := late.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err past the deadline, no Done asked = %v", err)
	}
	select {
	case <-late.Done():
	default:
		t.Fatal("Done asked after the deadline passed is not closed")
	}
}

// Ending a command ends its context, and every context made from it.
func TestCmdContextCancelEndsItAndItsChildren(t *testing.T) {
	c, cancel := newCmdContext(time.Now(), time.Minute)
	early := c.Done()
	child, stopChild := context.WithTimeout(c, time.Minute)
	defer stopChild()
	gone, stopGone := context.WithCancel(c)
	stopGone() // a child ended first leaves nothing behind
	if len(c.after) != 1 {
		t.Fatalf("%d functions registered; want the one live child's", len(c.after))
	}
	cancel()
	for name, ch := range map[string]<-chan struct{}{"Done asked before": early, "Done asked after": c.Done(), "child": child.Done(), "ended child": gone.Done()} {
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not closed by cancel", name)
		}
	}
	if err := c.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Err after cancel = %v", err)
	}
	if err := child.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("child's Err after cancel = %v", err)
	}
	// A context made from an ended one ends at once.
	after, stop := context.WithCancel(c)
	defer stop()
	select {
	case <-after.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a child of an ended context is not ended")
	}
}

type ctxKey struct{}

// Value answers only the engine's question for the command's trace
// (quorum's TestTraceHeldByItsContext asks it; integration's
// TestMonitor* read what the engine noted there), and only once traced.
func TestCmdContextValue(t *testing.T) {
	c, cancel := newCmdContext(time.Now(), time.Minute)
	defer cancel()
	if v := c.Value(ctxKey{}); v != nil {
		t.Fatalf("Value with nothing set = %v", v)
	}
	tr := c.trace(5)
	if v := c.Value(ctxKey{}); v != nil {
		t.Fatalf("Value of another key = %v", v)
	}
	if tr != &c.tr || len(tr.Nodes()) != 0 {
		t.Fatalf("trace = %p, %v; want the context's own, empty", tr, tr.Nodes())
	}
	if a := testing.AllocsPerRun(100, func() {
		c, cancel := newCmdContext(time.Now(), time.Minute)
		c.trace(5)
		cancel()
	}); a != 1 {
		t.Errorf("a traced command's context allocated %v times; want 1", a)
	}
}
