package quorum

import (
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// testLog sends the engine's logs to t.Log.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// monitorConfig is a short max_ttl and probe interval for monitor tests:
// a quarantine lasts 10s + 102ms drift.
func monitorConfig(t *testing.T) Config {
	return Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: 10 * time.Second,
		ProbeInterval: 100 * time.Millisecond, Log: testLog(t)}
}

const quarantineFor = 10*time.Second + 102*time.Millisecond

// threeFakes returns three fake nodes a, b, c with run_ids run-a...
func threeFakes() []*fakeNode {
	return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
}

// started returns an engine over fs, started; it is closed when the
// bubble's test function returns.
func started(t *testing.T, cfg Config, fs []*fakeNode) *Engine {
	t.Helper()
	e := New(cfg, asNodes(fs)...)
	t.Cleanup(func() { e.Close() })
	if err := e.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return e
}

// wantState fails the test unless node i is in state, with a reason
// containing reason.
func wantState(t *testing.T, e *Engine, i int, state NodeState, reason string) NodeStatus {
	t.Helper()
	st := e.Status()[i]
	if st.State != state || !strings.Contains(st.Reason, reason) {
		t.Fatalf("Status()[%d] = %+v; want %v, reason containing %q", i, st, state, reason)
	}
	if want := state == StateUp; e.counts(i) != want {
		t.Fatalf("counts(%d) = %v in state %v; want %v", i, e.counts(i), state, want)
	}
	return st
}

// wantRecord fails the test unless f's membership record is want: its
// max_ttl fields aside, its selfField and lost marks aside unless want
// has them.
func wantRecord(t *testing.T, f *fakeNode, want map[string]string) {
	t.Helper()
	_, self := want[selfField]
	_, sync := want[fsyncField]
	marks := false
	for k := range want {
		marks = marks || strings.HasPrefix(k, lostPrefix)
	}
	got := f.record()
	maps.DeleteFunc(got, func(k, _ string) bool {
		return strings.HasPrefix(k, maxTTLPrefix) || k == selfField && !self || k == fsyncField && !sync || strings.HasPrefix(k, lostPrefix) && !marks
	})
	if !maps.Equal(got, want) {
		t.Errorf("node %s record = %v; want %v", f.addr, got, want)
	}
}

var freshRecord = map[string]string{"a": "run-a", "b": "run-b", "c": "run-c"}

func TestFreshDeploymentServesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		fs[0].started = time.Now() // younger than max_ttl, but no record knows it
		e := started(t, monitorConfig(t), fs)
		for i := range fs {
			wantState(t, e, i, StateUp, "")
			wantRecord(t, fs[i], freshRecord)
		}
		if _, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "t"}, time.Second); err != nil {
			t.Fatalf("Acquire right after Start: %v", err)
		}
	})
}

func TestNotStartedEngineHasEveryNodeUp(t *testing.T) {
	e := New(Config{}, &fakeNode{addr: "a"})
	if st := e.Status()[0]; st.State != StateUp || !e.counts(0) {
		t.Errorf("Status()[0] = %+v, counts %v; want up and counting", st, e.counts(0))
	}
}

func TestRestartDetected(t *testing.T) {
	tests := []struct {
		name    string
		uptime  time.Duration // of a's new process when the proxy starts
		cfg     func(*Config)
		aof     string // appendfsync on a, "" for no AOF
		want    NodeState
		records bool // the other nodes hold a record of a's old run_id
		// a's own record says its old process ran appendfsync always
		// (with aof: it restarted with its data).
		oldSynced bool
	}{
		{"record mismatch, young: quarantined", 3 * time.Second, nil, "", StateQuarantined, true, false},
		// Up 100ms, but Redis says 1s: a second boundary passed.
		{"record mismatch, uptime over-reported: quarantined", 100 * time.Millisecond, nil, "", StateQuarantined, true, false},
		{"record mismatch, older than max_ttl: up", 12 * time.Second, nil, "", StateUp, true, false},
		{"no record: new, up", time.Second, nil, "", StateUp, false, false},
		{"appendfsync always trusted: up", time.Second, func(c *Config) { c.TrustFsyncAlways = true }, "always", StateUp, true, true},
		{"appendfsync always, not trusted: quarantined", time.Second, nil, "always", StateQuarantined, true, true},
		{"appendfsync everysec, trusted: quarantined", time.Second, func(c *Config) { c.TrustFsyncAlways = true }, "everysec", StateQuarantined, true, true},
		// Only the new process syncs every write.
		{"appendfsync always, the process before not, trusted: quarantined", time.Second, func(c *Config) { c.TrustFsyncAlways = true }, "always", StateQuarantined, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := threeFakes()
				fs[0].runID, fs[0].started = "run-a2", time.Now().Add(-tt.uptime)
				fs[0].aof, fs[0].fsync = tt.aof != "", tt.aof
				if tt.records {
					for _, f := range fs[1:] {
						f.withRecord(map[string]string{"a": "run-a", "b": "run-b", "c": "run-c", selfField: "run-" + f.addr})
					}
				}
				if tt.aof != "" { // restarted with its data
					rec := map[string]string{"a": "run-a", "b": "run-b", "c": "run-c", selfField: "run-a"}
					if tt.oldSynced {
						rec[fsyncField] = "run-a"
					}
					fs[0].withRecord(rec)
				}
				cfg := monitorConfig(t)
				if tt.cfg != nil {
					tt.cfg(&cfg)
				}
				e := started(t, cfg, fs)
				st := wantState(t, e, 0, tt.want, "")
				if tt.want == StateUp {
					wantRecord(t, fs[1], map[string]string{"a": "run-a2", "b": "run-b", "c": "run-c"})
					return
				}
				// The end is computed from the node's uptime, not from now,
				// and is never early: whole-second uptimes make it up to 2s
				// late.
				if want := fs[0].started.Add(quarantineFor); st.Until.Before(want) || !st.Until.Before(want.Add(2*time.Second)) || st.Reason != "restarted" {
					t.Fatalf("Status()[0] = %+v; want restarted until %v, or up to 2s later", st, want)
				}
				// The record keeps the old run_id while the quarantine runs.
				wantRecord(t, fs[1], map[string]string{"a": "run-a", "b": "run-b", "c": "run-c"})
				time.Sleep(time.Until(st.Until) - time.Millisecond)
				wantState(t, e, 0, StateQuarantined, "restarted")
				time.Sleep(200 * time.Millisecond)
				wantState(t, e, 0, StateUp, "")
				wantRecord(t, fs[1], map[string]string{"a": "run-a2", "b": "run-b", "c": "run-c"})
				wantRecord(t, fs[0], map[string]string{"a": "run-a2", "b": "run-b", "c": "run-c"})
			})
		})
	}
}

func TestRestartWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e := started(t, monitorConfig(t), fs)
		fs[0].restart("run-a2")
		restarted := time.Now()
		time.Sleep(150 * time.Millisecond) // one probe
		st := wantState(t, e, 0, StateQuarantined, "restarted")
		// Uptime is in whole seconds, so the start the proxy computes may
		// be up to 2s late: never early.
		if want := restarted.Add(quarantineFor); st.Until.Before(want) || st.Until.After(want.Add(2*time.Second)) {
			t.Errorf("Until = %v; want within 2s after %v (start + max_ttl + drift)", st.Until, want)
		}
		// Its grant does not count: b holds k for another token, so
		// a's and c's grants are not enough.
		fs[1].with("k", "other", time.Minute)
		_, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "t"}, time.Second)
		checkSentinel(t, "Acquire", err, ErrUnavailable)
		// A second proxy, started now, reaches the same verdict from the
		// records on b and c (a's own was lost in the restart and has
		// been refilled with the old run_id).
		wantRecord(t, fs[0], freshRecord)
		e2 := started(t, monitorConfig(t), fs)
		if st2 := wantState(t, e2, 0, StateQuarantined, "restarted"); st2.Until.Sub(st.Until).Abs() > time.Second {
			t.Errorf("second proxy: Until = %v; want within 1s of %v", st2.Until, st.Until)
		}
		time.Sleep(quarantineFor + 2*time.Second)
		wantState(t, e, 0, StateUp, "")
		wantState(t, e2, 0, StateUp, "")
	})
}

func TestNewConnectionToRestartedNodeStopsCountingAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e := started(t, monitorConfig(t), fs)
		fs[0].connect() // the same process: nothing changes
		wantState(t, e, 0, StateUp, "")
		fs[0].restart("run-a2")
		fs[0].connect() // before any probe
		// The monitor, poked by the connection, may already have probed
		// and quarantined it; either way its grants stop counting now.
		if e.counts(0) {
			t.Fatalf("counts(0) = true right after a connection saw a new run_id; want false")
		}
		if st := e.Status()[0]; st.State != StateUnverified && st.State != StateQuarantined {
			t.Fatalf("Status()[0] = %+v; want unverified or quarantined", st)
		}
		synctest.Wait()
		wantState(t, e, 0, StateQuarantined, "restarted")
	})
}

func TestDownNodeComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		refused := errors.New("dial tcp: connection refused")
		fs[2].fail(refused)
		e := started(t, monitorConfig(t), fs)
		st := wantState(t, e, 2, StateDown, "unreachable")
		if st.LastError != refused.Error() {
			t.Errorf("LastError = %q; want %q", st.LastError, refused)
		}
		// While down it costs nothing and is not called.
		before := len(fs[2].callsTo("acquire"))
		start := time.Now()
		if _, err := e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "t"}, time.Second); err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("Acquire took %v; want 0", took)
		}
		if got := len(fs[2].callsTo("acquire")); got != before {
			t.Errorf("down node got %d acquires; want none", got-before)
		}
		fs[2].fail(nil)
		time.Sleep(150 * time.Millisecond)
		wantState(t, e, 2, StateUp, "")
		// It was new: its run_id is in every record now.
		wantRecord(t, fs[0], freshRecord)
	})
}

func TestNodeFoundDownByRequestsIsRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e := started(t, monitorConfig(t), fs)
		fs[1].fail(errors.New("read: connection reset by peer"))
		e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "t"}, time.Second)
		wantState(t, e, 1, StateDown, "unreachable")
		fs[1].fail(nil)
		time.Sleep(150 * time.Millisecond)
		wantState(t, e, 1, StateUp, "") // the same run_id: no quarantine
		// Up again, the spell still shows: once per opening of the breaker.
		if got := e.Status()[1].Downs; got != 1 {
			t.Errorf("Status()[1].Downs = %d; want 1", got)
		}
		fs[1].fail(errors.New("read: connection reset by peer"))
		e.Acquire(t.Context(), Lock{Keys: []string{"k2"}, Token: "t"}, time.Second)
		e.Acquire(t.Context(), Lock{Keys: []string{"k3"}, Token: "t"}, time.Second)
		if got := e.Status()[1].Downs; got != 2 {
			t.Errorf("Status()[1].Downs after a second failure = %d; want 2", got)
		}
	})
}

func TestStartRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(fs []*fakeNode)
		want  []string // in the error
	}{
		{"replica", func(fs []*fakeNode) { fs[1].role = "slave" }, []string{"node 1 (b)", "role is slave"}},
		{"allkeys eviction", func(fs []*fakeNode) { fs[2].policy = "allkeys-lru" }, []string{"node 2 (c)", "maxmemory-policy is allkeys-lru"}},
		{"volatile eviction", func(fs []*fakeNode) { fs[0].policy = "volatile-ttl" }, []string{"node 0 (a)", "maxmemory-policy is volatile-ttl"}},
		{"one master twice", func(fs []*fakeNode) { fs[2].runID = "run-a" }, []string{"node 2 (c)", "same run_id run-a as node 0 (a)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := threeFakes()
				tt.setup(fs)
				e := New(monitorConfig(t), asNodes(fs)...)
				defer e.Close()
				err := e.Start(t.Context())
				if err == nil {
					t.Fatal("Start = nil; want an error")
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Start = %q; want it to say %q", err, w)
					}
				}
			})
		})
	}
}

func TestNodeRefusedLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e := started(t, monitorConfig(t), fs)
		fs[1].mu.Lock()
		fs[1].role = "slave" // REPLICAOF at runtime
		fs[1].mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		wantState(t, e, 1, StateRefused, "role is slave")
		fs[1].mu.Lock()
		fs[1].role = "master"
		fs[1].mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		wantState(t, e, 1, StateUp, "")
	})
}

func TestClockJump(t *testing.T) {
	tests := []struct {
		name   string
		change func(f *fakeNode)
		wait   time.Duration
		reason string // "" for no quarantine
		// after undoes change once it was caught: a clock that keeps
		// drifting stays quarantined.
		after func(f *fakeNode)
	}{
		{"jump forward", func(f *fakeNode) { f.jump(500 * time.Millisecond) }, 150 * time.Millisecond, "clock jumped +500ms", nil},
		{"jump back", func(f *fakeNode) { f.jump(-300 * time.Millisecond) }, 150 * time.Millisecond, "clock jumped -300ms", nil},
		{"small jump within the limit", func(f *fakeNode) { f.jump(50 * time.Millisecond) }, time.Second, "", nil},
		{"5% fast: the rate shows within seconds", func(f *fakeNode) { f.drift(0.05) }, 5 * time.Second, "clock rate off", func(f *fakeNode) { f.drift(0) }},
		{"0.5% fast: within drift_factor", func(f *fakeNode) { f.drift(0.005) }, time.Minute, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := threeFakes()
				e := started(t, monitorConfig(t), fs)
				time.Sleep(250 * time.Millisecond) // a few samples first
				tt.change(fs[0])
				time.Sleep(tt.wait)
				if tt.reason == "" {
					wantState(t, e, 0, StateUp, "")
					return
				}
				st := wantState(t, e, 0, StateQuarantined, tt.reason)
				// Until max_ttl plus drift from the detection.
				if left := time.Until(st.Until); left <= quarantineFor-tt.wait || left > quarantineFor {
					t.Errorf("quarantine left %v; want about %v", left, quarantineFor)
				}
				if tt.after != nil {
					tt.after(fs[0])
				}
				time.Sleep(quarantineFor + 200*time.Millisecond)
				wantState(t, e, 0, StateUp, "")
			})
		})
	}
}

func TestRestartSeenLateWhenRecordsReturn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		fs[0].runID, fs[0].started = "run-a2", time.Now().Add(-3*time.Second)
		for _, f := range fs[1:] {
			f.withRecord(map[string]string{"a": "run-a", "b": "run-b", "c": "run-c"})
			f.fail(errors.New("connection refused"))
		}
		e := started(t, monitorConfig(t), fs)
		// Too few records could be read: a is not verified (not
		// counted), since one unread may know its older process.
		wantState(t, e, 0, StateUnverified, reasonRecordsUnread)
		fs[1].fail(nil)
		time.Sleep(150 * time.Millisecond)
		// b's record says a restarted: quarantined for what is left.
		st := wantState(t, e, 0, StateQuarantined, "restarted")
		// Uptime comes in whole seconds, so the end it gives is late by up
		// to 2s, depending on which probe it came from: never early.
		if want := fs[0].started.Add(quarantineFor); st.Until.Before(want) || !st.Until.Before(want.Add(2*time.Second)) {
			t.Errorf("Until = %v; want within 2s after %v", st.Until, want)
		}
		wantRecord(t, fs[1], map[string]string{"a": "run-a", "b": "run-b", "c": "run-c"})
		time.Sleep(time.Until(st.Until) + 200*time.Millisecond)
		wantState(t, e, 0, StateUp, "")
		wantRecord(t, fs[1], map[string]string{"a": "run-a2", "b": "run-b", "c": "run-c"})
	})
}

func TestClockCheck(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	probe := func(local, node time.Duration, rtt time.Duration) Probe {
		return Probe{RunID: "r", Local: base.Add(local), Time: base.Add(node), RTT: rtt}
	}
	tests := []struct {
		name string
		next Probe // after a first probe at 0, 0 with a 1ms round trip
		want string
	}{
		{"in step", probe(time.Second, time.Second, time.Millisecond), ""},
		// 100ms limit + 2 x 1ms round trip + 1% of 1s = 112ms allowed.
		{"just within", probe(time.Second, time.Second+112*time.Millisecond, time.Millisecond), ""},
		{"just over", probe(time.Second, time.Second+113*time.Millisecond, time.Millisecond), "clock jumped +113ms"},
		{"backwards", probe(time.Second, time.Second-200*time.Millisecond, time.Millisecond), "clock jumped -200ms"},
		{"slow round trip widens the allowance", probe(time.Second, time.Second+150*time.Millisecond, 50*time.Millisecond), ""},
		{"another process starts afresh", Probe{RunID: "r2", Local: base.Add(time.Second), Time: base.Add(time.Hour)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c clockSample
			clockCheck(&c, probe(0, 0, time.Millisecond), 100*time.Millisecond, 0.01)
			if got := clockCheck(&c, tt.next, 100*time.Millisecond, 0.01); got != tt.want {
				t.Errorf("clockCheck = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestFlushedNodeIsQuarantined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e := started(t, monitorConfig(t), fs)
		time.Sleep(150 * time.Millisecond) // a probe has seen b's record
		fs[1].mu.Lock()
		fs[1].keys, fs[1].members = nil, nil // FLUSHALL: same process, no data
		fs[1].mu.Unlock()
		flushed := time.Now()
		time.Sleep(150 * time.Millisecond)
		st := wantState(t, e, 1, StateQuarantined, "data lost")
		if left := st.Until.Sub(flushed); left < quarantineFor || left > quarantineFor+200*time.Millisecond {
			t.Errorf("quarantine ends %v after the flush; want about %v", left, quarantineFor)
		}
		// Every record says b lost its data, until when; b's own names
		// no process until the quarantine ends.
		mark := lostMark("run-b", st.Until, QuarantineDataLost)
		for _, f := range fs {
			want := map[string]string{"a": "run-a", "b": "run-b", "c": "run-c", "lost:b": mark}
			if f == fs[1] {
				want = map[string]string{"a": "run-a", "c": "run-c", "lost:b": mark}
			}
			wantRecord(t, f, want)
		}
		time.Sleep(quarantineFor + 200*time.Millisecond)
		wantState(t, e, 1, StateUp, "")
		wantRecord(t, fs[1], map[string]string{"a": "run-a", "b": "run-b", "c": "run-c", "lost:b": mark, selfField: "run-b"})
	})
}

// A quarantined node that is marked down (its connection reset) and comes
// back before the quarantine ends is quarantined again, until the same
// end: a down spell never shortens a quarantine.
func TestQuarantineOutlivesADownSpell(t *testing.T) {
	tests := []struct {
		name   string
		cause  func(f *fakeNode)
		reason string
	}{
		{"restart", func(f *fakeNode) { f.restart("run-a2") }, "restarted"},
		{"clock jump", func(f *fakeNode) { f.jump(500 * time.Millisecond) }, "clock jumped"},
		{"flushed", func(f *fakeNode) {
			f.mu.Lock()
			f.keys, f.members = nil, nil
			f.mu.Unlock()
		}, "data lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := threeFakes()
				e := started(t, monitorConfig(t), fs)
				time.Sleep(250 * time.Millisecond) // clock samples and records seen
				tt.cause(fs[0])
				time.Sleep(150 * time.Millisecond)
				st := wantState(t, e, 0, StateQuarantined, tt.reason)
				for spell := range 2 {
					fs[0].fail(errors.New("read: connection reset by peer"))
					e.Acquire(t.Context(), Lock{Keys: []string{"k"}, Token: "t"}, time.Second)
					wantState(t, e, 0, StateDown, "unreachable")
					fs[0].fail(nil)
					time.Sleep(150 * time.Millisecond)
					if got := wantState(t, e, 0, StateQuarantined, tt.reason); !got.Until.Equal(st.Until) {
						t.Errorf("after down spell %d: Until = %v; want %v", spell+1, got.Until, st.Until)
					}
				}
				time.Sleep(time.Until(st.Until) + 200*time.Millisecond)
				wantState(t, e, 0, StateUp, "")
			})
		})
	}
}

// A flushed node is quarantined by every proxy, also by one whose probes
// never read its emptied record (another proxy refilled it first) and by
// one started afterwards: the quarantine is in the records.
func TestFlushSeenByOneProxyQuarantinesAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e1 := started(t, monitorConfig(t), fs)
		time.Sleep(50 * time.Millisecond)
		e2 := started(t, monitorConfig(t), fs) // probes 50ms after e1's
		time.Sleep(130 * time.Millisecond)     // e1 probed at 100ms, e2 at 150ms
		fs[1].mu.Lock()
		fs[1].keys, fs[1].members = nil, nil // FLUSHALL, before e1's probe
		fs[1].mu.Unlock()
		flushed := time.Now()
		time.Sleep(30 * time.Millisecond) // e1's probe at 200ms saw it and refilled
		st1 := wantState(t, e1, 1, StateQuarantined, "data lost")
		time.Sleep(150 * time.Millisecond) // e2 probed at 250ms and 350ms
		st2 := wantState(t, e2, 1, StateQuarantined, "data lost")
		if d := st2.Until.Sub(st1.Until).Abs(); d > 200*time.Millisecond {
			t.Errorf("the second proxy's quarantine ends %v from the first's; want the same end", d)
		}
		e3 := started(t, monitorConfig(t), fs)
		st3 := wantState(t, e3, 1, StateQuarantined, "data lost")
		if d := st3.Until.Sub(st1.Until).Abs(); d > 200*time.Millisecond {
			t.Errorf("a proxy started later: quarantine ends %v from the first's; want the same end", d)
		}
		if left := st1.Until.Sub(flushed); left < quarantineFor {
			t.Errorf("quarantine ends %v after the flush; want at least %v", left, quarantineFor)
		}
		time.Sleep(time.Until(st1.Until) + 300*time.Millisecond)
		for _, e := range []*Engine{e1, e2, e3} {
			wantState(t, e, 1, StateUp, "")
		}
	})
}

// A proxy started after a node's clock jumped cannot see the jump in its
// own samples; it quarantines the node from the mark of the proxy that
// saw it, until the same end.
func TestClockJumpSeenByOneProxyQuarantinesALaterOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e1 := started(t, monitorConfig(t), fs)
		time.Sleep(250 * time.Millisecond)
		fs[0].jump(500 * time.Millisecond)
		time.Sleep(150 * time.Millisecond)
		st1 := wantState(t, e1, 0, StateQuarantined, "clock jumped")
		e2 := started(t, monitorConfig(t), fs)
		st2 := wantState(t, e2, 0, StateQuarantined, "clock jumped")
		if d := st2.Until.Sub(st1.Until).Abs(); d > 200*time.Millisecond {
			t.Errorf("the later proxy's quarantine ends %v from the first's; want the same end", d)
		}
		if m := fs[2].record()["lost:a"]; !strings.HasSuffix(m, " clock") {
			t.Errorf("c's record has lost:a = %q; want a clock mark", m)
		}
		time.Sleep(time.Until(st1.Until) + 300*time.Millisecond)
		wantState(t, e1, 0, StateUp, "")
		wantState(t, e2, 0, StateUp, "")
	})
}

// The mark of a quarantine is refilled on a record that lacks it (its
// first write lost), so a proxy that reads only that record still
// quarantines the node.
func TestLostMarkIsRefilled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := threeFakes()
		e1 := started(t, monitorConfig(t), fs)
		time.Sleep(150 * time.Millisecond)
		fs[1].mu.Lock()
		fs[1].keys, fs[1].members = nil, nil // FLUSHALL
		fs[1].mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		st := wantState(t, e1, 1, StateQuarantined, "data lost")
		// The mark's write to c was lost.
		fs[2].mu.Lock()
		delete(fs[2].members, "lost:b")
		fs[2].mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		if got, want := fs[2].record()["lost:b"], lostMark("run-b", st.Until, QuarantineDataLost); got != want {
			t.Errorf("c's record has lost:b = %q; want it refilled as %q", got, want)
		}
		wantState(t, e1, 1, StateQuarantined, "data lost")
	})
}
