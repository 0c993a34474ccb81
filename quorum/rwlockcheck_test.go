package quorum

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// An exhaustive state explorer for the read lock (rwlock.go) beside the
// write lock: every state reachable by two readers and one writer over 3
// and 5 nodes, with each operation's nodes up, with its reply lost (it
// ran), landing late (after the undo ran there: a residue), or not
// reached, and nodes that restart empty (then quarantined: not counted,
// as the engine does until every older hold has expired). Each reader
// operation is decided by the engine's own decision (decideReadTake,
// decideReadRelease) and undone where it says; the writer's take is
// decided by Acquire's verdict and undone as Acquire undoes it (the
// effect path's decision grants a hold by the same rule; its checker is
// effectcheck_test.go). Nodes are a multiset (their order does not
// matter), so states are kept sorted and each is explored once.
//
// Time is not modelled: no hold expires while explored (a residue stays,
// which only keeps others out longer), and a take's validity is either
// left or run out. Each reader re-enters up to twice (3 holds on a node
// with residues, 2 over 5 nodes), at most one node restarts, and over 5
// nodes at most 2 nodes are not up in one operation, one of them late.
// An unlock's command that lands after the reader's next take is not
// modelled. Reader i is writer i's thread: it is granted under its own
// write lock (Redisson's downgrade), and the write lock's unlock leaves
// it the lock in mode read. What is checked after every step: never a
// writer told it holds the lock beside another thread's reader told it
// holds it, or beside another writer; and every granted take held on a
// quorum of counted nodes.
//
// Without -short: 3 nodes with 1 writer, 29,836 states (4.5 million
// steps); with 2 writers, 53,016 (11.4 million); 5 nodes, 67,040 (12.8
// million): 2 minutes in all on a loaded 2-core machine. -short explores
// 3 nodes and 1 writer without re-entry.

// rwNodeState is one node's view of one read-write lock.
type rwNodeState struct {
	mode        uint8    // 0 no hash, 1 read, 2 write
	r           [2]uint8 // each reader's holds (hash field counts)
	w           [2]bool  // each writer's write lock
	quarantined bool     // restarted empty: answers, not counted
}

func (s rwNodeState) code() uint16 {
	c := uint16(s.mode) | uint16(s.r[0])<<2 | uint16(s.r[1])<<5
	for i, w := range s.w {
		if w {
			c |= 1 << (8 + i)
		}
	}
	if s.quarantined {
		c |= 1 << 10
	}
	return c
}

// rwWorld is one state: the nodes, and what each client was told.
type rwWorld struct {
	nodes    []rwNodeState
	readers  [2]uint8 // holds each reader was granted and has not given up
	writers  [2]bool
	restarts uint8
}

func (w rwWorld) key() string {
	codes := make([]uint16, len(w.nodes))
	for i, n := range w.nodes {
		codes[i] = n.code()
	}
	slices.Sort(codes)
	b := make([]byte, 0, 2*len(codes)+5)
	for _, c := range codes {
		b = append(b, byte(c), byte(c>>8))
	}
	b = append(b, w.readers[0], w.readers[1], btob(w.writers[0]), btob(w.writers[1]), w.restarts)
	return string(b)
}

func btob(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func (w rwWorld) clone() rwWorld {
	w.nodes = slices.Clone(w.nodes)
	return w
}

func (w rwWorld) String() string {
	var b strings.Builder
	for i, n := range w.nodes {
		fmt.Fprintf(&b, "node%d{mode %d r%v w%v q%v} ", i, n.mode, n.r, n.w, n.quarantined)
	}
	fmt.Fprintf(&b, "told: readers %v writers %v", w.readers, w.writers)
	return b.String()
}

// nodeFate is how one node takes part in one operation.
type nodeFate uint8

const (
	fateUp   nodeFate = iota // runs it and answers
	fateLost                 // runs it, its reply lost
	fateLate                 // runs it after the undo (its reply lost)
	fateCut                  // never gets it
)

// rwChecker explores one configuration.
type rwChecker struct {
	n, quorum, maxRestarts, writers int
	// maxHolds bounds each reader's re-entries, nodeHolds a node's count
	// of one reader's holds (residues above a reader's own).
	maxHolds, nodeHolds uint8
	// noSanity leaves out the check that a granted take is held on a
	// quorum, so that a negative control shows the overlap itself.
	noSanity bool
	// underAnyWrite makes a node grant a reader under any thread's
	// write lock: the negative control of the downgrade.
	underAnyWrite bool
	decideTake    func(readTakeVotes) readTakeDecision
	fates         [][]nodeFate // every fate vector explored
	states, steps int
	violation     string
}

var errModelFailed = errors.New("i/o timeout")

func newRWChecker(n, writers, maxRestarts int, decideTake func(readTakeVotes) readTakeDecision) *rwChecker {
	c := &rwChecker{n: n, quorum: Quorum(n), maxRestarts: maxRestarts, writers: writers, decideTake: decideTake,
		maxHolds: 2, nodeHolds: 3}
	// Every fate of every node for 3 nodes; for 5, at most 2 nodes not
	// up (3 decide nothing) and at most one of them late.
	var gen func(v []nodeFate)
	gen = func(v []nodeFate) {
		if len(v) == n {
			down, late := 0, 0
			for _, f := range v {
				if f != fateUp {
					down++
				}
				if f == fateLate {
					late++
				}
			}
			if n <= 3 || down <= 2 && late <= 1 {
				c.fates = append(c.fates, slices.Clone(v))
			}
			return
		}
		for f := fateUp; f <= fateCut; f++ {
			gen(append(v, f))
		}
	}
	gen(nil)
	return c
}

// run explores every reachable state from empty nodes, breadth first.
func (c *rwChecker) run() {
	start := rwWorld{nodes: make([]rwNodeState, c.n)}
	// from: each state's first path, as the step into it and the state
	// before, for a violation's trace.
	type origin struct{ prev, step string }
	from := map[string]origin{start.key(): {}}
	trace := func(k, last string) string {
		steps := []string{last}
		for ; from[k].step != ""; k = from[k].prev {
			steps = append(steps, from[k].step)
		}
		slices.Reverse(steps)
		return strings.Join(steps, "; ")
	}
	queue := []rwWorld{start}
	for len(queue) > 0 && c.violation == "" {
		w := queue[0]
		queue = queue[1:]
		c.states++
		wk := w.key()
		for _, next := range c.successors(w) {
			c.steps++
			msg := next.bad
			if msg == "" {
				msg = c.check(next.w)
			}
			if msg != "" {
				c.violation = fmt.Sprintf("%s, by: %s", msg, trace(wk, next.step))
				return
			}
			if k := next.w.key(); from[k] == (origin{}) && k != start.key() {
				from[k] = origin{wk, next.step}
				queue = append(queue, next.w)
			}
		}
	}
}

type rwStep struct {
	w         rwWorld
	step, bad string // bad: a violation found while stepping
}

// check is the safety property.
func (c *rwChecker) check(w rwWorld) string {
	writers := 0
	for _, h := range w.writers {
		if h {
			writers++
		}
	}
	switch {
	case writers > 1:
		return "two writers told they hold the lock"
	}
	for i, h := range w.writers {
		if h && w.readers[1-i] > 0 {
			return "a writer and another thread's reader told they hold the lock"
		}
	}
	return ""
}

func (c *rwChecker) successors(w rwWorld) []rwStep {
	var out []rwStep
	for i := range 2 {
		if w.readers[i] < c.maxHolds {
			for _, f := range c.fates {
				for _, late := range []bool{false, true} {
					if late && slices.ContainsFunc(f, func(f nodeFate) bool { return f != fateUp }) {
						continue // run out of validity: with every node up
					}
					if next, bad, ok := c.takeRead(w, i, f, late); ok {
						out = append(out, rwStep{next, fmt.Sprintf("reader %d takes %v (out of validity %v)", i, f, late), bad})
					}
				}
			}
		}
		if w.readers[i] > 0 {
			for _, f := range c.fates {
				if slices.Contains(f, fateLate) {
					continue // an unlock has no undo: late is lost
				}
				out = append(out, rwStep{c.unlockRead(w, i, f), fmt.Sprintf("reader %d unlocks %v", i, f), ""})
			}
		}
	}
	for i := range c.writers {
		if !w.writers[i] {
			for _, f := range c.fates {
				if next, ok := c.takeWrite(w, i, f); ok {
					out = append(out, rwStep{next, fmt.Sprintf("writer %d takes %v", i, f), ""})
				}
			}
		} else {
			for _, f := range c.fates {
				if !slices.Contains(f, fateLate) {
					out = append(out, rwStep{c.unlockWrite(w, i, f), fmt.Sprintf("writer %d unlocks %v", i, f), ""})
				}
			}
		}
	}
	if int(w.restarts) < c.maxRestarts {
		for j := range w.nodes {
			next := w.clone()
			next.nodes[j] = rwNodeState{quarantined: true}
			next.restarts++
			out = append(out, rwStep{next, fmt.Sprintf("node %d restarts empty", j), ""})
		}
	}
	return out
}

// runTakeRead is rwlock_take.lua on one node: whether it granted.
func (c *rwChecker) runTakeRead(s *rwNodeState, i int) bool {
	switch {
	case s.mode == 0:
		s.mode, s.r[i] = 1, 1
	case s.mode == 1, s.w[i], c.underAnyWrite:
		s.r[i]++ // read, or under its own thread's write lock
	default:
		return false // another thread's write lock
	}
	return true
}

// undoTakeRead is rwlock_undo.lua: one hold of the reader off.
func undoTakeRead(s *rwNodeState, i int) {
	if s.r[i] == 0 {
		return
	}
	s.r[i]--
	if s.mode == 1 && s.r[0] == 0 && s.r[1] == 0 {
		s.mode = 0
	}
}

func (c *rwChecker) takeRead(w rwWorld, i int, fates []nodeFate, outOfValidity bool) (next rwWorld, bad string, ok bool) {
	next = w.clone()
	results := make([]result[ReadTake], c.n)
	counted := make([]bool, c.n)
	landed := make([]bool, c.n)
	for j, f := range fates {
		s := &next.nodes[j]
		counted[j] = !s.quarantined
		switch f {
		case fateUp:
			if s.r[i] >= c.nodeHolds {
				return w, "", false // bounded: a model of few holds
			}
			prior := int(s.r[i])
			landed[j] = c.runTakeRead(s, i)
			results[j] = result[ReadTake]{v: ReadTake{Granted: landed[j], Prior: prior, PTTL: time.Second}}
		case fateLost:
			if s.r[i] >= c.nodeHolds {
				return w, "", false
			}
			landed[j] = c.runTakeRead(s, i)
			results[j] = result[ReadTake]{err: errModelFailed}
		default:
			results[j] = result[ReadTake]{err: errModelFailed}
		}
	}
	elapsed := time.Duration(0)
	if outOfValidity {
		elapsed = time.Second
	}
	start := time.Unix(0, 0)
	d := c.decideTake(readTakeVotes{results: results, counted: counted, quorum: c.quorum, ttl: time.Second, start: start, now: start.Add(elapsed), driftFactor: 0.01})
	for j, f := range fates {
		s := &next.nodes[j]
		if d.undo[j] && landed[j] {
			undoTakeRead(s, i)
		}
		if f == fateLate {
			if s.r[i] >= c.nodeHolds {
				return w, "", false
			}
			c.runTakeRead(s, i)
		}
	}
	if d.err == nil {
		next.readers[i]++
		held := 0
		for _, s := range next.nodes {
			if !s.quarantined && s.r[i] > 0 {
				held++
			}
		}
		if held < c.quorum && !c.noSanity {
			bad = fmt.Sprintf("reader %d granted with its hold on %d counted nodes: %v", i, held, next)
		}
	}
	return next, bad, true
}

func (c *rwChecker) unlockRead(w rwWorld, i int, fates []nodeFate) rwWorld {
	next := w.clone()
	results := make([]result[ReadRelease], c.n)
	counted := make([]bool, c.n)
	for j, f := range fates {
		s := &next.nodes[j]
		counted[j] = !s.quarantined
		if f == fateCut {
			results[j] = result[ReadRelease]{err: errModelFailed}
			continue
		}
		held := s.r[i] > 0
		undoTakeRead(s, i) // an unlock drops one hold, as an undo does
		results[j] = result[ReadRelease]{v: ReadRelease{Held: held, Free: s.mode == 0}}
		if f == fateLost {
			results[j] = result[ReadRelease]{err: errModelFailed}
		}
	}
	decideReadRelease(results, counted, c.quorum, nil)
	// Whatever the answer, the reader has given the hold up.
	next.readers[i]--
	return next
}

func (c *rwChecker) takeWrite(w rwWorld, i int, fates []nodeFate) (rwWorld, bool) {
	next := w.clone()
	o := Outcome{Total: c.n}
	created := make([]bool, c.n)
	run := func(s *rwNodeState) bool {
		switch {
		case s.mode == 0:
			s.mode, s.w[i] = 2, true
			return true
		case s.mode == 2 && s.w[i]:
			return true // re-entry on a residue
		}
		return false
	}
	granted := make([]bool, c.n)
	for j, f := range fates {
		s := &next.nodes[j]
		switch f {
		case fateUp, fateLost:
			created[j] = s.mode == 0
			granted[j] = run(s)
			switch {
			case f == fateLost:
				o.Failed++
			case granted[j] && s.quarantined:
				o.Quarantined++
			case granted[j]:
				o.Granted++
			default:
				o.Denied++
			}
		default:
			o.Failed++
		}
	}
	err := verdict(o, c.quorum, nil)
	for j, f := range fates {
		s := &next.nodes[j]
		if err != nil && created[j] && granted[j] {
			s.mode, s.w[i] = 0, false // the take's undo: what it took new
		}
		if f == fateLate {
			run(s)
		}
	}
	if err == nil {
		next.writers[i] = true
	}
	return next, true
}

func (c *rwChecker) unlockWrite(w rwWorld, i int, fates []nodeFate) rwWorld {
	next := w.clone()
	for j, f := range fates {
		s := &next.nodes[j]
		if f != fateCut && s.w[i] {
			s.w[i] = false
			if s.r[0] == 0 && s.r[1] == 0 {
				s.mode = 0
			} else {
				s.mode = 1
			}
		}
	}
	next.writers[i] = false
	return next
}

// TestReadLockNeverBesideWriter explores every reachable state of two
// readers and one writer over 3 and 5 nodes (and two writers over 3).
func TestReadLockNeverBesideWriter(t *testing.T) {
	if modelUnderRace {
		t.Skip("the explorer runs on one goroutine: nothing for the race detector, and ten times slower")
	}
	for _, cfg := range []struct {
		n, writers, restarts int
		holds, nodeHolds     uint8
	}{{3, 1, 1, 2, 3}, {3, 2, 1, 2, 3}, {5, 1, 1, 2, 2}} {
		if testing.Short() && (cfg.n > 3 || cfg.writers > 1) {
			continue
		}
		t.Run(fmt.Sprintf("%d nodes, 2 readers, %d writers", cfg.n, cfg.writers), func(t *testing.T) {
			start := time.Now()
			c := newRWChecker(cfg.n, cfg.writers, cfg.restarts, decideReadTake)
			c.maxHolds, c.nodeHolds = cfg.holds, cfg.nodeHolds
			if testing.Short() {
				c.maxHolds = 1 // no re-entry: seconds rather than minutes
			}
			c.run()
			t.Logf("%d states, %d steps, in %v", c.states, c.steps, time.Since(start).Round(time.Millisecond))
			if c.violation != "" {
				t.Fatal(c.violation)
			}
		})
	}
}

// TestReadLockCheckerCatchesBrokenDecisions is the negative control:
// decisions that grant a reader without a quorum, or nodes that grant it
// under another thread's write lock, must fail the checker.
func TestReadLockCheckerCatchesBrokenDecisions(t *testing.T) {
	for _, tt := range []struct {
		name          string
		decide        func(readTakeVotes) readTakeDecision
		underAnyWrite bool
	}{
		{"a reader granted on a minority", func(v readTakeVotes) readTakeDecision {
			v.quorum = 1
			return decideReadTake(v)
		}, false},
		{"a re-entry's grant counted on a node below its depth", func(v readTakeVotes) readTakeDecision {
			for i := range v.results {
				v.results[i].v.Prior = 1 << 20
			}
			return decideReadTake(v)
		}, false},
		{"a quarantined node's grant counted", func(v readTakeVotes) readTakeDecision {
			v.counted = slices.Repeat([]bool{true}, len(v.counted))
			return decideReadTake(v)
		}, false},
		{"a reader granted under another thread's write lock", decideReadTake, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newRWChecker(3, 1, 1, tt.decide)
			c.noSanity, c.underAnyWrite = true, tt.underAnyWrite
			c.run()
			if c.violation == "" {
				t.Fatalf("the checker passes a broken decision (%d states)", c.states)
			}
			t.Logf("after %d states: %s", c.states, c.violation)
		})
	}
}
