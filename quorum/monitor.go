package quorum

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Start checks every node once and then keeps checking each in the
// background until Close. Until a node has been checked its grants do not
// count. A node that cannot be reached now starts down and is checked
// when it comes up. Start returns an error naming the node and the reason
// when a reachable node is refused: it is a replica, it may evict lock
// keys, or it has the same run_id as another (the same master listed
// twice). ctx bounds only these first checks, which take a few probe
// timeouts at most; the background checks run until Close.
func (e *Engine) Start(ctx context.Context) error {
	if e.stop != nil {
		return errors.New("quorum: Start called twice")
	}
	for _, h := range e.health {
		h.mu.Lock()
		h.setLocked(StateUnverified, time.Time{}, "not checked yet")
		h.mu.Unlock()
	}
	e.monitored.Store(true)
	for i, n := range e.nodes {
		n.WatchConnects(func(runID string) { e.connected(i, runID) })
	}
	probes := each(ctx, e, e.probeTimeout(), func(ctx context.Context, _ int, n Node) (Probe, error) {
		return n.Probe(ctx)
	})
	var errs []error
	for i, r := range probes {
		if r.err == nil {
			if reason := e.refusal(i, r.v, probes); reason != "" {
				errs = append(errs, fmt.Errorf("node %d (%s) refused: %s", i, e.nodes[i].Addr(), reason))
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for i, r := range probes {
		if r.err == nil { // every node's process and clock, seen before any is decided
			h := e.health[i]
			h.mu.Lock()
			h.runID = r.v.RunID
			h.probedOK = time.Now() // probeFailed's grace runs from here
			// The records' max_ttl fields are judged by their node's
			// clock (learnMaxTTL): read before the first node's records.
			clockCheck(&h.clock, r.v, e.cfg.ClockJumpLimit, e.cfg.DriftFactor)
			h.mu.Unlock()
		}
	}
	for i, r := range probes {
		if r.err != nil {
			e.markDown(i, r.err)
			continue
		}
		e.apply(ctx, i, r.v, 0)
	}
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	e.stop = stop
	for i := range e.nodes {
		e.wg.Go(func() { e.watch(mctx, i) }) // waited for by Close
	}
	e.wg.Go(func() { e.tendLoop(mctx) })
	return nil
}

// probeTimeout bounds one probe: the probe interval, but never under the
// node timeout.
func (e *Engine) probeTimeout() time.Duration {
	return max(e.cfg.ProbeInterval, e.cfg.NodeTimeout)
}

// watch checks node i every probe interval, and at once when woken (a
// new connection saw a new run_id, or the breaker opened), until ctx ends.
func (e *Engine) watch(ctx context.Context, i int) {
	t := time.NewTicker(e.cfg.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-e.health[i].wake:
		}
		e.check(ctx, i)
	}
}

// check probes node i once and acts on what it finds.
func (e *Engine) check(ctx context.Context, i int) {
	h, n := e.health[i], e.nodes[i]
	h.mu.Lock()
	gen := h.gen
	h.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, e.probeTimeout())
	defer cancel()
	sent := time.Now()
	p, err := n.Probe(pctx)
	if err != nil {
		if ctx.Err() == nil {
			e.probeFailed(i, sent, err)
		}
		return
	}
	h.stalls.Store(0)
	h.mu.Lock()
	h.probedOK = time.Now()
	h.mu.Unlock()
	if reason := e.refusal(i, p, nil); reason != "" {
		e.refuse(i, p, reason)
		return
	}
	settle := e.apply(ctx, i, p, gen)
	// The record gets a timeout of its own: on a slow link a probe's
	// round trips may use up the first, and a record not read leaves a
	// FLUSHALL unseen.
	rctx, rcancel := context.WithTimeout(ctx, e.probeTimeout())
	defer rcancel()
	if rec, err := n.Members(rctx); err == nil {
		e.syncRecord(rctx, i, rec, settle)
	} else if ctx.Err() == nil {
		e.ownRecordUnread(i, err)
	}
	e.publishMark(rctx, i)
}

// reasonProbesFailing is the reason shown for a node that stopped
// counting because no probe of it passed for probeFailGrace.
const reasonProbesFailing = "its probes fail"

// probeFailGrace is how long a node that counts may go without a probe
// that passed: three probe timeouts, and at least a second, so that a
// loaded machine's slow probes do not take nodes out.
func (e *Engine) probeFailGrace() time.Duration {
	return max(3*e.probeTimeout(), time.Second)
}

// probeFailed is the breaker for the monitor's own probes, sent at sent:
// a probe that times out in a stall the request path already counted is
// not counted again.
func (e *Engine) probeFailed(i int, sent time.Time, err error) {
	h := e.health[i]
	h.mu.Lock()
	h.lastErr = err.Error()
	if h.state == StateUp && time.Since(h.probedOK) >= e.probeFailGrace() {
		// Lock calls may still get through in time, but what only a
		// probe sees (a FLUSHALL, a restart, a clock jump) would not be
		// seen: it counts again once a probe and its record read pass.
		h.setLocked(StateUnverified, time.Time{}, reasonProbesFailing)
		e.cfg.Log.Warn("node not counted: its probes fail", "node", h.addr, "err", err)
	}
	h.mu.Unlock()
	if (isTimeout(err) || errors.Is(err, context.DeadlineExceeded)) && !e.stall(i, sent) {
		return
	}
	e.markDown(i, err)
}

// refusal says why node i, as probed, may not take part in a quorum; ""
// if it may. probes, at start, are every node's probes; later the other
// nodes' last seen run_ids are used.
func (e *Engine) refusal(i int, p Probe, probes []result[Probe]) string {
	switch {
	case p.Role != "master":
		return fmt.Sprintf("role is %s, not master: a replica may lose acknowledged writes on failover", p.Role)
	case strings.HasPrefix(p.MaxmemoryPolicy, "allkeys-"), strings.HasPrefix(p.MaxmemoryPolicy, "volatile-"):
		return fmt.Sprintf("maxmemory-policy is %s: lock keys could be evicted (use noeviction)", p.MaxmemoryPolicy)
	}
	for j := range e.nodes {
		if j == i {
			continue
		}
		other := ""
		if probes != nil {
			if probes[j].err == nil {
				other = probes[j].v.RunID
			}
		} else {
			h := e.health[j]
			h.mu.Lock()
			if h.state != StateDown {
				other = h.runID
			}
			h.mu.Unlock()
		}
		if other == p.RunID {
			return fmt.Sprintf("same run_id %s as node %d (%s): one master listed twice", p.RunID, j, e.nodes[j].Addr())
		}
	}
	return ""
}

// refuse marks node i refused, logging the transition once.
func (e *Engine) refuse(i int, p Probe, reason string) {
	h := e.health[i]
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runID = p.RunID
	if h.state == StateRefused && h.reason == reason {
		return
	}
	h.setLocked(StateRefused, time.Time{}, reason)
	e.cfg.Log.Error("node refused", "node", h.addr, "reason", reason)
}

// connected is told the run_id of each new connection to node i before
// that connection is used. A run_id the engine has not verified makes the
// node unverified at once, so no grant from the new process counts before
// the monitor has decided whether it restarted.
func (e *Engine) connected(i int, runID string) {
	h := e.health[i]
	h.mu.Lock()
	defer h.mu.Unlock()
	if runID == h.verified || runID == h.pending || runID == h.runID && h.state != StateUp {
		return
	}
	h.runID = runID
	h.gen++
	h.setLocked(StateUnverified, time.Time{}, "new run_id on connect")
	h.poke()
}
