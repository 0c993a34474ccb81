package quorum

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// healthWant is what a decision on a probe leaves in a node's health.
type healthWant struct {
	act                         probeAction
	state                       NodeState
	reason                      string
	verified, pending, previous string
	until                       time.Time // of the latest quarantine
}

func checkHealth(t *testing.T, act probeAction, h *health, want healthWant) {
	t.Helper()
	got := healthWant{act, h.state, h.reason, h.verified, h.pending, h.previous, h.until}
	if got.act != want.act || got.state != want.state || got.reason != want.reason || got.verified != want.verified ||
		got.pending != want.pending || got.previous != want.previous || !got.until.Equal(want.until) {
		t.Errorf("decision = %+v; want %+v", got, want)
	}
	if c := h.counts.Load(); c != (h.state == StateUp) {
		t.Errorf("counts = %v in state %v; want %v", c, h.state, !c)
	}
}

// newHealthOf returns an engine over one node "a" (quarantines last
// quarantineFor) and that node's health, up with nothing verified.
func newHealthOf(t *testing.T, trust bool) (*Engine, *health) {
	cfg := monitorConfig(t)
	cfg.TrustFsyncAlways = trust
	e := New(cfg, &fakeNode{addr: "a"})
	return e, e.health[0]
}

func TestProbed(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	later, earlier := now.Add(time.Second), now.Add(-time.Millisecond)
	probe := Probe{RunID: "r1", Uptime: time.Hour, Local: now, Time: now}
	tests := []struct {
		name  string
		setup func(h *health)
		p     Probe
		gen   uint64
		want  healthWant
		known string
	}{
		{"another process seen since the probe began", func(h *health) { h.gen, h.runID = 1, "r2" }, probe, 0,
			healthWant{act: probeAgain, state: StateUp}, ""},
		{"a new connection saw the same process", func(h *health) { h.gen, h.runID, h.verified = 1, "r1", "r1" }, probe, 0,
			healthWant{act: probeDone, state: StateUp, verified: "r1"}, ""},
		{"loading", func(h *health) { h.verified = "r1" }, Probe{RunID: "r1", Loading: true, Local: now}, 0,
			healthWant{act: probeDone, state: StateUnverified, reason: "loading", verified: "r1"}, ""},
		// It counts again once its own record is read (syncRecord).
		{"the verified process", func(h *health) { h.verified = "r1"; h.setLocked(StateUnverified, time.Time{}, "x") }, probe, 0,
			healthWant{act: probeSettle, state: StateUnverified, reason: "x", verified: "r1"}, ""},
		{"the verified process, up", func(h *health) { h.verified = "r1" }, probe, 0,
			healthWant{act: probeDone, state: StateUp, verified: "r1"}, ""},
		{"the verified process back before its quarantine ends", func(h *health) {
			h.verified = "r1"
			h.setLocked(StateQuarantined, later, "restarted")
			h.setLocked(StateDown, time.Time{}, "unreachable")
		}, probe, 0, healthWant{act: probeDone, state: StateQuarantined, reason: "restarted", verified: "r1", until: later}, ""},
		{"the restarted process while its quarantine runs", func(h *health) {
			h.verified, h.pending = "r0", "r1"
			h.setLocked(StateQuarantined, later, "restarted")
		}, probe, 0, healthWant{act: probeDone, state: StateQuarantined, reason: "restarted", verified: "r0", pending: "r1", until: later}, ""},
		{"the restarted process once its quarantine is over", func(h *health) {
			h.verified, h.pending = "r0", "r1"
			h.setLocked(StateQuarantined, earlier, "restarted")
		}, probe, 0, healthWant{act: probeWrite, state: StateUp, verified: "r1", previous: "r0", until: earlier}, ""},
		// Its grants do not count while the records are read.
		{"a process not verified yet", func(h *health) { h.verified = "r0" }, probe, 0,
			healthWant{act: probeRecords, state: StateUnverified, reason: "new run_id", verified: "r0"}, "r0"},
		{"a first process", func(h *health) {}, probe, 0, healthWant{act: probeRecords, state: StateUnverified, reason: "new run_id"}, ""},
		// The node's clock moved 1s further than the proxy's since the
		// last probe: past the 100ms limit.
		{"a clock jump", func(h *health) {
			h.verified = "r1"
			r := clockReading{node: now.Add(-time.Second), local: now.Add(-time.Second)}
			h.clock = clockSample{runID: "r1", last: r, first: r}
		}, Probe{RunID: "r1", Uptime: time.Hour, Local: now, Time: now.Add(time.Second)}, 0,
			healthWant{act: probeDone, state: StateQuarantined, reason: "clock jumped +1s", verified: "r1", until: now.Add(quarantineFor)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, h := newHealthOf(t, false)
			tt.setup(h)
			act, known := e.probed(h, tt.p, tt.gen, now)
			checkHealth(t, act, h, tt.want)
			if known != tt.known {
				t.Errorf("known = %q; want %q", known, tt.known)
			}
			if tt.want.act != probeAgain && h.runID != tt.p.RunID {
				t.Errorf("runID = %q; want the probe's, %q", h.runID, tt.p.RunID)
			}
			if jumped := tt.want.reason == "clock jumped +1s"; jumped != (h.publish != "") {
				t.Errorf("lost mark to publish = %q; want one only for a clock jump", h.publish)
			}
		})
	}
}

func TestRecordsRead(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	read := now.Add(10 * time.Millisecond)
	recent, long := now.Add(-time.Second), now.Add(-time.Hour) // process starts
	p := Probe{RunID: "r1", Local: now, Time: now}
	rec := func(fields ...string) result[map[string]string] {
		m := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			m[fields[i]] = fields[i+1]
		}
		return result[map[string]string]{v: m}
	}
	recs := func(rs ...result[map[string]string]) []result[map[string]string] { return rs }
	failed := result[map[string]string]{v: map[string]string{"a": "r0"}, err: errors.New("timeout")}
	mark := func(end time.Time) string { return fmt.Sprintf("r1 %d data_lost", end.UnixMilli()) }
	up := func(verified, previous string) healthWant {
		return healthWant{act: probeWrite, state: StateUp, verified: verified, previous: previous}
	}
	known := func(previous string) healthWant { // its own record named it: not written again
		return healthWant{act: probeWriteKnown, state: StateUp, verified: "r1", previous: previous}
	}
	restarted := func(verified string, until time.Time) healthWant {
		return healthWant{act: probeDone, state: StateQuarantined, reason: "restarted", verified: verified, pending: "r1", until: until}
	}
	lost := func(until time.Time) healthWant {
		return healthWant{act: probeDone, state: StateQuarantined, reason: reasonDataLost, pending: "r1", until: until}
	}
	unreadable := func(reason string) healthWant {
		return healthWant{act: probeDone, state: StateUnverified, reason: reason}
	}
	tests := []struct {
		name    string
		start   time.Time
		runID   string // seen by the time the records are read
		known   string
		trust   bool
		current []string                    // the other nodes' run_ids
		recs    []result[map[string]string] // the node's own first
		want    healthWant
	}{
		{"another process seen meanwhile", recent, "r2", "", false, nil, recs(rec()),
			healthWant{act: probeAgain, state: StateUnverified}},
		// A record the proxy could not read may know an older process.
		{"fewer than a quorum of records read", recent, "r1", "", false, nil, recs(rec(), failed, failed),
			unreadable(reasonRecordsUnread)},
		{"its own record unread", recent, "r1", "", false, nil, recs(failed, rec(), rec()),
			unreadable(reasonRecordsUnread)},
		{"a first deployment", recent, "r1", "", false, []string{"x"}, recs(rec(), rec("b", "x")),
			up("r1", "")},
		// A minority of the records unread: a first deployment with a
		// master down (or a majority restarted empty, the rest
		// unreachable: the same to the proxy).
		{"a first deployment, a record unread", recent, "r1", "", false, []string{"x"}, recs(rec(), rec(), failed),
			up("r1", "")},
		{"a first deployment: another node verified first", recent, "r1", "", false, []string{"x"},
			recs(rec("b", "x"), rec("b", "x", "self", "x"), rec("b", "x")), up("r1", "")},
		{"its own record names it", recent, "r1", "", false, nil, recs(rec("self", "r1", "a", "r1"), rec("a", "r1")),
			known("")},
		{"its own record names it, another stale", recent, "r1", "", false, nil, recs(rec("self", "r1"), rec("a", "r0")),
			known("r0")},
		{"records from before the self field", recent, "r1", "", false, nil, recs(rec("a", "r1"), rec("a", "r1")),
			up("r1", "")},
		{"a record has another run_id: restarted empty", recent, "r1", "", false, nil, recs(rec(), rec("a", "r0")),
			restarted("r0", recent.Add(quarantineFor))},
		{"its own record names another process: restarted with its data", recent, "r1", "", false, nil,
			recs(rec("self", "r0", "a", "r0"), rec("a", "r0")), restarted("r0", recent.Add(quarantineFor))},
		{"restarted longer than max_ttl ago", long, "r1", "", false, nil, recs(rec(), rec("a", "r0")),
			up("r1", "r0")},
		{"this proxy verified another process", recent, "r1", "r0", false, nil, recs(rec(), rec(), rec()),
			restarted("r0", now.Add(quarantineFor))},
		// Another proxy verified it from its uptime; this one saw the
		// process before it, so it times the restart itself.
		{"this proxy verified another process, another proxy this one", long, "r1", "r0", false, nil,
			recs(rec("self", "r1", "a", "r1"), rec("a", "r1")), restarted("r0", now.Add(quarantineFor))},
		// The uptime says an hour (its clock stepped), but this proxy saw
		// the process before it a moment ago.
		{"seen the process before it, its uptime long", long, "r1", "r0", false, nil,
			recs(rec(), rec("a", "r0")), restarted("r0", now.Add(quarantineFor))},
		{"restarted with its data, running appendfsync always, trusted", recent, "r1", "", true, nil,
			recs(rec("self", "r0", "fsync", "r0"), rec("a", "r0")), up("r1", "r0")},
		// Only the new process syncs every write: the one before may have
		// lost its last second of grants.
		{"restarted with its data of a process that did not sync every write, trusted", recent, "r1", "", true, nil,
			recs(rec("self", "r0", "fsync", ""), rec("a", "r0")), restarted("r0", recent.Add(quarantineFor))},
		{"restarted with its data, no fsync field, trusted", recent, "r1", "", true, nil,
			recs(rec("self", "r0"), rec("a", "r0")), restarted("r0", recent.Add(quarantineFor))},
		// Its data is an older process's (a restored backup), not the one
		// before it.
		{"restarted with an older process's data, running appendfsync always, trusted", recent, "r1", "", true, nil,
			recs(rec("self", "r9"), rec("a", "r0")), restarted("r0", recent.Add(quarantineFor))},
		{"restarted empty, running appendfsync always, trusted", recent, "r1", "", true, nil,
			recs(rec(), rec("a", "r0")), restarted("r0", recent.Add(quarantineFor))},
		// FLUSHALL: the records name the process, its own lost the field.
		{"flushed", long, "r1", "", false, []string{"x"}, recs(rec(), rec("a", "r1", "self", "x")),
			lost(now.Add(quarantineFor))},
		{"flushed and refilled by another proxy", long, "r1", "", false, []string{"x"}, recs(rec("a", "r1"), rec("a", "r1", "self", "x")),
			lost(now.Add(quarantineFor))},
		{"flushed, another proxy's mark", long, "r1", "", false, []string{"x"},
			recs(rec(), rec("a", "r1", "self", "x", "lost:a", mark(now.Add(5*time.Second)))), lost(now.Add(5 * time.Second))},
		// The records know the node by another address, or name a node
		// this proxy does not serve.
		{"known by another address", recent, "r1", "", false, []string{"x"},
			recs(rec(), rec("127.0.0.1:1", "r0", "b", "x", "self", "x")), lost(now.Add(quarantineFor))},
		{"new beside a node it replaced", recent, "r1", "", false, []string{"x"},
			recs(rec(), rec("b", "x", "gone", "y", "self", "x")), lost(now.Add(quarantineFor))},
		{"a lost mark for this process", recent, "r1", "", false, nil, recs(rec("self", "r1", "lost:a", mark(now.Add(5*time.Second)))),
			healthWant{act: probeWriteKnown, state: StateQuarantined, reason: reasonDataLost, pending: "r1", until: now.Add(5 * time.Second)}},
		// The mark ends between the probe and the records' read.
		{"a lost mark over by the read", recent, "r1", "", false, nil, recs(rec("self", "r1", "lost:a", mark(read))),
			known("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, h := newHealthOf(t, tt.trust)
			h.setLocked(StateUnverified, time.Time{}, "")
			h.runID, h.start, h.verified, h.fsyncAlways = tt.runID, tt.start, tt.known, true
			current := map[string]bool{tt.runID: true}
			for _, id := range tt.current {
				current[id] = true
			}
			act := e.recordsRead(h, 0, p, tt.known, tt.recs, current, now, read)
			checkHealth(t, act, h, tt.want)
		})
	}
}

// A process no record this proxy could read knows is verified only once
// a quorum of the records were read: one it could not read may know an
// older process of the node (a restart that lost its locks), and its own
// says whether its data is the data verified. Until then
// it is unverified, also when it was down (unreachable at start).
func TestRecordsReadNeedsAQuorumOfRecords(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := Probe{RunID: "r1", Local: now, Time: now}
	failed := result[map[string]string]{err: errors.New("timeout")}
	none := result[map[string]string]{v: map[string]string{}}
	unread := healthWant{act: probeDone, state: StateUnverified, reason: reasonRecordsUnread}
	for _, tt := range []struct {
		name string
		from NodeState
		recs []result[map[string]string]
		want healthWant
	}{
		{"two of three unread", StateUnverified, []result[map[string]string]{failed, failed, none}, unread},
		{"two of three unread, back from down", StateDown, []result[map[string]string]{none, failed, failed}, unread},
		{"its own record unread", StateUnverified, []result[map[string]string]{failed, none, none}, unread},
		{"a quorum read", StateUnverified, []result[map[string]string]{none, failed, none},
			healthWant{act: probeWrite, state: StateUp, verified: "r1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := monitorConfig(t)
			e := New(cfg, &fakeNode{addr: "a"}, &fakeNode{addr: "b"}, &fakeNode{addr: "c"})
			h := e.health[0]
			h.setLocked(tt.from, time.Time{}, "")
			h.runID, h.start = "r1", now.Add(-time.Hour)
			checkHealth(t, e.recordsRead(h, 0, p, "", tt.recs, map[string]bool{"r1": true}, now, now), h, tt.want)
		})
	}
}

// The suspicion of TestRecordsReadNeedsAQuorumOfRecords over real
// redis-servers: a master restarted empty while no proxy ran, with the
// others' records unreadable (SIGSTOPped) when the next proxy starts, is
// not counted, and once their records can be read it is quarantined as
// restarted. Counted at once, it could grant beside one of the others a
// lock they held with its older process.
func TestRestartedMasterNotCountedWhileRecordsUnread(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	cfg := Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: 10 * time.Second, ProbeInterval: 100 * time.Millisecond, Log: testLog(t)}
	engine := func() *Engine {
		var nodes []Node
		for _, p := range procs {
			nodes = append(nodes, p.node(t))
		}
		e := New(cfg, nodes...)
		if err := e.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	first := engine()
	old := first.Status()[0].RunID
	deadline := time.Now().Add(5 * time.Second)
	for procs[1].Client(t).HGet(t.Context(), MembersKey, procs[0].Addr).Val() != old {
		if time.Now().After(deadline) {
			t.Fatalf("the first engine did not record node 0's run_id %s", old)
		}
		time.Sleep(20 * time.Millisecond)
	}
	first.Close()

	procs[0].Kill()
	var restarted *redistest.Server
	var err error
	for range 50 { // the port may linger a moment
		if restarted, err = redistest.StartOn(t, procs[0].Port, t.TempDir()); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("restart node 0: %v", err)
	}
	procs[0] = &redisProc{restarted}
	procs[1].Freeze(t)
	procs[2].Freeze(t)
	e := engine()
	wantState(t, e, 0, StateUnverified, reasonRecordsUnread)
	procs[1].Thaw()
	procs[2].Thaw()
	deadline = time.Now().Add(5 * time.Second)
	for {
		st := e.Status()[0]
		if st.State == StateQuarantined && st.Reason == "restarted" {
			break
		}
		if st.State == StateUp || time.Now().After(deadline) {
			t.Fatalf("node 0 restarted empty = %+v once the records could be read; want quarantined, restarted", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A max_ttl field is stamped with the node's own clock and judged by it
// (attack6 A1): a node 5 minutes behind the proxy gets a stamp 5 minutes
// behind, and a stamp a minute old on its clock still counts, whatever
// the proxy's clock says.
func TestMaxTTLStampOnTheNodesClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeNode{addr: "a", offset: -5 * time.Minute}
		cfg := monitorConfig(t)
		e := started(t, cfg, []*fakeNode{f})
		field := maxTTLPrefix + strconv.FormatInt(cfg.MaxTTL.Milliseconds(), 10)
		at, err := strconv.ParseInt(f.record()[field], 10, 64)
		if want := time.Now().Add(f.offset).UnixMilli(); err != nil || at < want-1000 || at > want+1000 {
			t.Fatalf("%s = %d, %v; want the node's clock, about %d", field, at, err, want)
		}
		long := maxTTLPrefix + "600000" // another proxy's 10m, stamped a minute ago on the node's clock
		rec := map[string]string{long: strconv.FormatInt(time.Now().Add(f.offset-time.Minute).UnixMilli(), 10)}
		e.learnMaxTTL(0, rec, time.Now())
		if got := time.Duration(e.peerMaxTTL.Load()); got != 10*time.Minute {
			t.Errorf("learned max_ttl = %v; want 10m (the field is a minute old on the node's clock)", got)
		}
	})
}
