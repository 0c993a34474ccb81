package quorum

import (
	"context"
	"crypto/tls"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ratelog"
)

// ErrNodeDown is a down node's failure: the engine did not call it. The
// monitor retries it in the background.
var ErrNodeDown = errors.New("node down")

// NodeState is a node's health as the engine sees it.
type NodeState uint8

const (
	// StateUp answers, and its grants count.
	StateUp NodeState = iota
	// StateDown is unreachable: operations fail at once without calling
	// it, and the monitor retries it every probe interval.
	StateDown
	// StateUnverified is reachable, but its run_id has not been checked
	// yet (a new connection saw a new one, or the node just came up):
	// its grants do not count.
	StateUnverified
	// StateQuarantined restarted, or its clock jumped: it gets every
	// write, release and extend, but its grants do not count until the
	// quarantine ends.
	StateQuarantined
	// StateRefused failed a check (a replica, or an eviction policy that
	// may evict lock keys, or the same run_id as another node): its
	// grants do not count.
	StateRefused
)

var stateNames = [...]string{"up", "down", "unverified", "quarantined", "refused"}

func (s NodeState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// NodeStatus is one node's health at one moment.
type NodeStatus struct {
	Addr   string
	State  NodeState
	Until  time.Time // when a quarantine ends; zero otherwise
	Reason string    // why the node is not up; empty when up
	RunID  string    // the run_id last seen; empty if never reached
	// LastError is the node's most recent failure, empty if none.
	LastError string
	// Downs is how many times the breaker has marked the node down. A
	// down spell can be shorter than any poll of Status; this shows it.
	Downs uint64
}

// health is what the engine knows of one node. The two flags are what the
// request path reads; the rest is the monitor's, under mu.
type health struct {
	addr   string
	node   int          // index in the configured node list
	obs    Observer     // nil for none
	down   atomic.Bool  // fanOut does not call the node
	counts atomic.Bool  // the node's grants count towards a quorum
	stalls atomic.Int32 // consecutive timeouts (requests' and probes')
	// stalled is when (since the engine was made) the last timeout
	// counted in stalls was seen: a timeout of a call sent before then
	// is the same stall, seen by a call that ran beside it.
	stalled atomic.Int64
	downs   atomic.Uint64 // times marked down
	wake    chan struct{}
	trouble *ratelog.Log // the node's trouble replies

	mu     sync.Mutex
	state  NodeState
	reason string
	// until is the end of the node's latest quarantine, on the proxy's
	// clock, and quarantined its reason. Both outlive a down or
	// unverified spell: a node back before its quarantine ends is
	// quarantined again, never up.
	until       time.Time
	quarantined string
	runID       string // last run_id seen by a probe or a new connection
	gen         uint64 // bumped when a new connection sees a new run_id
	lastErr     string
	// verified is the run_id whose grants count, "" until one is; while
	// a restart quarantine runs, the previous process's.
	verified string
	// previous is the run_id verified before the current one: a record
	// that still names it is stale, not a sign of another restart.
	previous string
	// pending is the run_id of a restarted process in quarantine; it
	// becomes verified when the quarantine ends.
	pending string
	// fsyncAlways: the node runs appendonly yes, appendfsync always and
	// no-appendfsync-on-rewrite no: it syncs every write.
	fsyncAlways bool
	// probedOK is when a probe of the node last passed.
	probedOK time.Time
	// fsyncOf is what the node's own record last read said in
	// fsyncField: the process seen syncing every write, if any.
	fsyncOf string
	// start is when the node's process started, from its uptime.
	start time.Time
	clock clockSample
	// lost is the last mark (lostPrefix) for the node acted on or made,
	// and publish one this proxy made and has yet to write.
	lost, publish string
}

func newHealth(addr string) *health {
	h := &health{addr: addr, wake: make(chan struct{}, 1),
		trouble: ratelog.New("node answers calls with an error; they do not count", troubleLogEvery)}
	h.counts.Store(true) // without Start, every node counts
	return h
}

// setLocked moves the node to state and keeps the request-path flags in
// step. until is the quarantine's end, and is kept for other states.
// h.mu must be held.
func (h *health) setLocked(state NodeState, until time.Time, reason string) {
	if h.obs != nil && h.state != state {
		h.obs.NodeStateChanged(h.node, h.addr, h.state, state)
	}
	h.state, h.reason = state, reason
	if state == StateQuarantined {
		h.until, h.quarantined = until, reason
	}
	h.down.Store(state == StateDown)
	h.counts.Store(state == StateUp)
}

// poke wakes the node's monitor, if it is not awake already.
func (h *health) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Status returns every node's health, in configuration order. Without
// Start, every node is up.
func (e *Engine) Status() []NodeStatus {
	st := make([]NodeStatus, len(e.health))
	for i, h := range e.health {
		h.mu.Lock()
		st[i] = NodeStatus{Addr: h.addr, State: h.state, Reason: h.reason, RunID: h.runID, LastError: h.lastErr, Downs: h.downs.Load()}
		if h.state == StateQuarantined {
			st[i].Until = h.until
		}
		h.mu.Unlock()
	}
	return st
}

// stallLimit is how many timeouts in a row mark a node down.
const stallLimit = 3

// noteResult is the circuit breaker: it looks at one call's error on the
// request path and marks the node down on a connection failure, or on
// stallLimit timeouts in a row. In a row means one after another: calls
// sent at the same time that time out together are one stall, counted
// once, so a single hiccup under many clients does not open the breaker.
// ctx is the operation's context, before the node's own deadline; sent
// is when the call was sent.
func (e *Engine) noteResult(ctx context.Context, i int, sent time.Time, err error) {
	h := e.health[i]
	var re errorReply
	switch {
	case err == nil:
		h.stalls.Store(0)
	case errors.As(err, &re):
		// An answer, even an error reply, shows the node is there.
		h.stalls.Store(0)
		e.noteTrouble(h, re)
	case ctx.Err() != nil, err == errNoTimeToHold, errors.As(err, new(waitCut)):
		// The caller gave up, or had no time to call the node; that
		// says nothing about the node.
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		if e.stall(i, sent) {
			e.markDown(i, err)
		}
	default:
		e.markDown(i, err)
	}
}

// troubleReplies begin the error replies in which a node says it cannot
// serve the proxy's calls (memory, permissions, a replica, loading, a
// script that runs too long, ...), while the breaker sees it answer.
var troubleReplies = []string{"OOM", "NOPERM", "READONLY", "LOADING", "BUSY", "MASTERDOWN",
	"MISCONF", "NOREPLICAS", "CLUSTERDOWN", "MOVED", "ASK", "TRYAGAIN", "NOAUTH", "WRONGPASS", "LATE"}

// troubleLogEvery is how often, at most, a node's trouble replies are
// logged.
const troubleLogEvery = 10 * time.Second

// noteTrouble logs a node's trouble reply, at most once per
// troubleLogEvery with a count of the ones between: each such call does
// not count towards a quorum, and nothing else says so where the metrics
// are off.
func (e *Engine) noteTrouble(h *health, re errorReply) {
	msg := re.Error()
	code, _, _ := strings.Cut(msg, " ")
	if slices.Contains(troubleReplies, code) { // not a reply to the call itself (WRONGTYPE, ...)
		h.trouble.Warn(e.cfg.Log, "node", h.addr, "err", msg)
	}
}

// stall counts a timeout of a call to node i sent at sent, and reports
// whether it makes stallLimit in a row. A call sent before the last
// counted timeout was seen timed out in that same stall (a request's
// or a probe's): it is not counted again.
func (e *Engine) stall(i int, sent time.Time) bool {
	h := e.health[i]
	last := h.stalled.Load()
	if int64(sent.Sub(e.born)) < last || !h.stalled.CompareAndSwap(last, int64(time.Since(e.born))) {
		return false // the stall already counted, or counted by a call beside it
	}
	return h.stalls.Add(1) >= stallLimit
}

// downReason is the reason INFO shows for a node marked down by err.
func downReason(err error) string {
	var (
		verify *tls.CertificateVerificationError
		alert  tls.AlertError
		record tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verify):
		return "tls verification failed" // last_error says why
	case errors.As(err, &alert), errors.As(err, &record):
		return "tls handshake failed"
	}
	return "unreachable"
}

// isTimeout reports whether err is a network timeout.
func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// markDown opens node i's breaker and wakes its monitor, which retries
// the node.
func (e *Engine) markDown(i int, err error) {
	h := e.health[i]
	if ne := (*NodeError)(nil); errors.As(err, &ne) {
		err = ne.Err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
	if h.state == StateDown {
		return
	}
	h.setLocked(StateDown, time.Time{}, downReason(err))
	e.nodes[i].DropConnection()
	h.downs.Add(1)
	h.stalls.Store(0)
	h.poke()
	// A transition, logged once; the requests that follow fail at once
	// and log nothing.
	e.cfg.Log.Warn("node down", "node", h.addr, "err", err)
}
