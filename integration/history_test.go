package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The kinds of op a history holds.
const (
	opAcquire = "acquire" // SET key token NX PX ttl through a proxy
	opRenew   = "renew"   // a watchdog renewal of a hold through a proxy: Result "1" when granted
	opRelease = "release" // the compare-and-delete script through a proxy
	opHeld    = "held"    // direct reads of every node right after an OK
	opGone    = "gone"    // direct reads of every node right after a release
	opWork    = "work"    // one increment of the key's counter under the lock
	opFault   = "fault"   // a fault on node Nodes[0] from Start until End
)

// Results of calls through a proxy. An error reply is "error: " + its text.
const (
	resOK      = "ok"
	resNil     = "nil"
	resUnknown = "unknown" // the connection failed or timed out: no reply
)

// probeClient is the client id of the liveness probes run after the
// last fault heals.
const probeClient = 1000

// openEnd is the End of a fault that has not healed.
const openEnd = time.Duration(1<<62 - 1)

// op is one call in a history. Times are offsets from the history's base,
// all read from one monotonic clock.
type op struct {
	Client int           `json:"client"`
	Op     string        `json:"op"`
	Key    string        `json:"key,omitempty"`
	Token  string        `json:"token,omitempty"`
	TTL    time.Duration `json:"ttl,omitempty"`
	Drift  time.Duration `json:"drift,omitempty"` // acquire: the proxy's drift allowance for TTL; 0 means drift(TTL)
	Start  time.Duration `json:"start"`
	End    time.Duration `json:"end"`
	Result string        `json:"result,omitempty"`
	Nodes  []int         `json:"nodes,omitempty"`  // held/gone: nodes holding the token; fault: the node
	Unread []int         `json:"unread,omitempty"` // held/gone: nodes that could not be read
	Note   string        `json:"note,omitempty"`
	Shared bool          `json:"shared,omitempty"` // acquire: a shared hold (a read lock), which may overlap other shared ones
}

// history records ops from many goroutines.
type history struct {
	base time.Time
	mu   sync.Mutex
	ops  []op
}

func newHistory() *history { return &history{base: time.Now()} }

// now is the time since the history's base.
func (h *history) now() time.Duration { return time.Since(h.base) }

func (h *history) add(o op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, o)
}

// faultBegin records that a fault on node starts now and returns its
// index, for faultEnd.
func (h *history) faultBegin(node int, what string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op{Client: -1, Op: opFault, Result: what, Nodes: []int{node}, Start: time.Since(h.base), End: openEnd})
	return len(h.ops) - 1
}

// faultSpan records a fault on node from start to end.
func (h *history) faultSpan(node int, what string, start, end time.Duration) {
	h.add(op{Client: -1, Op: opFault, Result: what, Nodes: []int{node}, Start: start, End: end})
}

// faultEnd records that the fault at index i healed now.
func (h *history) faultEnd(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops[i].End = time.Since(h.base)
}

func (h *history) snapshot() []op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.ops)
}

// save writes the history as JSON lines to a new temp file and returns
// its path.
func (h *history) save() (string, error) {
	f, err := os.CreateTemp("", "fault-history-*.jsonl")
	if err != nil {
		return "", err
	}
	enc := json.NewEncoder(f)
	for _, o := range h.snapshot() {
		if err := enc.Encode(o); err != nil {
			f.Close()
			return "", err
		}
	}
	return f.Name(), f.Close()
}

// drift is the proxy's allowance for clock drift over ttl with the
// default drift_factor of 0.01.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// validUntil is when the validity of an acquire's OK ends, as its client
// can compute it alone: its start plus the TTL minus the drift allowance.
func (o op) validUntil() time.Duration {
	d := o.Drift
	if d == 0 {
		d = drift(o.TTL)
	}
	return o.Start + o.TTL - d
}

// window is the time a holder may rely on a lock: from the OK until the
// validity the client can compute on its own runs out, or until it starts
// to release, whichever is first. A hold taken again by its token (a
// re-entry) or renewed (Redisson's watchdog) is the same hold: each OK
// and each granted renewal adds the time from its reply to its validity,
// and the hold's windows are the union, cut where its first release
// starts.
type window struct {
	client     int
	token      string
	begin, end time.Duration
	shared     bool // a read lock's: it may overlap other shared windows
}

// windows returns the holders' windows of key, in the order they begin.
// An OK that arrived after its validity had ended has no window.
func windows(ops []op, key string) []window {
	released := map[string]time.Duration{}
	for _, o := range ops {
		if o.Op == opRelease && o.Key == key {
			if s, ok := released[o.Token]; !ok || o.Start < s {
				released[o.Token] = o.Start
			}
		}
	}
	byToken := map[string][]window{}
	shared := map[string]bool{}
	var tokens []string
	for _, o := range ops {
		if o.Key != key || !(o.Op == opAcquire && o.Result == resOK || o.Op == opRenew && o.Result == "1") {
			continue
		}
		if o.Op == opAcquire {
			shared[o.Token] = o.Shared
		}
		w := window{client: o.Client, token: o.Token, begin: o.End, end: o.validUntil()}
		if s, ok := released[o.Token]; ok && s < w.end {
			w.end = s
		}
		if w.begin < w.end {
			if byToken[o.Token] == nil {
				tokens = append(tokens, o.Token)
			}
			byToken[o.Token] = append(byToken[o.Token], w)
		}
	}
	var ws []window
	for _, tok := range tokens {
		// The union of one hold's windows, each of its parts apart.
		mine := byToken[tok]
		slices.SortFunc(mine, func(a, b window) int { return int(a.begin - b.begin) })
		for _, w := range mine {
			w.shared = shared[tok]
			if n := len(ws); n > 0 && ws[n-1].token == tok && w.begin <= ws[n-1].end {
				ws[n-1].end = max(ws[n-1].end, w.end)
				continue
			}
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b window) int { return int(a.begin - b.begin) })
	return ws
}

// checkExclusion is checker (a): no two holders' windows overlap for one
// key, unless both are shared (two readers of a read-write lock): never
// a writer beside a reader or another writer.
func checkExclusion(ops []op) []string {
	var bad []string
	for _, key := range keysOf(ops) {
		// The windows ending last so far: of any kind, and exclusive.
		var last, lastExcl window
		for _, w := range windows(ops, key) {
			other := last
			if w.shared {
				other = lastExcl
			}
			if w.begin < other.end {
				bad = append(bad, fmt.Sprintf("key %s: client %d (%s, %s) held [%v, %v) while client %d (%s, %s) held [%v, %v)",
					key, w.client, w.token, w.kind(), w.begin, w.end, other.client, other.token, other.kind(), other.begin, other.end))
			}
			if w.end > last.end {
				last = w
			}
			if !w.shared && w.end > lastExcl.end {
				lastExcl = w
			}
		}
	}
	return bad
}

func (w window) kind() string {
	if w.shared {
		return "shared"
	}
	return "exclusive"
}

// sharedOverlaps counts the pairs of shared windows that overlap: how
// much of the sharing checkExclusion allows a run exercised.
func sharedOverlaps(ws []window) int {
	n := 0
	for i, a := range ws {
		for _, b := range ws[i+1:] {
			if a.shared && b.shared && b.begin < a.end {
				n++
			}
		}
	}
	return n
}

// proxyOutage is the fault name of a time when a proxy could not read
// what clients sent it: killed, stopped, or starting.
const proxyOutage = "proxy-outage"

// testStall is the fault name (on node -1) of a time when the test
// process itself did not run (watchStalls): its clients sent nothing and
// read nothing, though their clocks ran on.
const testStall = "test-process-stall"

// stallMin is the shortest gap watchStalls records as a stall.
const stallMin = 50 * time.Millisecond

// watchStalls records every gap of stallMin or more in a 5ms tick, until
// ctx ends, as a testStall fault: the machine did not run the test
// process (the clients, their clocks' readers, the toxiproxies) then.
func (h *history) watchStalls(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	last := h.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := h.now()
		if now-last >= stallMin {
			h.faultSpan(-1, testStall, last, now)
		}
		last = now
	}
}

// checkLateOK reports every OK that arrived after its validity, counted
// from the client's send, had ended: a client cannot use it, and one
// that trusts it anyway overlaps the next holder. The proxy counts from
// when it reads the command, so a command that waited in a socket while
// the proxy was out (a proxy-outage fault, on node -1) is not judged; nor
// is one for which skip returns true. Time the test process stalled
// within the call (a testStall fault) is not the proxy's: the command was
// sent, or its reply read, that much later than recorded. It is taken
// off the call's time, and the rest judged.
func checkLateOK(ops []op, skip func(op) bool) []string {
	var outages, stalls []op
	for _, o := range ops {
		switch {
		case o.Op == opFault && o.Result == proxyOutage:
			outages = append(outages, o)
		case o.Op == opFault && o.Result == testStall:
			stalls = append(stalls, o)
		}
	}
	var bad []string
	for _, o := range ops {
		if o.Op != opAcquire || o.Result != resOK || o.End < o.validUntil() || skip != nil && skip(o) {
			continue
		}
		if slices.ContainsFunc(outages, func(f op) bool { return f.Start < o.End && f.End > o.Start }) {
			continue
		}
		var stalled time.Duration
		for _, f := range stalls {
			stalled += max(0, min(f.End, o.End)-max(f.Start, o.Start))
		}
		if o.End-stalled < o.validUntil() {
			continue
		}
		why := ""
		if stalled > 0 {
			why = fmt.Sprintf(" (%v of the call the test process stalled)", stalled)
		}
		bad = append(bad, fmt.Sprintf("key %s: client %d got OK for %s at %v, after its validity ended at %v (late OK)%s",
			o.Key, o.Client, o.Token, o.End, o.validUntil(), why))
	}
	return bad
}

// checkCounter is checker (b): each key's counter, read at the end, equals
// the number of increments made under the lock.
func checkCounter(ops []op, counters map[string]int64) []string {
	done := map[string]int64{}
	for _, o := range ops {
		if o.Op == opWork && o.Result == resOK {
			done[o.Key]++
		}
	}
	var bad []string
	for _, key := range keysOf(ops) {
		if counters[key] != done[key] {
			bad = append(bad, fmt.Sprintf("key %s: counter is %d after %d increments under the lock (lost updates)", key, counters[key], done[key]))
		}
	}
	return bad
}

// checkLiveness is checker (c): after healed, some client (the workload
// or a probe) acquired every key within bound.
func checkLiveness(ops []op, keys []string, healed, bound time.Duration) []string {
	var bad []string
	for _, key := range keys {
		first := openEnd
		for _, o := range ops {
			if o.Op == opAcquire && o.Key == key && o.Result == resOK && o.Start >= healed && o.End < first {
				first = o.End
			}
		}
		if first > healed+bound {
			got := "never"
			if first != openEnd {
				got = fmt.Sprintf("only after %v", first-healed)
			}
			bad = append(bad, fmt.Sprintf("key %s: acquired %s after the last fault healed at %v; want within %v", key, got, healed, bound))
		}
	}
	return bad
}

// checkQuorumHeld is checker (d): after each OK a quorum of the n nodes
// holds the token, and after each release that got a reply no node keeps
// it. A node is left out of a check if it was faulted at any time from
// settle before the operation started until the check ended: a faulted
// node may have missed the write or the delete, and a proxy may not yet
// have readmitted a node healed less than settle ago. Left out of an OK's
// check, a node counts as possibly holding; so does a node that could not
// be read. An OK's check that ended after the validity ran out proves
// nothing (the key may have expired) and is skipped; so is the check of a
// release that took nodeTimeout or longer, as some node may have missed
// its deadline, which to the proxy is a node it cannot reach.
// It also returns how many checks it judged.
func checkQuorumHeld(ops []op, n int, settle, nodeTimeout time.Duration) (bad []string, judged int) {
	quorum := n/2 + 1
	var faults []op
	acquires := map[string]op{} // by token
	releases := map[string]op{}
	for _, o := range ops {
		switch {
		case o.Op == opFault:
			faults = append(faults, o)
		case o.Op == opAcquire && o.Result == resOK:
			if _, again := acquires[o.Token]; !again { // a re-entry's is the first hold's check
				acquires[o.Token] = o
			}
		case o.Op == opRelease:
			releases[o.Token] = o
		}
	}
	faulted := func(node int, from, to time.Duration) bool {
		for _, f := range faults {
			if f.Nodes[0] == node && f.Start < to && f.End > from {
				return true
			}
		}
		return false
	}
	for _, c := range ops {
		switch c.Op {
		case opHeld:
			a, ok := acquires[c.Token]
			if !ok || c.End >= a.validUntil() {
				continue
			}
			maybe := len(c.Nodes)
			for i := range n {
				if !slices.Contains(c.Nodes, i) && (slices.Contains(c.Unread, i) || faulted(i, a.Start-settle, c.End)) {
					maybe++
				}
			}
			judged++
			if maybe < quorum {
				bad = append(bad, fmt.Sprintf("key %s: after client %d's OK for %s only nodes %v held it (%v unread); want %d of %d",
					c.Key, c.Client, c.Token, c.Nodes, c.Unread, quorum, n))
			}
		case opGone:
			r, ok := releases[c.Token]
			if !ok || r.Result == resUnknown || strings.HasPrefix(r.Result, "error: ") || r.End-r.Start >= nodeTimeout {
				continue
			}
			judged++
			for _, i := range c.Nodes {
				if !faulted(i, r.Start-settle, c.End) {
					bad = append(bad, fmt.Sprintf("key %s: node %d still holds %s after client %d's release replied %s",
						c.Key, i, c.Token, c.Client, r.Result))
				}
			}
		}
	}
	return bad, judged
}

// keysOf returns the keys acquired in ops, sorted.
func keysOf(ops []op) []string {
	var keys []string
	for _, o := range ops {
		if o.Op == opAcquire && !slices.Contains(keys, o.Key) {
			keys = append(keys, o.Key)
		}
	}
	slices.Sort(keys)
	return keys
}

// reportViolations fails t when bad is not empty, writing the history to
// a temp file and logging its path and the seed.
func reportViolations(t testing.TB, h *history, seed uint64, bad []string) {
	t.Helper()
	if len(bad) == 0 {
		return
	}
	path, err := h.save()
	if err != nil {
		path = "(not saved: " + err.Error() + ")"
	}
	if len(bad) > 10 {
		bad = append(bad[:10], fmt.Sprintf("and %d more", len(bad)-10))
	}
	t.Errorf("%d violations (seed %d, history in %s):\n%s", len(bad), seed, path, joinLines(bad))
}

func joinLines(lines []string) string {
	s := ""
	for _, l := range lines {
		s += "  " + l + "\n"
	}
	return s
}

const ms = time.Millisecond

// The checkers pass correct histories and report every broken one.
func TestCheckersOnHandMadeHistories(t *testing.T) {
	acq := func(client int, key, token string, start, end time.Duration, result string) op {
		return op{Client: client, Op: opAcquire, Key: key, Token: token, TTL: 500 * ms, Start: start, End: end, Result: result}
	}
	rel := func(client int, key, token string, start, end time.Duration) op {
		return op{Client: client, Op: opRelease, Key: key, Token: token, Start: start, End: end, Result: "1"}
	}
	held := func(client int, key, token string, end time.Duration, nodes, unread []int) op {
		return op{Client: client, Op: opHeld, Key: key, Token: token, Start: end - ms, End: end, Nodes: nodes, Unread: unread}
	}
	gone := func(client int, key, token string, end time.Duration, nodes []int) op {
		return op{Client: client, Op: opGone, Key: key, Token: token, Start: end - ms, End: end, Nodes: nodes}
	}
	// read is a shared acquire (a read lock's reader).
	read := func(client int, key, token string, start, end time.Duration, result string) op {
		o := acq(client, key, token, start, end, result)
		o.Shared = true
		return o
	}
	// renew is a watchdog renewal of a hold, granted when result is "1".
	renew := func(client int, key, token string, start, end time.Duration, result string) op {
		return op{Client: client, Op: opRenew, Key: key, Token: token, TTL: 500 * ms, Start: start, End: end, Result: result}
	}
	work := func(key string) op { return op{Op: opWork, Key: key, Result: resOK} }
	fault := func(node int, start, end time.Duration) op {
		return op{Client: -1, Op: opFault, Nodes: []int{node}, Start: start, End: end, Result: "kill"}
	}
	tests := []struct {
		name     string
		ops      []op
		counters map[string]int64
		bad      []string // the checkers that must report: a, b, c, d, l (late OK)
	}{
		{"one holder after another", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), rel(1, "k", "t1", 50*ms, 52*ms),
			acq(2, "k", "t2", 40*ms, 60*ms, resOK), rel(2, "k", "t2", 90*ms, 91*ms),
		}, nil, nil},
		{"second OK after the first expired", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "k", "t2", 400*ms, 494*ms, resOK),
		}, nil, nil},
		{"unknown, nil and error outcomes hold nothing", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "k", "t2", 1*ms, 900*ms, resUnknown),
			acq(3, "k", "t3", 2*ms, 4*ms, resNil),
			acq(4, "k", "t4", 2*ms, 4*ms, "error: NOQUORUM 2 granted, 0 denied, 3 failed of 5 nodes; 3 needed"),
		}, nil, nil},
		{"two holders at once", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "k", "t2", 100*ms, 110*ms, resOK),
		}, nil, []string{"a"}},
		{"second OK a moment before the first's validity ends", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "k", "t2", 400*ms, 490*ms, resOK),
		}, nil, []string{"a"}},
		{"overlap with an earlier long window", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "k", "t2", 10*ms, 20*ms, resOK), rel(2, "k", "t2", 30*ms, 31*ms),
			acq(3, "k", "t3", 40*ms, 45*ms, resOK),
		}, nil, []string{"a"}},
		{"readers share", []op{
			read(1, "k", "r1", 0, 5*ms, resOK), read(2, "k", "r2", 10*ms, 20*ms, resOK), read(3, "k", "r3", 30*ms, 40*ms, resOK),
		}, nil, nil},
		{"a writer after the readers released", []op{
			read(1, "k", "r1", 0, 5*ms, resOK), read(2, "k", "r2", 10*ms, 20*ms, resOK),
			rel(1, "k", "r1", 30*ms, 31*ms), rel(2, "k", "r2", 32*ms, 33*ms),
			acq(3, "k", "w3", 35*ms, 40*ms, resOK),
		}, nil, nil},
		{"a reader beside a writer", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK),
			read(2, "k", "r2", 10*ms, 20*ms, resOK),
		}, nil, []string{"a"}},
		{"a writer beside a reader", []op{
			read(1, "k", "r1", 0, 5*ms, resOK),
			acq(2, "k", "w2", 10*ms, 20*ms, resOK),
		}, nil, []string{"a"}},
		{"a writer beside the earlier of two readers", []op{
			read(1, "k", "r1", 0, 5*ms, resOK),
			read(2, "k", "r2", 10*ms, 20*ms, resOK), rel(2, "k", "r2", 30*ms, 31*ms),
			acq(3, "k", "w3", 40*ms, 45*ms, resOK),
		}, nil, []string{"a"}},
		{"a reader beside a writer that began before another reader", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK),
			read(2, "k", "r2", 10*ms, 20*ms, resOK), rel(2, "k", "r2", 30*ms, 31*ms),
			read(3, "k", "r3", 40*ms, 45*ms, resOK),
		}, nil, []string{"a"}},
		{"a renewed hold lasts past its first validity", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), renew(1, "k", "w1", 300*ms, 305*ms, "1"),
			acq(2, "k", "w2", 600*ms, 610*ms, resOK),
		}, nil, []string{"a"}},
		{"a renewal denied or unanswered extends nothing", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), renew(1, "k", "w1", 300*ms, 305*ms, "0"), renew(1, "k", "w1", 310*ms, 900*ms, resUnknown),
			acq(2, "k", "w2", 600*ms, 610*ms, resOK),
		}, nil, nil},
		{"a renewed hold ends at its release", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), renew(1, "k", "w1", 300*ms, 305*ms, "1"), rel(1, "k", "w1", 350*ms, 352*ms),
			acq(2, "k", "w2", 400*ms, 410*ms, resOK),
		}, nil, nil},
		{"a renewal granted after the hold lapsed leaves a gap", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), acq(2, "k", "w2", 600*ms, 610*ms, resOK), rel(2, "k", "w2", 650*ms, 652*ms),
			renew(1, "k", "w1", 700*ms, 705*ms, "1"),
		}, nil, nil},
		{"a writer beside a renewed reader", []op{
			read(1, "k", "r1", 0, 5*ms, resOK), renew(1, "k", "r1", 300*ms, 305*ms, "1"),
			acq(2, "k", "w2", 550*ms, 560*ms, resOK),
		}, nil, []string{"a"}},
		{"a re-entry is the same hold", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), acq(1, "k", "w1", 100*ms, 105*ms, resOK), renew(1, "k", "w1", 200*ms, 205*ms, "1"),
			rel(1, "k", "w1", 300*ms, 301*ms), rel(1, "k", "w1", 302*ms, 303*ms),
		}, nil, nil},
		{"a re-entry lasts past the first OK's validity", []op{
			acq(1, "k", "w1", 0, 5*ms, resOK), acq(1, "k", "w1", 100*ms, 105*ms, resOK),
			acq(2, "k", "w2", 550*ms, 560*ms, resOK),
		}, nil, []string{"a"}},
		{"a re-entered hold is checked on the nodes as its first OK", []op{
			fault(2, 0, 10*ms),
			acq(1, "k", "t1", 0, 5*ms, resOK), held(1, "k", "t1", 8*ms, []int{0, 1}, nil),
			acq(1, "k", "t1", 3000*ms, 3005*ms, resOK),
		}, nil, nil},
		{"late OK", []op{acq(1, "k", "t1", 0, 600*ms, resOK)}, nil, []string{"l"}},
		{"late OK with a larger drift allowance", []op{
			{Client: 1, Op: opAcquire, Key: "k", Token: "t1", TTL: 200 * ms, Drift: 102 * ms, Start: 0, End: 99 * ms, Result: resOK},
		}, nil, []string{"l"}},
		{"OK in time with a larger drift allowance", []op{
			{Client: 1, Op: opAcquire, Key: "k", Token: "t1", TTL: 200 * ms, Drift: 102 * ms, Start: 0, End: 97 * ms, Result: resOK},
		}, nil, nil},
		{"late OK sent while the proxy was out", []op{
			{Client: -1, Op: opFault, Nodes: []int{-1}, Start: 100 * ms, End: 550 * ms, Result: proxyOutage},
			acq(1, "k", "t1", 0, 600*ms, resOK),
		}, nil, nil},
		{"late OK while the test process stalled", []op{
			{Client: -1, Op: opFault, Nodes: []int{-1}, Start: 50 * ms, End: 170 * ms, Result: testStall},
			acq(1, "k", "t1", 0, 600*ms, resOK),
		}, nil, nil},
		{"late OK by more than the test process stalled", []op{
			{Client: -1, Op: opFault, Nodes: []int{-1}, Start: 50 * ms, End: 100 * ms, Result: testStall},
			{Client: -1, Op: opFault, Nodes: []int{-1}, Start: 590 * ms, End: 700 * ms, Result: testStall},
			acq(1, "k", "t1", 0, 600*ms, resOK),
		}, nil, []string{"l"}},
		{"late OK after the proxy came back", []op{
			{Client: -1, Op: opFault, Nodes: []int{-1}, Start: 100 * ms, End: 200 * ms, Result: proxyOutage},
			acq(1, "k", "t1", 300*ms, 900*ms, resOK),
		}, nil, []string{"l"}},
		{"other keys do not conflict", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK),
			acq(2, "j", "t2", 1*ms, 6*ms, resOK),
		}, nil, nil},
		{"counter matches", []op{acq(1, "k", "t1", 0, 5*ms, resOK), work("k"), work("k")},
			map[string]int64{"k": 2}, nil},
		{"lost update", []op{acq(1, "k", "t1", 0, 5*ms, resOK), work("k"), work("k")},
			map[string]int64{"k": 1}, []string{"b"}},
		{"probe acquires in time", []op{acq(probeClient, "k", "p1", 2400*ms, 2500*ms, resOK)},
			nil, nil},
		{"probe too late", []op{acq(probeClient, "k", "p1", 8900*ms, 9000*ms, resOK)},
			nil, []string{"c"}},
		{"probe never acquires", []op{acq(probeClient, "k", "p1", 2000*ms, 2500*ms, resNil)},
			nil, []string{"c"}},
		{"held on a quorum", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), held(1, "k", "t1", 8*ms, []int{0, 1, 2}, nil),
			rel(1, "k", "t1", 10*ms, 12*ms), gone(1, "k", "t1", 14*ms, nil),
		}, nil, nil},
		{"held on two plus one unread", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), held(1, "k", "t1", 8*ms, []int{0, 1}, []int{4}),
		}, nil, nil},
		{"held on two plus one faulted", []op{
			fault(3, 0, 1000*ms),
			acq(1, "k", "t1", 3000*ms, 3005*ms, resOK), held(1, "k", "t1", 3008*ms, []int{0, 1}, nil),
		}, nil, []string{"d"}},
		{"held on two while one heals", []op{
			fault(3, 0, 2500*ms),
			acq(1, "k", "t1", 3000*ms, 3005*ms, resOK), held(1, "k", "t1", 3008*ms, []int{0, 1}, nil),
		}, nil, nil},
		{"held on two only", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), held(1, "k", "t1", 8*ms, []int{0, 1}, nil),
		}, nil, []string{"d"}},
		{"held check after expiry proves nothing", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), held(1, "k", "t1", 600*ms, nil, nil),
		}, nil, nil},
		{"kept after release", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), rel(1, "k", "t1", 10*ms, 12*ms), gone(1, "k", "t1", 14*ms, []int{2}),
		}, nil, []string{"d"}},
		{"kept after a slow release", []op{
			acq(1, "k", "t1", 0, 5*ms, resOK), rel(1, "k", "t1", 10*ms, 112*ms), gone(1, "k", "t1", 114*ms, []int{2}),
		}, nil, nil},
		{"kept by a faulted node after release", []op{
			fault(2, 5*ms, openEnd),
			acq(1, "k", "t1", 0, 5*ms, resOK), rel(1, "k", "t1", 10*ms, 12*ms), gone(1, "k", "t1", 14*ms, []int{2}),
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string][]string{
				"a": checkExclusion(tt.ops),
				"b": checkCounter(tt.ops, tt.counters),
				"c": checkLiveness(tt.ops, keysOfProbes(tt.ops), 2000*ms, 3000*ms),
				"d": first(checkQuorumHeld(tt.ops, 5, time.Second, 100*ms)),
				"l": checkLateOK(tt.ops, nil),
			}
			if tt.counters == nil {
				got["b"] = nil
			}
			for _, c := range []string{"a", "b", "c", "d", "l"} {
				want := slices.Contains(tt.bad, c)
				if want != (len(got[c]) > 0) {
					t.Errorf("checker (%s) reported %q; want a violation: %v", c, got[c], want)
				}
			}
		})
	}
}

// keysOfProbes returns the keys a probe tried.
func keysOfProbes(ops []op) []string {
	var keys []string
	for _, o := range ops {
		if o.Client == probeClient && !slices.Contains(keys, o.Key) {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

func first[T, U any](t T, _ U) T { return t }
