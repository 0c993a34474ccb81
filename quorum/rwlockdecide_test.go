package quorum

import (
	"errors"
	"testing"
	"time"
)

// wrongType is a node's WRONGTYPE error reply.
var wrongType = replyErr("WRONGTYPE Operation against a key holding the wrong kind of value script: 1f2e, on @user_script:13.")

// rwTakeVotes builds one result per node from a string: g granted, d
// denied (PTTL 100ms times its place), f failed, x down, q granted while
// quarantined, o the same thread's write lock, w WRONGTYPE, W WRONGTYPE
// while quarantined.
func rwTakeVotes(s string, ttl, elapsed time.Duration) readTakeVotes {
	start := time.Unix(0, 0)
	v := readTakeVotes{quorum: Quorum(len(s)), ttl: ttl, start: start, now: start.Add(elapsed), driftFactor: 0.01}
	for i, c := range s {
		r := result[ReadTake]{}
		switch c {
		case 'g', 'q':
			r.v.Granted = true
		case 'd':
			r.v.PTTL = time.Duration(i+1) * 100 * time.Millisecond
		case 'f':
			r.err = &NodeError{Node: i, Err: errors.New("i/o timeout")}
		case 'x':
			r.err = &NodeError{Node: i, Err: ErrNodeDown}
		case 'w', 'W':
			r.err = &NodeError{Node: i, Err: wrongType}
		}
		v.results = append(v.results, r)
		v.counted = append(v.counted, c != 'q' && c != 'W')
	}
	return v
}

func TestDecideReadTake(t *testing.T) {
	for _, tc := range []struct {
		nodes   string
		elapsed time.Duration
		want    error // nil: granted
		pttl    time.Duration
		undo    string // per node: u undone, - not
	}{
		{"ggggg", 0, nil, 0, "-----"},
		{"gggdd", 0, nil, 0, "-----"},
		{"ggxxg", 0, nil, 0, "-----"},
		{"ggfdd", 0, ErrUnavailable, 0, "uuu--"},
		{"ggddd", 0, ErrDenied, 300 * time.Millisecond, "uu---"}, // one more must free: the shortest PTTL
		{"gdddd", 0, ErrDenied, 300 * time.Millisecond, "u----"},
		{"ggqdd", 0, ErrUnavailable, 0, "uuu--"}, // a quarantined grant could have made it
		{"ffxgg", 0, ErrUnavailable, 0, "uu-uu"},
		{"ggggg", time.Second, ErrDenied, 0, "uuuuu"}, // validity ran out
		{"ggd", 0, nil, 0, "---"},
		{"gdd", 0, ErrDenied, 200 * time.Millisecond, "u--"},
		// A key of another type on a quorum: Redis's WRONGTYPE, and the
		// grants elsewhere undone; on fewer, the nodes disagree: unavailable.
		{"wwwgg", 0, ErrWrongType, 0, "uuuuu"},
		{"wwwdd", 0, ErrWrongType, 0, "uuu--"},
		{"wwfgg", 0, ErrUnavailable, 0, "uuuuu"},
		{"wwWgg", 0, ErrUnavailable, 0, "uuuuu"}, // a quarantined node's answer does not count
		{"wwggg", 0, nil, 0, "-----"},
	} {
		d := decideReadTake(rwTakeVotes(tc.nodes, time.Second, tc.elapsed))
		if tc.want == nil && d.err != nil || tc.want != nil && !errors.Is(d.err, tc.want) {
			t.Errorf("%s: err %v; want %v", tc.nodes, d.err, tc.want)
		}
		if d.pttl != tc.pttl {
			t.Errorf("%s: pttl %v; want %v", tc.nodes, d.pttl, tc.pttl)
		}
		undo := ""
		for _, u := range d.undo {
			undo += map[bool]string{true: "u", false: "-"}[u]
		}
		if undo != tc.undo {
			t.Errorf("%s: undo %s; want %s", tc.nodes, undo, tc.undo)
		}
	}
}

// TestDecideReadTakeLease: a granted take's lease is decide's: validity
// from the first send to the last answer, less the drift allowance, and
// the expiry from the first send.
func TestDecideReadTakeLease(t *testing.T) {
	v := rwTakeVotes("gggdq", time.Second, 30*time.Millisecond)
	d := decideReadTake(v)
	// 1s - 30ms - (10ms + 2ms) = 958ms; expiry 1s - 12ms after the start.
	if d.err != nil || d.lease.Validity != 958*time.Millisecond || !d.lease.Expires.Equal(v.start.Add(988*time.Millisecond)) || d.lease.Granted != 3 {
		t.Errorf("decideReadTake(gggdq, 30ms) = %+v, %v; want validity 958ms, expiry start+988ms, 3 granted", d.lease, d.err)
	}
	if d.ttl != time.Second {
		t.Errorf("decideReadTake(gggdq).ttl = %v; want 1s (reported with the validity)", d.ttl)
	}
}

func TestDecideReadRelease(t *testing.T) {
	rel := func(s string) ([]result[ReadRelease], []bool) {
		var rs []result[ReadRelease]
		var counted []bool
		for i, c := range s {
			r := result[ReadRelease]{}
			switch c {
			case 'H': // held, free after
				r.v = ReadRelease{Held: true, Free: true}
			case 'h': // held, others still there
				r.v = ReadRelease{Held: true}
			case 'N': // nothing here at all
				r.v = ReadRelease{Free: true}
			case 'n': // others' lock, not the reader's
			case 'L':
				r.v = ReadRelease{Latched: true, Latch: Value{Kind: ValueInt, Int: 1}}
			case 'f':
				r.err = &NodeError{Node: i, Err: errors.New("i/o timeout")}
			case 'w':
				r.err = &NodeError{Node: i, Err: wrongType}
			}
			rs = append(rs, r)
			counted = append(counted, true)
		}
		return rs, counted
	}
	for _, tc := range []struct {
		nodes   string
		reply   string // nil, 0, 1, err or wrongtype
		publish bool
	}{
		{"HHHHH", "1", true},
		{"HHHhh", "1", true},
		{"HHhhh", "0", false},
		{"HHHff", "1", true},
		{"HHfff", "err", false},
		{"HHnnf", "err", false},
		{"nnnHH", "nil", false},
		{"NNNhh", "nil", true}, // gone on a quorum: one Redis publishes too
		{"LLLff", "1", false},  // the latch answers, and publishes nothing
		{"LLHHf", "1", true},
		{"wwwHH", "wrongtype", false},
		{"wwfHH", "err", false},
	} {
		rs, counted := rel(tc.nodes)
		d := decideReadRelease(rs, counted, Quorum(len(rs)), nil)
		got := "err"
		switch {
		case errors.Is(d.err, ErrWrongType):
			got = "wrongtype"
		case d.err != nil:
			if !errors.Is(d.err, ErrUnavailable) {
				t.Errorf("%s: %v; want unavailable", tc.nodes, d.err)
			}
		case d.reply.Kind == ValueNil:
			got = "nil"
		default:
			got = string(rune('0' + d.reply.Int))
		}
		if got != tc.reply || d.publish != tc.publish {
			t.Errorf("%s: reply %s, publish %v; want %s, %v", tc.nodes, got, d.publish, tc.reply, tc.publish)
		}
	}
}

// A write lock's unlock answers 0 only where a quorum still holds a
// hold of it, 1 where a quorum released its last, nil where a quorum
// held nothing; any other split is unavailable.
func TestDecideWriteRelease(t *testing.T) {
	rel := func(s string) ([]result[WriteRelease], []bool) {
		var rs []result[WriteRelease]
		var counted []bool
		for i, c := range s {
			r := result[WriteRelease]{}
			switch c {
			case 'R': // released, the hash gone
				r.v = WriteRelease{Outcome: relReleased, Flag: true}
			case 'r': // released, its reader left (mode read)
				r.v = WriteRelease{Outcome: relReleased}
			case 'c': // counted down
				r.v = WriteRelease{Outcome: relCounted}
			case 'N': // no lock at all
				r.v = WriteRelease{Outcome: relNotHeld, Flag: true}
			case 'n': // another's lock
				r.v = WriteRelease{Outcome: relNotHeld}
			case '0', '1':
				r.v = WriteRelease{Latched: true, Latch: Value{Kind: ValueInt, Int: int64(c - '0')}}
			case 'f':
				r.err = &NodeError{Node: i, Err: errors.New("i/o timeout")}
			case 'w':
				r.err = &NodeError{Node: i, Err: wrongType}
			}
			rs = append(rs, r)
			counted = append(counted, c != 'q')
		}
		return rs, counted
	}
	for _, tc := range []struct {
		nodes   string
		reply   string // nil, 0, 1, err or wrongtype
		publish bool
	}{
		{"RRRRR", "1", true},
		{"rrrRR", "1", false}, // its reader keeps the lock on a quorum
		{"RRRff", "1", true},
		{"cccRR", "0", false}, // a re-entry held on a quorum: still held there
		{"ccRRR", "1", true},
		{"ccRRf", "err", false}, // neither on a quorum
		{"ccfff", "err", false},
		{"nnnRR", "nil", false},
		{"NNNcc", "nil", true}, // gone on a quorum: one Redis publishes too
		{"111ff", "1", false},  // the latch answers, and publishes nothing
		{"00cff", "0", false},
		{"11RRf", "1", false},
		{"01cRf", "err", false},
		{"wwwRR", "wrongtype", false},
		{"wwfRR", "err", false},
	} {
		rs, counted := rel(tc.nodes)
		d := decideWriteRelease(rs, counted, Quorum(len(rs)), nil)
		got := "err"
		switch {
		case errors.Is(d.err, ErrWrongType):
			got = "wrongtype"
		case d.err != nil:
			if !errors.Is(d.err, ErrUnavailable) {
				t.Errorf("%s: %v; want unavailable", tc.nodes, d.err)
			}
		case d.reply.Kind == ValueNil:
			got = "nil"
		default:
			got = string(rune('0' + d.reply.Int))
		}
		if got != tc.reply || d.publish != tc.publish {
			t.Errorf("%s: reply %s, publish %v; want %s, %v", tc.nodes, got, d.publish, tc.reply, tc.publish)
		}
	}
}

func TestDecideReadRenewAndForce(t *testing.T) {
	ok := func(v ...int64) result[[]int64] { return result[[]int64]{v: v} }
	fail := result[[]int64]{err: errors.New("down")}
	all := []bool{true, true, true, true, true}
	t0 := time.Unix(0, 0)
	got, err := decideRenew([]result[[]int64]{ok(1, 0), ok(1, 0), ok(1, 0), ok(0, 0), fail}, all, 3, 2, time.Second, t0, t0, 0.01)
	if err != nil || got[0] != 1 || got[1] != 0 {
		t.Errorf("renew = %v, %v; want [1 0]", got, err)
	}
	if _, err := decideRenew([]result[[]int64]{ok(1), ok(1), ok(0), fail, fail}, all, 3, 1, time.Second, t0, t0, 0.01); !errors.Is(err, ErrUnavailable) {
		t.Errorf("renew split = %v; want unavailable", err)
	}
	if got, err := decideRenew([]result[[]int64]{ok(1), ok(1), ok(1), fail, fail}, all, 3, 1, time.Second, t0, t0.Add(time.Second), 0.01); err != nil || got[0] != 0 {
		t.Errorf("renew past validity = %v, %v; want [0]", got, err)
	}
	// Over 4 nodes, renewed on 2 and not held on 2: no quorum can have
	// renewed it, so 0, as Extend decides (not unavailable).
	if got, err := decideRenew([]result[[]int64]{ok(1), ok(1), ok(0), ok(0)}, all[:4], 3, 1, time.Second, t0, t0, 0.01); err != nil || got[0] != 0 {
		t.Errorf("renew on 2 of 4 = %v, %v; want [0]", got, err)
	}
	wt := result[[]int64]{err: &NodeError{Err: wrongType}}
	if _, err := decideRenew([]result[[]int64]{wt, wt, wt, ok(1), ok(1)}, all, 3, 1, time.Second, t0, t0, 0.01); !errors.Is(err, ErrWrongType) {
		t.Errorf("renew of a key of another type on 3 of 5 = %v; want ErrWrongType", err)
	}
	if _, err := decideRenew([]result[[]int64]{wt, wt, fail, ok(1), ok(1)}, all, 3, 1, time.Second, t0, t0, 0.01); !errors.Is(err, ErrUnavailable) {
		t.Errorf("renew of a key of another type on 2 of 5 = %v; want unavailable", err)
	}
	f := func(v int64) result[int64] { return result[int64]{v: v} }
	ff := result[int64]{err: errors.New("down")}
	if v, err := decideReadForce([]result[int64]{f(0), f(1), f(0), ff, ff}, all, 3, nil); v != 1 || err != nil {
		t.Errorf("force = %d, %v; want 1", v, err)
	}
	if _, err := decideReadForce([]result[int64]{f(1), f(1), ff, ff, ff}, all, 3, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("force with 2 of 5 = %v; want unavailable", err)
	}
	fw := result[int64]{err: &NodeError{Err: wrongType}}
	if _, err := decideReadForce([]result[int64]{fw, fw, fw, f(0), f(0)}, all, 3, nil); !errors.Is(err, ErrWrongType) {
		t.Errorf("force on a key of another type on 3 of 5 = %v; want ErrWrongType", err)
	}
}
