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
// for its address restarted; a node that no record knows, of a quorum
// read, is new, and serves at once. A restarted node's new run_id is written only once its
// quarantine is over, so a proxy started later still sees the mismatch
// and computes the same end, from the node's own uptime.

// probeAction is the node I/O a decision on a probe leaves to do, once
// the health lock is released.
type probeAction uint8

const (
	probeDone probeAction = iota // nothing
	// probeAgain: another process was seen after the probe began; wake
	// the monitor to probe it.
	probeAgain
	// probeRecords: a process not verified yet; read every node's
	// membership record and decide with them (recordsRead).
	probeRecords
	// probeWrite: write the newly verified run_id to every record.
	probeWrite
)

// apply acts on a successful probe of node i: the clock check, then the
// restart check. gen is the node's generation when the probe began. Each
// step is decided under the health lock (probed, then, for a process not
// verified yet, recordsRead), and the node I/O it calls for runs after.
func (e *Engine) apply(ctx context.Context, i int, p Probe, gen uint64) {
	h := e.health[i]
	now := time.Now()
	h.mu.Lock()
	act, known := e.probed(h, p, gen, now)
	h.mu.Unlock()
	if act == probeRecords {
		// A process this proxy has not verified: new, or restarted?
		recs := each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (map[string]string, error) {
			return n.Members(ctx)
		})
		read := time.Now()
		h.mu.Lock()
		act = e.recordsRead(h, p, known, recs, now, read)
		h.mu.Unlock()
	}
	switch act {
	case probeAgain:
		h.poke()
	case probeWrite:
		e.writeRecord(ctx, h.addr, p.RunID)
	}
}

// probed decides on probe p of h's node at now, begun at generation gen:
// the clock check, then whether its process is the verified one, the
// restarted one whose quarantine ends, or one to look up in the
// membership records (probeRecords, with known, the run_id verified so
// far). It does no I/O. h.mu must be held.
func (e *Engine) probed(h *health, p Probe, gen uint64, now time.Time) (act probeAction, known string) {
	if h.gen != gen && h.runID != p.RunID {
		// A new connection saw another process after this probe began.
		return probeAgain, ""
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
		return probeDone, ""
	}
	if reason := clockCheck(&h.clock, p, e.cfg.ClockJumpLimit, e.cfg.DriftFactor); reason != "" {
		e.quarantineLocked(h, now.Add(e.quarantine()), QuarantineClock, reason)
		e.markLocked(h, QuarantineClock)
	}
	switch p.RunID {
	case h.verified:
		e.settleLocked(h, now)
		return probeDone, ""
	case h.pending:
		if now.Before(h.until) {
			e.settleLocked(h, now) // quarantined again after a down spell
			return probeDone, ""
		}
		h.previous, h.verified, h.pending = h.verified, p.RunID, ""
		e.settleLocked(h, now)
		return probeWrite, ""
	}
	return probeRecords, h.verified
}

// recordsRead decides on probe p of h's node, decided at now by probed,
// with every node's membership record as read at read: a process that a
// record, or this proxy (known), has another run_id for restarted, and
// is quarantined until max_ttl after its start (unless it runs
// appendfsync always and that is trusted); one no record knows stays
// unverified while fewer than a quorum of the records were read;
// otherwise it is verified, with the lost marks the records hold for it.
// It does no I/O. h.mu must be held.
func (e *Engine) recordsRead(h *health, p Probe, known string, recs []result[map[string]string], now, read time.Time) probeAction {
	if h.runID != p.RunID {
		return probeAgain // another process was seen meanwhile
	}
	old, nread := "", 0
	for _, r := range recs {
		if r.err == nil {
			nread++
		}
		if v, ok := r.v[h.addr]; r.err == nil && ok && v != p.RunID {
			old = v
		}
	}
	if known != "" && known != p.RunID {
		old = known
	}
	until := h.start.Add(e.quarantine())
	switch {
	case old == "" && nread < e.quorum:
		// A record this proxy could not read may know an older process
		// (a restart that lost its locks): not verified, so not counted,
		// until a quorum of the records were read and none does. The
		// next probe reads them again.
		h.setLocked(StateUnverified, time.Time{}, reasonRecordsUnread)
		return probeDone
	case old == "": // no record disagrees: a first deployment, or the same process
	case e.cfg.TrustFsyncAlways && h.fsyncAlways:
		e.cfg.Log.Info("node restarted; not quarantined: it runs appendfsync always", "node", h.addr, "run_id", p.RunID)
	case now.Before(until):
		h.verified, h.pending = old, p.RunID
		e.quarantineLocked(h, until, QuarantineRestart, "restarted")
		return probeDone
	}
	if old != "" {
		h.previous = old
	}
	h.verified, h.pending = p.RunID, ""
	for _, r := range recs {
		if r.err == nil {
			e.lostLocked(h, r.v[lostPrefix+h.addr], clockReading{node: p.Time, local: p.Local, rtt: p.RTT}, read)
		}
	}
	e.settleLocked(h, now)
	return probeWrite
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

// reasonRecordsUnread is the reason shown for a node no record read
// knows, while too few records could be read to call it new.
const reasonRecordsUnread = "too few membership records read"

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
// process and its end is still ahead of now; at is a reading of h's clock
// beside the proxy's, to move the end onto the proxy's clock (late by
// the reading's round trip, never early). A node down or unverified is
// quarantined when it is back (settleLocked). h.mu must be held.
func (e *Engine) lostLocked(h *health, mark string, at clockReading, now time.Time) {
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
	if !now.Before(until) {
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
		e.lostLocked(h, mark, h.clock.last, time.Now())
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
