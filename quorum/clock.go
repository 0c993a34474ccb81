package quorum

import (
	"fmt"
	"time"
)

// clockSample is the last and the first TIME reading of one node process,
// each beside the proxy's monotonic clock, and the one that places the
// node's clock most tightly now (best: the least half round trip and
// drift since; writeUntil's).
type clockSample struct {
	runID             string // the process the samples came from
	last, first, best clockReading
}

// spread is how far r's placing of the node's clock may be off at t:
// half its round trip, and the drift factor's share of the time since.
func (r clockReading) spread(t time.Time, driftFactor float64) time.Duration {
	return r.rtt/2 + time.Duration(driftFactor*float64(max(t.Sub(r.local), 0)))
}

type clockReading struct {
	node  time.Time     // the node's clock, wall time only
	local time.Time     // the proxy's clock, with its monotonic reading
	rtt   time.Duration // the round trip the reading took
}

// clockCheck adds p to c and reports how far the node's clock moved
// against the proxy's monotonic clock beyond what the round trips and the
// drift allowance explain: since the previous probe (a jump), or since the
// first probe of this process (a wrong rate, which builds up). It returns
// a reason when that is over limit, and then starts c afresh.
func clockCheck(c *clockSample, p Probe, limit time.Duration, driftFactor float64) string {
	r := clockReading{node: p.Time.Round(0), local: p.Local, rtt: p.RTT}
	if c.runID != p.RunID || c.first.local.IsZero() {
		*c = clockSample{runID: p.RunID, last: r, first: r, best: r}
		return ""
	}
	jump := excess(c.last, r, limit, driftFactor)
	total := excess(c.first, r, limit, driftFactor)
	c.last = r
	if r.spread(r.local, driftFactor) <= c.best.spread(r.local, driftFactor) {
		c.best = r
	}
	switch {
	case jump != 0:
		*c = clockSample{runID: p.RunID, last: r, first: r, best: r}
		return "clock jumped " + signed(jump)
	case total != 0:
		elapsed := r.local.Sub(c.first.local)
		*c = clockSample{runID: p.RunID, last: r, first: r, best: r}
		return fmt.Sprintf("clock rate off by %s in %v", signed(total), elapsed.Round(time.Second))
	}
	return ""
}

// excess is how far the node's clock moved from a to b beyond the
// proxy's, less the allowance: limit, both readings' round trips (TIME
// runs somewhere inside each) and the drift factor's share of the time
// between them. Zero when within the allowance.
func excess(a, b clockReading, limit time.Duration, driftFactor float64) time.Duration {
	local := b.local.Sub(a.local)
	diff := b.node.Sub(a.node) - local
	allow := limit + a.rtt + b.rtt + time.Duration(driftFactor*float64(local))
	switch {
	case diff > allow:
		return diff
	case diff < -allow:
		return diff
	}
	return 0
}

// signed formats d to the millisecond with its sign: +123ms, -1.5s.
func signed(d time.Duration) string {
	d = d.Round(time.Millisecond)
	if d > 0 {
		return "+" + d.String()
	}
	return d.String()
}
