package quorum

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// A restarted node may have lost the locks it granted, so until every one
// of them has expired (max_ttl after its start, plus drift) its grants
// must not count. Telling a restart from a first deployment needs memory
// older than this proxy: each node keeps the membership record, MembersKey,
// a hash of node address -> the run_id the proxies verified there. A node
// whose run_id differs from what any reachable record (or this proxy) has
// for its address restarted; a node that no record knows is new, and
// serves at once. A restarted node's new run_id is written only once its
// quarantine is over, so a proxy started later still sees the mismatch
// and computes the same end, from the node's own uptime.

// apply acts on a successful probe of node i: the clock check, then the
// restart check. gen is the node's generation when the probe began.
func (e *Engine) apply(ctx context.Context, i int, p Probe, gen uint64) {
	h := e.health[i]
	now := time.Now()
	h.mu.Lock()
	if h.gen != gen && h.runID != p.RunID {
		// A new connection saw another process after this probe began.
		h.mu.Unlock()
		h.poke()
		return
	}
	h.runID = p.RunID
	// uptime_in_seconds is the difference of two whole-second clock
	// readings, so it can exceed the true uptime by almost a second: the
	// start it gives is moved a second later, so that it is never early
	// and a quarantine never ends too soon.
	h.start = p.Local.Add(time.Second - p.Uptime)
	h.fsyncAlways = p.AOF && p.Appendfsync == "always"
	if p.Loading {
		h.setLocked(StateUnverified, time.Time{}, "loading")
		h.mu.Unlock()
		return
	}
	if reason := clockCheck(&h.clock, p, e.cfg.ClockJumpLimit, e.cfg.DriftFactor); reason != "" {
		e.quarantineLocked(h, now.Add(e.quarantine()), QuarantineClock, reason)
		e.markLocked(h, QuarantineClock)
	}
	switch p.RunID {
	case h.verified:
		e.settleLocked(h, now)
		h.mu.Unlock()
		return
	case h.pending:
		if now.Before(h.until) {
			e.settleLocked(h, now) // quarantined again after a down spell
			h.mu.Unlock()
			return
		}
		h.previous, h.verified, h.pending = h.verified, p.RunID, ""
		e.settleLocked(h, now)
		h.mu.Unlock()
		e.writeRecord(ctx, h.addr, p.RunID)
		return
	}
	known := h.verified
	h.mu.Unlock()

	// A process this proxy has not verified: new, or restarted?
	recs := each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (map[string]string, error) {
		return n.Members(ctx)
	})
	old := ""
	for _, r := range recs {
		if v, ok := r.v[h.addr]; r.err == nil && ok && v != p.RunID {
			old = v
		}
	}
	if known != "" && known != p.RunID {
		old = known
	}
	h.mu.Lock()
	if h.runID != p.RunID {
		h.mu.Unlock()
		h.poke()
		return
	}
	until := h.start.Add(e.quarantine())
	switch {
	case old == "": // no record disagrees: a first deployment, or the same process
	case e.cfg.TrustFsyncAlways && h.fsyncAlways:
		e.cfg.Log.Info("node restarted; not quarantined: it runs appendfsync always", "node", h.addr, "run_id", p.RunID)
	case now.Before(until):
		h.verified, h.pending = old, p.RunID
		e.quarantineLocked(h, until, QuarantineRestart, "restarted")
		h.mu.Unlock()
		return
	}
	if old != "" {
		h.previous = old
	}
	h.verified, h.pending = p.RunID, ""
	for _, r := range recs {
		if r.err == nil {
			e.lostLocked(h, r.v[lostPrefix+h.addr], clockReading{node: p.Time, local: p.Local, rtt: p.RTT})
		}
	}
	e.settleLocked(h, now)
	h.mu.Unlock()
	e.writeRecord(ctx, h.addr, p.RunID)
}

// lostPrefix starts a field of the membership record that says a node's
// process may have lost locks without a restart: its data (FLUSHALL) or
// its keys' expiry (a clock jump). lostPrefix + addr -> the run_id, the
// end of its quarantine on the node's own clock in Unix milliseconds, and
// the kind. The proxy that finds it writes it to every node, so that
// every other proxy, also one that could not see it (its probes missed
// the empty record, which the first proxy refilled, or it started after
// the jump), quarantines the node until the same end.
const lostPrefix = "lost:"

// reasonDataLost is the reason shown for a node whose data was lost.
const reasonDataLost = "data lost (membership record gone)"

// lostMark is the field's value for process runID, quarantined until
// end on its own clock, for kind.
func lostMark(runID string, end time.Time, kind QuarantineReason) string {
	return runID + " " + strconv.FormatInt(end.UnixMilli(), 10) + " " + string(kind)
}

// markLocked makes the mark of h's quarantine, to be written to every
// record by publishMark. h.mu must be held.
func (e *Engine) markLocked(h *health, kind QuarantineReason) {
	if at := h.clock.last; !at.local.IsZero() && h.runID != "" {
		h.lost = lostMark(h.runID, at.node.Add(h.until.Sub(at.local)), kind)
		h.publish = h.lost
	}
}

// publishMark writes node i's new mark, if it has one, to every record.
func (e *Engine) publishMark(ctx context.Context, i int) {
	h := e.health[i]
	h.mu.Lock()
	mark := h.publish
	h.publish = ""
	h.mu.Unlock()
	if mark != "" {
		e.writeFields(ctx, map[string]string{lostPrefix + h.addr: mark})
	}
}

// lostLocked quarantines h as mark says, if mark is about its current
// process and its end is still ahead; at is a reading of h's clock
// beside the proxy's, to move the end onto the proxy's clock (late by
// the reading's round trip, never early). A node down or unverified is
// quarantined when it is back (settleLocked). h.mu must be held.
func (e *Engine) lostLocked(h *health, mark string, at clockReading) {
	runID, rest, _ := strings.Cut(mark, " ")
	ms, kind, _ := strings.Cut(rest, " ")
	if runID != h.runID || mark == h.lost || at.local.IsZero() {
		return
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return
	}
	h.lost = mark
	until := at.local.Add(time.UnixMilli(n).Sub(at.node) + at.rtt)
	if !time.Now().Before(until) {
		return
	}
	k, reason := QuarantineDataLost, reasonDataLost
	if QuarantineReason(kind) == QuarantineClock {
		k, reason = QuarantineClock, "clock jumped (seen by another proxy)"
	}
	if h.state == StateUp || h.state == StateQuarantined {
		e.quarantineLocked(h, until, k, reason)
		return
	}
	if until.After(h.until) {
		h.until, h.quarantined = until, reason
	}
}

// quarantine is how long a node stays out of the quorum: until every lock
// it may have lost has expired.
func (e *Engine) quarantine() time.Duration {
	return e.cfg.MaxTTL + e.Drift(e.cfg.MaxTTL)
}

// quarantineLocked quarantines h until then (or later, if a quarantine
// already runs that long), logging the change. h.mu must be held.
func (e *Engine) quarantineLocked(h *health, until time.Time, kind QuarantineReason, reason string) {
	if h.until.After(until) {
		until = h.until
	}
	if h.state == StateQuarantined && h.until.Equal(until) && h.reason == reason {
		return
	}
	h.setLocked(StateQuarantined, until, reason)
	if h.obs != nil {
		h.obs.NodeQuarantined(h.node, h.addr, kind)
	}
	e.cfg.Log.Warn("node quarantined", "node", h.addr, "reason", reason,
		"until", until.UTC().Format(time.RFC3339Nano), "run_id", h.runID)
}

// settleLocked makes h up, or quarantined again if its quarantine still
// runs (it was down or unverified meanwhile), and logs the change. h.mu
// must be held.
func (e *Engine) settleLocked(h *health, now time.Time) {
	prev := h.state
	if now.Before(h.until) {
		if prev != StateQuarantined {
			h.setLocked(StateQuarantined, h.until, h.quarantined)
			e.cfg.Log.Warn("node quarantined", "node", h.addr, "reason", h.quarantined,
				"until", h.until.UTC().Format(time.RFC3339Nano), "run_id", h.runID)
		}
		return
	}
	if prev == StateUp {
		return
	}
	h.setLocked(StateUp, time.Time{}, "")
	if prev == StateQuarantined {
		e.cfg.Log.Info("node quarantine over", "node", h.addr, "run_id", h.runID)
		return
	}
	e.cfg.Log.Info("node up", "node", h.addr, "run_id", h.runID)
}

// writeRecord sets addr's run_id in the membership record of every node
// not down. A node it misses is filled in later by syncRecord.
func (e *Engine) writeRecord(ctx context.Context, addr, runID string) {
	e.writeFields(ctx, map[string]string{addr: runID})
}

// writeFields sets fields in the membership record of every node not
// down.
func (e *Engine) writeFields(ctx context.Context, fields map[string]string) {
	down := make(map[Node]bool, len(e.nodes))
	for i, n := range e.nodes {
		down[n] = e.health[i].down.Load()
	}
	each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (struct{}, error) {
		if down[n] {
			return struct{}{}, nil
		}
		return struct{}{}, n.SetMembers(ctx, fields)
	})
}

// syncRecord compares node i's membership record rec with what the engine
// verified. A missing field is filled in. A field that names another
// run_id for an up node means that node restarted while no record could
// be read (or this proxy started after): it is quarantined for what is
// left of max_ttl since its start, or, if that is over, the field is
// corrected.
func (e *Engine) syncRecord(ctx context.Context, i int, rec map[string]string) {
	now := time.Now()
	// A process whose own record vanished lost its data without a
	// restart (FLUSHALL): the locks it granted are gone too.
	hi := e.health[i]
	hi.mu.Lock()
	switch {
	case len(rec) > 0:
		hi.recorded = hi.runID
	case hi.recorded == hi.runID && hi.runID == hi.verified && hi.state == StateUp:
		e.quarantineLocked(hi, now.Add(e.quarantine()), QuarantineDataLost, reasonDataLost)
		e.markLocked(hi, QuarantineDataLost)
	}
	hi.mu.Unlock()
	fix := map[string]string{}
	for _, h := range e.health {
		h.mu.Lock()
		mark := rec[lostPrefix+h.addr]
		e.lostLocked(h, mark, h.clock.last)
		if h.lost != "" && now.Before(h.until) && !strings.HasPrefix(mark, h.runID+" ") {
			// The mark is missing here (a write lost under load, or the
			// node flushed again): refilled while the quarantine runs.
			fix[lostPrefix+h.addr] = h.lost
		}
		v, ok := rec[h.addr]
		until := h.start.Add(e.quarantine())
		switch {
		case h.state == StateQuarantined && h.verified != "" && !ok:
			// Refill, and in a restart quarantine (where verified is the
			// previous process) keep the restart visible to proxies that
			// start later.
			fix[h.addr] = h.verified
		case h.state != StateUp || h.verified == "" || v == h.verified:
		case ok && v != h.previous && now.Before(until) && !(e.cfg.TrustFsyncAlways && h.fsyncAlways):
			h.verified, h.pending = v, h.verified
			e.quarantineLocked(h, until, QuarantineRestart, "restarted")
		default:
			fix[h.addr] = h.verified
		}
		h.mu.Unlock()
	}
	if len(fix) > 0 {
		e.nodes[i].SetMembers(ctx, fix)
	}
}
