package proxy

import (
	"context"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// cmdContext is a command's context: it ends at the command's deadline
// (command_timeout), or when the command returns, and at nothing before
// its deadline while the command runs (EndsAtDeadline). Its Done channel,
// and the timer that closes it, are made only when something asks for
// Done: a fan-out over pipelined nodes waits with a timer of its own, so
// most commands need neither, where context.WithTimeout starts a timer
// and allocates three times for each.
type cmdContext struct {
	deadline time.Time
	// tr is the command's trace, what Value answers for it once traced
	// (trace): held here, it costs the command no allocation of its own.
	tr     quorum.Trace
	traced bool

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	timer *time.Timer   // closes done at the deadline
	err   error
	// after are the functions AfterFunc registered, run at the end.
	after map[*afterCmd]struct{}
}

// afterCmd is one function AfterFunc registered.
type afterCmd struct{ f func() }

// newCmdContext returns a command's context with timeout from now, and
// the function that ends it, which the command calls when it returns.
func newCmdContext(now time.Time, timeout time.Duration) (*cmdContext, func()) {
	c := &cmdContext{deadline: now.Add(timeout)}
	return c, c.cancel
}

func (c *cmdContext) cancel() { c.end(context.Canceled) }

func (c *cmdContext) Deadline() (time.Time, bool) { return c.deadline, true }

// Value answers the engine's question for the command's trace, once
// traced, and nothing else.
func (c *cmdContext) Value(key any) any {
	if c.traced && quorum.IsTraceKey(key) {
		return &c.tr
	}
	return nil
}

// trace starts the command's trace over nodes nodes and returns it.
// Called before the command runs, from its own goroutine.
func (c *cmdContext) trace(nodes int) *quorum.Trace {
	c.tr.Init(nodes)
	c.traced = true
	return &c.tr
}

func (c *cmdContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err == nil {
		if d := time.Until(c.deadline); d > 0 {
			c.timer = time.AfterFunc(d, func() { c.end(context.DeadlineExceeded) })
		} else {
			c.endLocked(context.DeadlineExceeded)
		}
	} else {
		close(c.done)
	}
	return c.done
}

// Err reads the (monotonic) clock: without a timer, the deadline passing
// is seen here.
func (c *cmdContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && time.Until(c.deadline) <= 0 {
		c.endLocked(context.DeadlineExceeded)
	}
	return c.err
}

// EndsAtDeadline reports that nothing ends the context before its
// deadline while the command runs: quorum's fan-out, which has a timer
// for the deadline, then waits on no channel of the context's.
func (c *cmdContext) EndsAtDeadline() bool { return true }

// AfterFunc runs f in a goroutine of its own once c ends, as
// context.AfterFunc does; the context package uses it for a context made
// from c, rather than a goroutine that waits for c's Done.
func (c *cmdContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &afterCmd{f: f}
	if c.after == nil {
		c.after = map[*afterCmd]struct{}{}
	}
	c.after[a] = struct{}{}
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.after[a]
		delete(c.after, a)
		return ok
	}
}

func (c *cmdContext) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

func (c *cmdContext) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	for a := range c.after {
		go a.f()
	}
	c.after = nil
}
