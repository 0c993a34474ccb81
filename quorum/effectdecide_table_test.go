package quorum

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

func TestDecideEffect(t *testing.T) {
	s := 10 * time.Second
	down := &NodeError{Err: ErrNodeDown}
	lost := &NodeError{Err: errors.New("i/o timeout")}
	u := func(key int, tokens ...string) []KeyUndo { return []KeyUndo{{Key: key, Tokens: tokens}} }
	tests := []struct {
		name    string
		results []result[NodeEffect]
		counted []bool // nil: every node counts
		elapsed time.Duration
		// want
		op      EffectOp
		granted bool
		reply   int   // -1: none
		err     error // matched with errors.Is
		keys    []keyOutcome
		undo    [][]KeyUndo
	}{
		{name: "a take on a quorum is held, the minority's nil is not the answer",
			results: []result[NodeEffect]{vote(nilReply, KeyEffect{}), vote(okReply, took(s)), vote(okReply, took(s)), vote(okReply, took(s)), vote(nilReply, KeyEffect{})},
			op:      EffectHold, granted: true, reply: 1, keys: []keyOutcome{keyHeld}},
		{name: "finding 1: a stale own copy read on the first node does not answer",
			results: []result[NodeEffect]{vote(intReply(1), readOwn()), vote(intReply(0), KeyEffect{}), vote(intReply(0), KeyEffect{}), vote(intReply(0), KeyEffect{}), vote(intReply(1), took(s))},
			op:      EffectHold, reply: 1, keys: []keyOutcome{keyKept}, undo: [][]KeyUndo{4: u(0, "own")}},
		{name: "finding 2: lock-or-enqueue, each key by its own quorum",
			results: []result[NodeEffect]{vote(intReply(1), took(s), KeyEffect{}), vote(intReply(0), KeyEffect{}, took(s)), vote(intReply(0), KeyEffect{}, took(s)), vote(intReply(0), KeyEffect{}, took(s)), vote(intReply(0), KeyEffect{}, took(s))},
			op:      EffectHold, granted: true, reply: 1, keys: []keyOutcome{keyKept, keyHeld}, undo: [][]KeyUndo{0: u(0, "own")}},
		{name: "finding 2: take every free key, the count of one Redis",
			results: []result[NodeEffect]{vote(intReply(2), took(s), took(s)), vote(intReply(1), took(s), KeyEffect{}), vote(intReply(1), took(s), KeyEffect{}), vote(intReply(1), took(s), KeyEffect{}), vote(intReply(1), took(s), KeyEffect{})},
			op:      EffectHold, granted: true, reply: 1, keys: []keyOutcome{keyHeld, keyKept}, undo: [][]KeyUndo{0: u(1, "own")}},
		{name: "finding 4: the undo leaves a key the run only read",
			results: []result[NodeEffect]{vote(okReply, took(s), readOwn()), vote(okReply, took(s), readOwn()), vote(nilReply, KeyEffect{}, readOwn()), vote(nilReply, KeyEffect{}, readOwn()), vote(nilReply, KeyEffect{}, readOwn())},
			op:      EffectHold, reply: 2, keys: []keyOutcome{keyKept, keyKept}, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own")}},
		{name: "two takes, two kept and a failure decide nothing",
			results: []result[NodeEffect]{vote(okReply, took(s)), vote(okReply, took(s)), vote(nilReply, KeyEffect{}), vote(nilReply, KeyEffect{}), failedVote(lost)},
			op:      EffectHold, reply: -1, err: ErrUnavailable, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own")}},
		{name: "a read is no plurality: 2 against 1 of 5, two failed",
			results: []result[NodeEffect]{vote(intReply(1)), vote(intReply(1)), vote(intReply(0)), failedVote(lost), failedVote(lost)},
			op:      EffectRead, reply: -1, err: ErrUnavailable},
		{name: "a read has no tie-break: 2 against 2",
			results: []result[NodeEffect]{vote(intReply(0)), vote(intReply(1)), vote(intReply(1)), vote(intReply(0)), failedVote(lost)},
			op:      EffectRead, reply: -1, err: ErrUnavailable},
		{name: "a read a quorum agrees on, whichever node answers first",
			results: []result[NodeEffect]{vote(intReply(1)), vote(intReply(0)), vote(intReply(0)), vote(intReply(0)), vote(intReply(1))},
			op:      EffectRead, granted: true, reply: 1},
		{name: "PTTLs read milliseconds apart agree",
			results: []result[NodeEffect]{vote(intReply(29_998)), vote(intReply(29_997)), vote(intReply(29_999)), failedVote(lost), failedVote(lost)},
			op:      EffectRead, granted: true, reply: 0},
		{name: "quarantined nodes do not count, also for a read",
			results: []result[NodeEffect]{vote(intReply(1)), vote(intReply(1)), vote(intReply(1)), vote(intReply(0)), vote(intReply(0))},
			counted: []bool{true, false, false, true, true},
			op:      EffectRead, reply: -1, err: ErrUnavailable},
		{name: "quarantined takes do not count",
			results: []result[NodeEffect]{vote(okReply, took(s)), vote(okReply, took(s)), vote(okReply, took(s)), vote(nilReply, KeyEffect{}), vote(nilReply, KeyEffect{})},
			counted: []bool{true, true, false, true, true},
			op:      EffectHold, reply: -1, err: ErrUnavailable, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own"), 2: u(0, "own")}},
		{name: "no validity left: denied, undone, also where the reply was lost",
			results: []result[NodeEffect]{vote(okReply, took(s)), vote(okReply, took(s)), vote(okReply, took(s)), failedVote(lost), failedVote(down)},
			elapsed: s,
			op:      EffectHold, reply: -1, err: ErrDenied, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own"), 2: u(0, "own"), 3: u(0, "own")}},
		{name: "failed nodes are not undone when too few took the key new",
			results: []result[NodeEffect]{vote(okReply, took(s)), vote(okReply, took(s)), vote(nilReply, KeyEffect{}), failedVote(lost), failedVote(lost)},
			op:      EffectHold, reply: -1, err: ErrUnavailable, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own")}},
		// A renewal landing in the millisecond of the take sets the expiry
		// the hold had: that node holds it, as extended (rw20b's flake).
		{name: "an extend beside holds whose expiry it left as it was",
			results: []result[NodeEffect]{vote(intReply(1), extended(s)), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: s}), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: s}), failedVote(down), failedVote(down)},
			op:      EffectHold, granted: true, reply: 0, keys: []keyOutcome{keyHeld}},
		// A script that extended the key on one node and left an older,
		// shorter hold on two (it returns 1 either way): those end first,
		// and the quorum with them.
		{name: "holds left shorter than the extend set do not count",
			results: []result[NodeEffect]{vote(intReply(1), extended(s)), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: s / 2}), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: s / 2}), failedVote(down), failedVote(down)},
			op:      EffectHold, reply: -1, err: ErrUnavailable},
		{name: "holds left as they were do not make a quorum alone, nor beside another token's",
			results: []result[NodeEffect]{vote(intReply(1), extended(s)), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Hold: s, Others: 1}), vote(intReply(1), KeyEffect{}), failedVote(down), failedVote(down)},
			op:      EffectHold, reply: -1, err: ErrUnavailable},
		{name: "a re-entry that fails is not undone",
			results: []result[NodeEffect]{vote(nilReply, extended(s)), failedVote(lost), failedVote(lost)},
			op:      EffectHold, reply: -1, err: ErrUnavailable},
		{name: "a key other tokens hold needs every node",
			results: []result[NodeEffect]{vote(intReply(1), KeyEffect{AfterOwn: []string{"own"}, Changed: true, Hold: s, Others: 1}), vote(intReply(1), took(s)), vote(intReply(1), took(s)), vote(intReply(1), took(s)), vote(intReply(0), KeyEffect{})},
			op:      EffectHold, reply: -1, err: ErrUnavailable, undo: [][]KeyUndo{0: u(0, "own"), 1: u(0, "own"), 2: u(0, "own"), 3: u(0, "own")}},
		{name: "an extend of a key other tokens hold, by a holder on a quorum, needs a quorum",
			results: []result[NodeEffect]{vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Changed: true, Hold: s, Others: 1}), vote(intReply(1), extended(s)), vote(intReply(1), extended(s)), failedVote(lost), failedVote(lost)},
			op:      EffectHold, granted: true, reply: 0, keys: []keyOutcome{keyHeld}},
		{name: "a minority's hold of a key other tokens hold, grown to a quorum, needs every node",
			results: []result[NodeEffect]{vote(intReply(1), took(s)), vote(intReply(0), KeyEffect{}), vote(intReply(0), KeyEffect{}), vote(intReply(1), KeyEffect{BeforeOwn: []string{"own"}, AfterOwn: []string{"own"}, Changed: true, Hold: s, Others: 1}), vote(intReply(1), extended(s))},
			op:      EffectHold, reply: -1, err: ErrUnavailable, undo: [][]KeyUndo{0: u(0, "own")}},
		{name: "a release by a quorum, with a latch taken beside it",
			results: []result[NodeEffect]{vote(intReply(1), released(), took(3*time.Second)), vote(intReply(1), released(), took(3*time.Second)), vote(intReply(1), released(), took(3*time.Second))},
			op:      EffectRelease, granted: true, reply: 0, keys: []keyOutcome{keyReleased, keyHeld}},
		{name: "a key taken beside a release needs validity: a hand-off with none left is expired and its take undone",
			results: []result[NodeEffect]{vote(intReply(1), released(), took(10*time.Millisecond)), vote(intReply(1), released(), took(10*time.Millisecond)), failedVote(lost)},
			elapsed: 20 * time.Millisecond,
			op:      EffectRelease, reply: -1, err: ErrDenied, undo: [][]KeyUndo{0: u(1, "own"), 1: u(1, "own"), 2: u(1, "own")}},
		{name: "a release a minority did is denied",
			results: []result[NodeEffect]{vote(intReply(1), released()), vote(intReply(0), KeyEffect{}), vote(intReply(0), KeyEffect{})},
			op:      EffectRelease, reply: 1, keys: []keyOutcome{keyKept}},
		{name: "a refusal on one node refuses the run and undoes the takes",
			results: []result[NodeEffect]{vote(okReply, took(s)), {v: NodeEffect{Refused: "it removes another token's hold"}}, vote(okReply, took(s))},
			op:      EffectHold, reply: -1, err: ErrRefused, undo: [][]KeyUndo{0: u(0, "own"), 2: u(0, "own")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.results)
			counted := tt.counted
			if counted == nil {
				counted = slices.Repeat([]bool{true}, n)
			}
			nkeys := 0
			for _, r := range tt.results {
				nkeys = max(nkeys, len(r.v.Keys))
			}
			d := decideEffect(effectVotes{results: tt.results, nkeys: nkeys, counted: counted, quorum: n/2 + 1,
				elapsed: tt.elapsed, nodeTimeout: 50 * time.Millisecond, driftFactor: 0.01})
			if d.op != tt.op || d.granted != tt.granted || d.reply != tt.reply {
				t.Errorf("decideEffect = op %v granted %v reply %d; want op %v granted %v reply %d", d.op, d.granted, d.reply, tt.op, tt.granted, tt.reply)
			}
			switch {
			case tt.err == nil && d.err != nil, tt.err != nil && !errors.Is(d.err, tt.err):
				t.Errorf("decideEffect err = %v; want %v", d.err, tt.err)
			}
			if tt.err == nil && !slices.Equal(d.keys, tt.keys) {
				t.Errorf("decideEffect keys = %v; want %v", d.keys, tt.keys)
			}
			want := make([][]KeyUndo, n)
			copy(want, tt.undo)
			if fmt.Sprint(d.undo) != fmt.Sprint(want) {
				t.Errorf("decideEffect undo = %v; want %v", d.undo, want)
			}
		})
	}
}

// TestDecideEffectValidity pins a held key's validity: the quorum's TTL
// (the quorum-th longest hold) minus the elapsed time and the drift.
func TestDecideEffectValidity(t *testing.T) {
	ms := time.Millisecond
	results := []result[NodeEffect]{vote(okReply, took(1000*ms)), vote(okReply, took(990*ms)), vote(okReply, took(980*ms)), vote(okReply, took(970*ms)), vote(nilReply, KeyEffect{})}
	d := decideEffect(effectVotes{results: results, nkeys: 1, counted: slices.Repeat([]bool{true}, 5), quorum: 3,
		elapsed: 30 * ms, nodeTimeout: 50 * ms, driftFactor: 0.01})
	// 980ms - 30ms - (9.8ms + 2ms) = 938.2ms; the held count is the 4.
	if d.err != nil || d.ttl != 980*ms || d.validity != 938200*time.Microsecond || d.held != 4 || !d.took {
		t.Errorf("decideEffect = ttl %v validity %v held %d took %v, %v; want 980ms 938.2ms 4 true", d.ttl, d.validity, d.held, d.took, d.err)
	}
}

// TestDecideEffectNewLock: a key taken new beside an extend or a release
// is a new lock (the proxy gives it back while draining), though the run
// as a whole is no new take.
func TestDecideEffectNewLock(t *testing.T) {
	s := 10 * time.Second
	tests := []struct {
		name          string
		results       []result[NodeEffect]
		took, newLock bool
	}{
		{"a take", []result[NodeEffect]{vote(okReply, took(s)), vote(okReply, took(s)), vote(okReply, took(s))}, true, true},
		{"an extend", []result[NodeEffect]{vote(okReply, extended(s)), vote(okReply, extended(s)), vote(okReply, extended(s))}, false, false},
		{"a take beside an extend", []result[NodeEffect]{vote(okReply, extended(s), took(s)), vote(okReply, extended(s), took(s)), vote(okReply, extended(s), took(s))}, false, true},
		{"a take beside a release", []result[NodeEffect]{vote(okReply, released(), took(s)), vote(okReply, released(), took(s)), vote(okReply, released(), took(s))}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nkeys := len(tt.results[0].v.Keys)
			d := decideEffect(effectVotes{results: tt.results, nkeys: nkeys, counted: []bool{true, true, true}, quorum: 2,
				nodeTimeout: 50 * time.Millisecond, driftFactor: 0.01})
			if d.err != nil || !d.granted || d.took != tt.took || d.newLock != tt.newLock {
				t.Errorf("decideEffect = err %v granted %v took %v newLock %v; want granted, took %v newLock %v", d.err, d.granted, d.took, d.newLock, tt.took, tt.newLock)
			}
		})
	}
}

// TestDecideEffectRetry: a hold that fails undecided, split, may be tried
// again only when nothing it may have changed on a node stays once it is
// undone (one client command changes each node at most once).
func TestDecideEffectRetry(t *testing.T) {
	s := 10 * time.Second
	lost := &NodeError{Err: errors.New("i/o timeout")}
	refused := &NodeError{Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	down := &NodeError{Err: ErrNodeDown}
	denied := vote(nilReply, KeyEffect{})
	tests := []struct {
		name    string
		results []result[NodeEffect]
		retry   bool
	}{
		{"a take undone, the others down before the run", []result[NodeEffect]{vote(okReply, took(s)), denied, denied, failedVote(down), failedVote(refused)}, true},
		{"a take undone, a node whose reply was lost and is not undone", []result[NodeEffect]{vote(okReply, took(s)), denied, denied, failedVote(down), failedVote(lost)}, false},
		// Held on a quorum, so the node whose reply was lost is undone too.
		{"replies split, the takes undone on every node that may have run", []result[NodeEffect]{vote(intReply(1), took(s)), vote(intReply(1), took(s)), vote(intReply(2), took(s)), denied, failedVote(lost)}, true},
		{"a re-entry (not undone)", []result[NodeEffect]{vote(nilReply, extended(s)), vote(intReply(5000), KeyEffect{}), failedVote(refused)}, false},
		{"replies split, a node whose reply was lost and is not undone", []result[NodeEffect]{vote(intReply(1), took(s)), vote(intReply(2), took(s)), denied, failedVote(lost), failedVote(lost)}, false},
		{"a release", []result[NodeEffect]{vote(intReply(1), released()), vote(intReply(0), readOwn()), failedVote(refused)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.results)
			d := decideEffect(effectVotes{results: tt.results, nkeys: 1, counted: slices.Repeat([]bool{true}, n), quorum: n/2 + 1,
				nodeTimeout: 50 * time.Millisecond, driftFactor: 0.01})
			if !errors.Is(d.err, ErrUnavailable) || d.retry != tt.retry {
				t.Errorf("decideEffect = err %v retry %v; want ErrUnavailable, retry %v", d.err, d.retry, tt.retry)
			}
		})
	}
}

// A node whose dial is refused never ran the script: its failure is one
// mayRetry counts as unsent (what the pipeline returns is the dial's
// *net.OpError, through the node's error chain).
func TestEffectRefusedDialIsUnsent(t *testing.T) {
	port := redistest.FreePort(t)
	n := RedisNode(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), false)
	t.Cleanup(func() { n.Close() })
	e := New(Config{MaxTTL: time.Minute}, n)
	_, err := n.RunEffect(t.Context(), e.Wrap(goZeroLock, nil), newEffectCall([]string{"k"}, []string{"tok", "5000"}, 1), nil)
	if err == nil || !unsent(&NodeError{Err: err}) {
		t.Errorf("runEffect on a closed port = %v; want an error unsent reports", err)
	}
}
