package quorum

import (
	"context"
	"time"
)

// A lock write the engine gave up on (its fan-out's deadline passed with
// no reply from a node) may still reach that node later: its connection
// is dropped, but its bytes can be on their way (a retransmission). Its
// client, told the operation failed, may meanwhile have taken the key
// again with the same token through another proxy, and a late release,
// extend or undo would then delete, shorten or set back that later grant
// (attack17 F4). So each carries a deadline on its node's clock, and does
// nothing past it (lateCheck): it takes effect before the engine gives up
// on it, as far as that node's clock can tell, or never.

// writeUntil is the last millisecond on node i's clock at which a lock
// write that the engine gives up on at d may still take effect there: d
// on that clock (onNodeClock), less what that reading may be off by, so
// that a write that runs after d never passes. The probe's TIME ran
// somewhere within its round trip, at most half of it from the local
// reading; the node's clock may run slow by the drift factor's share of
// the time since; and the script compares whole milliseconds. 0 (no
// limit) before the first probe, as publishDecided's.
func (e *Engine) writeUntil(i int, d time.Time) int64 {
	h := e.health[i]
	h.mu.Lock()
	at := h.clock.last
	h.mu.Unlock()
	if at.local.IsZero() {
		return 0
	}
	since := d.Sub(at.local)
	off := at.rtt/2 + time.Duration(e.cfg.DriftFactor*float64(max(since, 0))) + time.Millisecond
	return max(at.node.Add(since-off).UnixMilli(), 1)
}

// writeUntils appends writeUntil of every node at d to buf.
func (e *Engine) writeUntils(buf []int64, d time.Time) []int64 {
	for i := range e.nodes {
		buf = append(buf, e.writeUntil(i, d))
	}
	return buf
}

// untilOf is writeUntil of node i at ctx's deadline: one node's part of
// a fan-out (fanOutOn), which gives up on it then. 0 without a deadline.
func (e *Engine) untilOf(ctx context.Context, i int) int64 {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return e.writeUntil(i, d)
}
