package quorum

import (
	"context"
	"errors"
	"time"
)

// A lock write the engine gave up on (its fan-out's deadline passed with
// no reply from a node) may still reach that node later: its connection
// is dropped, but its bytes can be on their way (a retransmission). Its
// client, told the operation failed, may meanwhile have taken the key
// again with the same token through another proxy, and a late release,
// extend or undo would then delete, shorten or set back that later grant
// (attack17 F4). So each carries a deadline on its node's clock and does
// nothing past it (the node's lateCheck), and the engine does not answer
// while a write it has no reply to could still pass its deadline: it
// takes effect before the client hears of the operation, or never.

// maxHold bounds how long past a fan-out's deadline the engine stays
// silent for a write with no reply (writeUntil's hold).
const maxHold = time.Second

// writeUntil is the deadline field of a lock write to node i whose reply
// the engine waits for until d, and hold: if no reply came by d, the
// engine answers no earlier than d+hold (holdLate). The field is the
// last millisecond that node i's clock may read at d+hold, as the best
// probe reading places it (within its spread: half its round trip, and
// the drift factor's share of the time since), so a write that runs
// after d+hold never passes. hold is twice the spread, so that the
// field is at least the most the clock may read at d, and a write that
// runs by d is not refused however the reading is off. 0 (no limit)
// before the first probe, as publishDecided's, and where that hold would
// pass maxHold: a field then would refuse writes made in time. Callers
// keep d+hold within their own time with fitHold.
func (e *Engine) writeUntil(i int, d time.Time) (until int64, hold time.Duration) {
	h := e.health[i]
	h.mu.Lock()
	at := h.clock.best
	if at.local.IsZero() {
		at = h.clock.last
	}
	h.mu.Unlock()
	if at.local.IsZero() {
		return 0, 0
	}
	df := e.cfg.DriftFactor
	if df >= 0.5 {
		return 0, 0 // no hold covers a spread that grows as fast
	}
	// hold must cover the spread at d+hold, which grows with hold.
	hold = time.Duration(float64(2*at.spread(d, df)+2*time.Millisecond) / (1 - 2*df))
	if hold > maxHold {
		// A field that no write run after d+hold passes would refuse
		// some that ran by d: no limit, as before the first probe. A
		// release answered then deletes on every master that ran it
		// (TestFaultNoValidityLeft, drift_factor 0.5: a field from a
		// reading a second old refused releases in time).
		return 0, 0
	}
	end := d.Add(hold)
	return max(at.node.Add(end.Sub(at.local)-at.spread(end, df)-time.Millisecond).UnixMilli(), 1), hold
}

// fitHold is when a wait for a lock write must end so that its hold
// (writeUntil's at d) ends within room past d: d, or earlier by what the
// hold passes room. The engine gives up on the node sooner rather than
// send the write with no limit or answer past the command's time
// (attack19 U1: with command_timeout at most node_timeout no room was
// left, and every write went with no limit). The hold at the earlier
// time is no longer.
func fitHold(d time.Time, hold, room time.Duration) time.Time {
	if hold > room {
		return d.Add(room - hold)
	}
	return d
}

// writeUntils sets until[j] and holds[j] to writeUntil of every node j at
// d.
func (e *Engine) writeUntils(until []int64, holds []time.Duration, d time.Time) ([]int64, []time.Duration) {
	for j := range e.nodes {
		u, h := e.writeUntil(j, d)
		until, holds = append(until, u), append(holds, h)
	}
	return until, holds
}

// roomPast is how long past d ctx lets the engine wait: to its deadline,
// or maxHold without one.
func roomPast(ctx context.Context, d time.Time) time.Duration {
	if cd, ok := ctx.Deadline(); ok {
		return cd.Sub(d)
	}
	return maxHold
}

// dated runs write on node i, one node's part of a fan-out (fanOutOn:
// ctx's deadline is when it gives up on the node), with its deadline
// field, and, if the node did not answer, holds the caller until the
// node's clock is past that field. parent is the fan-out's own context:
// how long past the deadline the caller may be held; where the hold
// would pass it, write gets a context that ends sooner (fitHold).
func dated[T any](ctx, parent context.Context, e *Engine, i int, write func(ctx context.Context, until int64) (T, error)) (T, error) {
	d, ok := ctx.Deadline()
	if !ok {
		return write(ctx, 0)
	}
	until, hold := e.writeUntil(i, d)
	fit := fitHold(d, hold, roomPast(parent, d))
	cut := fit.Before(d)
	if cut {
		if !fit.After(time.Now()) {
			var zero T
			return zero, errNoTimeToHold
		}
		fctx, cancel := context.WithDeadline(ctx, fit)
		defer cancel()
		ctx, d = fctx, fit
		until, hold = e.writeUntil(i, d)
	}
	v, err := write(ctx, until)
	if until > 0 && !answered(err) {
		holdUntil(d.Add(hold))
	}
	return v, cutShort(err, cut)
}

// waitCut is a timeout of a wait that fitHold cut short: the caller's,
// as one at the command's end is, not the node's, so the breaker does
// not count it (attack19 F1; review32: on the batch path the hold ended
// a hair before the command's timer, and healthy nodes were marked
// down).
type waitCut struct{ error }

func (w waitCut) Unwrap() error { return w.error }

// cutShort marks err a waitCut if the wait was cut and err is a timeout.
func cutShort(err error, cut bool) error {
	if cut && err != nil && (errors.Is(err, context.DeadlineExceeded) || isTimeout(err)) {
		return waitCut{err}
	}
	return err
}

// errNoTimeToHold is dated's answer for a write it did not send: the
// caller's time left is less than the node's hold. It says nothing of
// the node, so the breaker does not count it (noteResult; attack19 F1:
// as a timeout it marked healthy nodes down).
var errNoTimeToHold = errors.New("not sent: too little of the command's time left to wait for the node and hold")

// answered reports whether err says the node ran the call: none, or an
// error reply (LATE among them). Anything else (a timeout, a broken
// connection) may leave the write on its way.
func answered(err error) bool {
	if err == nil {
		return true // before re, which escapes: no allocation then
	}
	var re errorReply
	return errors.As(err, &re)
}

// holdUntil waits until t. Not on the caller's context: the operation's
// answer must not come before a write it has no reply to is past its
// deadline on its node, whether or not the caller still waits.
func holdUntil(t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}
