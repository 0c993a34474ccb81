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
// a hash of node address -> the run_id the proxies verified there, and in
// its own record selfField, the process whose data was verified there.
// A process is verified at once only when its own record names it, or
// when the records read (a quorum at least) name no process but the
// nodes this proxy serves now (a first deployment). Otherwise it lost its
// data: restarted (another run_id is known for it), or flushed, or known
// only under another address; it is quarantined, and its new run_id is
// written only once the quarantine is over, so a proxy started later
// still sees the loss and, from the mark the first proxy wrote, the same
// end.

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
	// probeWrite: write the newly verified run_id to every record, and
	// as the selfField of its own.
	probeWrite
	// probeWriteKnown: the same, but its own record's selfField named it
	// already: it is not written again (a flush since the read would be
	// hidden).
	probeWriteKnown
	// probeSettle: the verified process, back from down or unverified;
	// it counts again only once its own record is read (syncRecord),
	// which tells whether it was flushed meanwhile.
	probeSettle
)

// apply acts on a successful probe of node i: the clock check, then the
// restart check. gen is the node's generation when the probe began. Each
// step is decided under the health lock (probed, then, for a process not
// verified yet, recordsRead), and the node I/O it calls for runs after.
// It reports whether the node counts again only once its own record is
// read (probeSettle).
func (e *Engine) apply(ctx context.Context, i int, p Probe, gen uint64) (settle bool) {
	h := e.health[i]
	now := time.Now()
	h.mu.Lock()
	act, known := e.probed(h, p, gen, now)
	h.mu.Unlock()
	if act == probeRecords {
		// A process this proxy has not verified: new, or restarted?
		current := e.currentRunIDs()
		recs := each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (map[string]string, error) {
			return n.Members(ctx)
		})
		read := time.Now()
		e.learnMaxTTLs(recs, read)
		h.mu.Lock()
		act = e.recordsRead(h, i, p, known, recs, current, now, read)
		h.mu.Unlock()
	}
	switch act {
	case probeAgain:
		h.poke()
	case probeWrite, probeWriteKnown:
		e.writeRecord(ctx, i, p.RunID, act == probeWrite)
	}
	return act == probeSettle
}

// currentRunIDs is the run_id each node was last seen with.
func (e *Engine) currentRunIDs() map[string]bool {
	ids := make(map[string]bool, len(e.health))
	for _, h := range e.health {
		h.mu.Lock()
		if h.runID != "" {
			ids[h.runID] = true
		}
		h.mu.Unlock()
	}
	return ids
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
	h.fsyncAlways = p.AOF && p.Appendfsync == "always" && p.NoFsyncOnRewrite == "no"
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
		if h.state != StateUp && !now.Before(h.until) {
			return probeSettle, "" // it would count: first its own record
		}
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
	if h.state == StateUp {
		h.setLocked(StateUnverified, time.Time{}, "new run_id")
	}
	return probeRecords, h.verified
}

// recordsRead decides on probe p of node i (h), decided at now by
// probed, with every node's membership record as read at read; current
// holds the run_ids this proxy's nodes were last seen with. Without a
// quorum of records, its own among them, it stays unverified. A process
// its own record names, or a first deployment, is verified, with the
// lost marks the records hold for it. Otherwise it lost its data: a
// restart (unless it runs appendfsync always and that is trusted) is
// quarantined until max_ttl after its start, and after this proxy last
// saw the process before it; a loss with no restart known (a flush, or a
// node known only by another address) until max_ttl from now, or the end
// that another proxy's mark gives. It does no I/O. h.mu must be held.
func (e *Engine) recordsRead(h *health, i int, p Probe, known string, recs []result[map[string]string], current map[string]bool, now, read time.Time) probeAction {
	if h.runID != p.RunID {
		return probeAgain // another process was seen meanwhile
	}
	n := 0
	for _, r := range recs {
		if r.err == nil {
			n++
		}
	}
	if n < Quorum(len(recs)) || recs[i].err != nil {
		h.setLocked(StateUnverified, time.Time{}, reasonRecordsUnread)
		return probeDone
	}
	own := recs[i].v[selfField]
	old := ""
	for _, r := range recs {
		if v, ok := r.v[h.addr]; r.err == nil && ok && v != p.RunID {
			old = v
		}
	}
	if known != "" && known != p.RunID {
		old = known
	}
	at := clockReading{node: p.Time, local: p.Local, rtt: p.RTT}
	var until time.Time
	kind, reason := QuarantineRestart, "restarted"
	switch {
	case own == p.RunID && (known == "" || known == p.RunID), old == "" && legacyRecord(recs, i, h.addr, p.RunID):
		// Its data is the data verified (unless this proxy saw another
		// process since: then another proxy verified it, maybe from an
		// uptime a stepped clock made long, and this one times it).
	case old == "" && firstDeployment(recs, p.RunID, current):
		// There was none. (A majority of masters restarted empty, the
		// rest unreachable, looks the same: beyond what Redlock survives.)
	case own != "" && own == old && e.cfg.TrustFsyncAlways && h.fsyncAlways && recs[i].v[fsyncField] == old:
		// Its own record is the process before it's, which synced every
		// write: its data came back.
		e.cfg.Log.Info("node restarted; not quarantined: it runs appendfsync always", "node", h.addr, "run_id", p.RunID)
	case own != "" || old != "":
		// The process before it may have granted locks it lost: until
		// max_ttl after its start, or, if this proxy saw that process,
		// after now (a clock stepped after the restart makes the uptime
		// too long, and that process may have granted until it ended).
		until = h.start.Add(e.quarantine())
		if known != "" && known != p.RunID {
			if t := now.Add(e.quarantine()); t.After(until) {
				until = t
			}
		}
	default:
		// No restart is known: the data went while the process ran, or
		// the records know the node by another address.
		kind, reason = QuarantineDataLost, reasonDataLost
		until = now.Add(e.quarantine())
		if end, ok := e.markEnd(recs, h, at, read); ok {
			until = end
		}
	}
	if old == "" && own != p.RunID {
		old = own
	}
	if now.Before(until) {
		h.verified, h.pending = old, p.RunID
		e.quarantineLocked(h, until, kind, reason)
		e.applyMarks(h, recs, at, read)
		e.markLocked(h, kind)
		return probeDone
	}
	if old != "" {
		h.previous = old
	}
	h.verified, h.pending = p.RunID, ""
	e.applyMarks(h, recs, at, read)
	e.settleLocked(h, now)
	if own == p.RunID {
		return probeWriteKnown
	}
	return probeWrite
}

// applyMarks acts on the lost marks the records hold for h's process.
// h.mu must be held.
func (e *Engine) applyMarks(h *health, recs []result[map[string]string], at clockReading, read time.Time) {
	for _, r := range recs {
		if r.err == nil {
			for _, mark := range marksOf(r.v, h.runID) {
				e.lostLocked(h, mark, at, read)
			}
		}
	}
}

// marksOf is every lost mark in rec about process runID, whatever the
// address its field names the node by: a proxy that spells the address
// otherwise (localhost for 127.0.0.1) wrote it, and a run_id names one
// process of one node.
func marksOf(rec map[string]string, runID string) []string {
	var marks []string
	for f, v := range rec {
		if strings.HasPrefix(f, lostPrefix) && runID != "" && strings.HasPrefix(v, runID+" ") {
			marks = append(marks, v)
		}
	}
	return marks
}

// markEnd is the latest end, after now, of the lost marks the records
// hold for h's process, on the proxy's clock. h.mu must be held.
func (e *Engine) markEnd(recs []result[map[string]string], h *health, at clockReading, now time.Time) (end time.Time, ok bool) {
	for _, r := range recs {
		if r.err != nil {
			continue
		}
		for _, mark := range marksOf(r.v, h.runID) {
			if t, _, good := markUntil(mark, h.runID, at); good && t.After(now) && t.After(end) {
				end, ok = t, true
			}
		}
	}
	return end, ok
}

// firstDeployment reports whether the records read name no process but
// the nodes' current ones, and not runID: no node that data was verified
// on is missing, so nothing runID's node granted can have been lost.
func firstDeployment(recs []result[map[string]string], runID string, current map[string]bool) bool {
	for _, r := range recs {
		for f, v := range r.v {
			if r.err != nil || f == fsyncField || strings.HasPrefix(f, lostPrefix) || strings.HasPrefix(f, maxTTLPrefix) {
				continue
			}
			if v == runID || !current[v] {
				return false
			}
		}
	}
	return true
}

// legacyRecord reports whether node i's own record names runID by the
// node's address while no record read has a selfField: records written
// before selfField was, which a current proxy never leaves so.
func legacyRecord(recs []result[map[string]string], i int, addr, runID string) bool {
	for _, r := range recs {
		if _, ok := r.v[selfField]; ok && r.err == nil {
			return false
		}
	}
	return recs[i].v[addr] == runID
}

// selfField, in a node's own membership record only, names the process
// whose data the proxies verified there. It is written when a process is
// verified and never refilled: a node whose record lacks it, or names
// another process, lost its data since (a restart, a flush), whatever
// address a proxy knows it by.
const selfField = "self"

// fsyncField, in a node's own membership record only, names the verified
// process if the proxies last saw it run appendonly yes and appendfsync
// always (else it is empty): trust_fsync_always trusts a restart only
// when the process before it synced every write, not when only the new
// one does.
const fsyncField = "fsync"

// fsyncValue is fsyncField's value for h's process. h.mu must be held.
func fsyncValue(h *health) string {
	if h.fsyncAlways {
		return h.runID
	}
	return ""
}

// maxTTLPrefix + a max_ttl in ms -> when a proxy with that max_ttl last
// wrote it (Unix ms, its clock): a quarantine lasts for the longest
// max_ttl any proxy over these masters grants, not only this proxy's.
const maxTTLPrefix = "max_ttl:"

// maxTTLRefresh is how often a proxy rewrites its max_ttl field, and
// maxTTLSlack how long past a lock's longest life a field still counts
// (its refreshes, and the proxies' clocks, apart).
const (
	maxTTLRefresh = time.Minute
	maxTTLSlack   = 3 * time.Minute
)

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

// reasonOwnRecordUnread is the reason shown for a verified process whose
// own record a probe could not read: a FLUSHALL there would go unseen.
const reasonOwnRecordUnread = "its own membership record unread"

// ownRecordUnread makes node i, if it counts, not count until a probe
// reads its own record again.
func (e *Engine) ownRecordUnread(i int, err error) {
	h := e.health[i]
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.state == StateUp {
		h.setLocked(StateUnverified, time.Time{}, reasonOwnRecordUnread)
		e.cfg.Log.Warn("node not counted: its membership record could not be read", "node", h.addr, "err", err)
	}
}

// reasonRecordsUnread is the reason shown for a process not verified
// while too few records, or not its own, could be read to tell whether
// it lost data.
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
	if mark == h.lost {
		return
	}
	until, kind, ok := markUntil(mark, h.runID, at)
	if !ok {
		return
	}
	h.lost = mark
	if !now.Before(until) {
		return
	}
	k, reason := QuarantineDataLost, reasonDataLost
	switch kind {
	case QuarantineClock:
		k, reason = QuarantineClock, "clock jumped (seen by another proxy)"
	case QuarantineRestart:
		k, reason = QuarantineRestart, "restarted (seen by another proxy)"
	}
	if k != QuarantineClock && h.verified == h.runID {
		// Its data went: it is verified, and named in its own record,
		// again when the quarantine ends.
		h.verified, h.pending = "", h.runID
	}
	if h.state == StateUp || h.state == StateQuarantined {
		e.quarantineLocked(h, until, k, reason)
		return
	}
	if until.After(h.until) {
		h.until, h.quarantined = until, reason
	}
}

// markUntil is the end of mark's quarantine on the proxy's clock, and its
// kind, if mark is about process runID; at is a reading of the node's
// clock beside the proxy's (the end is late by its round trip, never
// early).
func markUntil(mark, runID string, at clockReading) (time.Time, QuarantineReason, bool) {
	id, rest, _ := strings.Cut(mark, " ")
	ms, kind, _ := strings.Cut(rest, " ")
	if id != runID || at.local.IsZero() {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return at.local.Add(time.UnixMilli(n).Sub(at.node) + at.rtt), QuarantineReason(kind), true
}

// quarantine is how long a node stays out of the quorum: until every lock
// it may have lost has expired.
func (e *Engine) quarantine() time.Duration {
	m := max(e.cfg.MaxTTL, time.Duration(e.peerMaxTTL.Load()))
	return m + e.Drift(m)
}

// learnMaxTTLs takes the longest max_ttl that the records read at now
// say a proxy grants.
func (e *Engine) learnMaxTTLs(recs []result[map[string]string], now time.Time) {
	for j, r := range recs {
		if r.err == nil {
			e.learnMaxTTL(j, r.v, now)
		}
	}
}

// learnMaxTTL takes the longest max_ttl that rec, node j's record read
// at now, says a proxy grants. A field's time is on node j's clock
// (maxTTLField), so the proxies' own clocks do not matter; before this
// proxy has read that clock, every field counts.
func (e *Engine) learnMaxTTL(j int, rec map[string]string, now time.Time) {
	nodeNow, known := e.onNodeClock(j, now)
	for f, v := range rec {
		ms, ok := strings.CutPrefix(f, maxTTLPrefix)
		if !ok {
			continue
		}
		m, err1 := strconv.ParseInt(ms, 10, 64)
		at, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || m <= 0 {
			continue
		}
		// A longer one is no proxy's (Validate), but is not dropped:
		// its locks may run for the whole bound.
		d := time.Duration(min(m, maxLearnedTTL.Milliseconds())) * time.Millisecond
		if known && nodeNow.Sub(time.UnixMilli(at)) > d+maxTTLSlack {
			continue // no lock of that proxy's can be left
		}
		for {
			cur := e.peerMaxTTL.Load()
			if int64(d) <= cur || e.peerMaxTTL.CompareAndSwap(cur, int64(d)) {
				break
			}
		}
	}
}

// maxLearnedTTL bounds a max_ttl taken from a record.
const maxLearnedTTL = 24 * time.Hour

// maxTTLField is this proxy's max_ttl field and its value at now for node
// j's record: now on node j's clock, so that every proxy judges its age
// by the same clock, whatever its own says. It is not written (false)
// before this proxy has read node j's clock.
func (e *Engine) maxTTLField(j int, now time.Time) (string, string, bool) {
	t, ok := e.onNodeClock(j, now)
	return maxTTLPrefix + strconv.FormatInt(e.cfg.MaxTTL.Milliseconds(), 10), strconv.FormatInt(t.UnixMilli(), 10), ok
}

// onNodeClock is now on node j's clock, from the last reading a probe
// took of it; false before the first.
func (e *Engine) onNodeClock(j int, now time.Time) (time.Time, bool) {
	h := e.health[j]
	h.mu.Lock()
	at := h.clock.last
	h.mu.Unlock()
	if at.local.IsZero() {
		return time.Time{}, false
	}
	return at.node.Add(now.Sub(at.local)), true
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

// writeRecord sets node i's verified run_id in the membership record of
// every node not down, and, if self, in node i's own record as its
// selfField, with this proxy's max_ttl. A node it misses is filled in later by syncRecord
// (but never a selfField: that is written only here).
func (e *Engine) writeRecord(ctx context.Context, i int, runID string, self bool) {
	now := time.Now()
	h := e.health[i]
	h.mu.Lock()
	sync := fsyncValue(h)
	h.mu.Unlock()
	e.writeEach(ctx, func(j int) map[string]string {
		fields := map[string]string{h.addr: runID}
		if f, v, ok := e.maxTTLField(j, now); ok {
			fields[f] = v
		}
		if j == i && self {
			fields[selfField], fields[fsyncField] = runID, sync
		}
		return fields
	})
}

// writeFields sets fields in the membership record of every node not
// down.
func (e *Engine) writeFields(ctx context.Context, fields map[string]string) {
	e.writeEach(ctx, func(int) map[string]string { return fields })
}

// writeEach sets fields(i) in the membership record of every node i not
// down.
func (e *Engine) writeEach(ctx context.Context, fields func(i int) map[string]string) {
	down := make([]bool, len(e.nodes))
	for i := range e.nodes {
		down[i] = e.health[i].down.Load()
	}
	each(ctx, e, e.probeTimeout(), func(ctx context.Context, i int, n Node) (struct{}, error) {
		if down[i] {
			return struct{}{}, nil
		}
		return struct{}{}, n.SetMembers(ctx, fields(i))
	})
}

// stale reports whether a max_ttl field's value, written at a Unix ms,
// is missing or due for a refresh at now (both on the node's clock).
func stale(v string, now time.Time) bool {
	at, err := strconv.ParseInt(v, 10, 64)
	return err != nil || now.Sub(time.UnixMilli(at)) >= maxTTLRefresh
}

// syncRecord compares node i's membership record rec with what the engine
// verified. A missing field is filled in. A field that names another
// run_id for an up node means that node restarted while no record could
// be read (or this proxy started after): it is quarantined for what is
// left of max_ttl since its start, or, if that is over, the field is
// corrected.
func (e *Engine) syncRecord(ctx context.Context, i int, rec map[string]string, settle bool) {
	now := time.Now()
	e.learnMaxTTL(i, rec, now)
	// A process whose own record no longer names it lost its data
	// without a restart (FLUSHALL): the locks it granted are gone too.
	// It is verified again, and named, when the quarantine ends. One
	// back from down (settle) counts again only if its record names it.
	hi := e.health[i]
	hi.mu.Lock()
	hi.fsyncOf = rec[fsyncField]
	if (hi.state == StateUp || settle) && hi.runID == hi.verified && rec[selfField] != hi.runID {
		e.quarantineLocked(hi, now.Add(e.quarantine()), QuarantineDataLost, reasonDataLost)
		e.markLocked(hi, QuarantineDataLost)
		hi.verified, hi.pending = "", hi.runID
	}
	if settle && hi.runID == hi.verified {
		e.settleLocked(hi, now)
	}
	fix := map[string]string{}
	if hi.state == StateUp && hi.runID == hi.verified && rec[selfField] == hi.runID && rec[fsyncField] != fsyncValue(hi) {
		fix[fsyncField] = fsyncValue(hi) // the process's appendfsync changed, or was never written
	}
	hi.mu.Unlock()
	if f, v, ok := e.maxTTLField(i, now); ok {
		if t, _ := strconv.ParseInt(v, 10, 64); stale(rec[f], time.UnixMilli(t)) {
			fix[f] = v
		}
	}
	for _, h := range e.health {
		h.mu.Lock()
		for _, m := range marksOf(rec, h.runID) {
			e.lostLocked(h, m, h.clock.last, time.Now())
		}
		if mark := rec[lostPrefix+h.addr]; h.lost != "" && now.Before(h.until) && !strings.HasPrefix(mark, h.runID+" ") {
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
		case ok && v != h.previous && now.Before(until) && !(e.cfg.TrustFsyncAlways && h.fsyncAlways && h.fsyncOf == v):
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
