package proxy

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// fakeEngine answers every operation with err (and zero values), so a
// test can give the server any engine outcome without nodes. calls
// counts the operations that would have reached the nodes.
type fakeEngine struct {
	err   error
	calls atomic.Int64
}

func (f *fakeEngine) op() error                                     { f.calls.Add(1); return f.err }
func (f *fakeEngine) MinTTL() time.Duration                         { return 100 * time.Millisecond }
func (f *fakeEngine) MaxTTL() time.Duration                         { return 5 * time.Minute }
func (f *fakeEngine) NodeTimeout() time.Duration                    { return 50 * time.Millisecond }
func (f *fakeEngine) Nodes() int                                    { return 3 }
func (f *fakeEngine) Addrs() []string                               { return []string{"a", "b", "c"} }
func (f *fakeEngine) Status() []quorum.NodeStatus                   { return nil }
func (f *fakeEngine) Delete(context.Context, []string) (int, error) { return 0, f.op() }
func (f *fakeEngine) Acquire(context.Context, quorum.Lock, time.Duration) (quorum.Lease, error) {
	return quorum.Lease{}, f.op()
}
func (f *fakeEngine) UndoAcquire(context.Context, quorum.Lock, quorum.Lease) { f.op() }
func (f *fakeEngine) Release(context.Context, quorum.Lock) (quorum.Released, error) {
	return quorum.Released{}, f.op()
}
func (f *fakeEngine) Extend(context.Context, quorum.Lock, time.Duration) (quorum.Lease, error) {
	return quorum.Lease{}, f.op()
}
func (f *fakeEngine) ExtendBy(context.Context, quorum.Lock, time.Duration, time.Duration) (quorum.Lease, error) {
	return quorum.Lease{}, f.op()
}
func (f *fakeEngine) ExtendOrAcquire(context.Context, quorum.Lock, time.Duration) (quorum.Lease, error) {
	return quorum.Lease{}, f.op()
}
func (f *fakeEngine) Inspect(context.Context, string) (quorum.State, error) {
	return quorum.State{}, f.op()
}
func (f *fakeEngine) ReadKey(context.Context, string) (quorum.KeyValue, error) {
	return quorum.KeyValue{}, f.op()
}
func (f *fakeEngine) Scan(_ context.Context, cur quorum.ScanCursor, _ string, _ int64, _ string) (quorum.ScanCursor, []quorum.ScanKey, error) {
	return cur, nil, f.op()
}
func (f *fakeEngine) Keyspace(context.Context) (quorum.KeyView, error) {
	return quorum.KeyView{}, f.op()
}
func (f *fakeEngine) Fence(context.Context, string, string) (quorum.Fencing, error) {
	return quorum.Fencing{}, f.op()
}
func (f *fakeEngine) Incr(context.Context, string, int64) (int64, error) { return 0, f.op() }
func (f *fakeEngine) Counter(context.Context, string) (int64, error)     { return 0, f.op() }
func (f *fakeEngine) Wrap(string, []string) *quorum.Effect {
	return &quorum.Effect{}
}
func (f *fakeEngine) RunEffect(context.Context, *quorum.Effect, []string, []string) (quorum.EffectResult, error) {
	return quorum.EffectResult{}, f.op()
}
func (f *fakeEngine) UndoEffect(context.Context, quorum.EffectResult) { f.op() }
func (f *fakeEngine) FlushEffects(context.Context) (int, error)       { return 0, f.op() }
func (f *fakeEngine) KillScript(context.Context) (quorum.KillResult, error) {
	return quorum.KillResult{}, f.op()
}
func (f *fakeEngine) TakeRead(context.Context, quorum.ReadLock, time.Duration) (quorum.ReadTaken, error) {
	return quorum.ReadTaken{}, f.op()
}
func (f *fakeEngine) UndoRead(context.Context, quorum.ReadTaken) { f.op() }
func (f *fakeEngine) UnlockRead(context.Context, quorum.ReadUnlock) (quorum.Value, error) {
	return quorum.Value{}, f.op()
}
func (f *fakeEngine) ForceUnlockRW(context.Context, quorum.ForceUnlock) (int64, error) {
	return 0, f.op()
}
func (f *fakeEngine) LatchSet(context.Context, string, int64, quorum.LatchMessages) (bool, error) {
	return false, f.op()
}
func (f *fakeEngine) LatchCountDown(context.Context, string, quorum.LatchMessages) error {
	return f.op()
}
func (f *fakeEngine) LatchDelete(context.Context, string, quorum.LatchMessages) (bool, error) {
	return false, f.op()
}
func (f *fakeEngine) LatchCount(context.Context, string) (int64, error) { return 0, f.op() }
func (f *fakeEngine) RenewRead(context.Context, []string, []string, time.Duration) ([]int64, error) {
	return nil, f.op()
}
func (f *fakeEngine) UnlockWrite(context.Context, quorum.WriteUnlock) (quorum.Value, error) {
	return quorum.Value{}, f.op()
}
func (f *fakeEngine) RenewLocks(context.Context, []string, []string, time.Duration) ([]int64, error) {
	return nil, f.op()
}
func (f *fakeEngine) ScriptBusy(context.Context) (bool, error) { return false, f.op() }

// newFakeServer returns a server over e.
func newFakeServer(t *testing.T, e Engine, cfg Config) *Server {
	t.Helper()
	cfg.Log = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(cfg, e)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// serveFake serves a proxy over e and returns its address.
func serveFake(t *testing.T, e Engine, cfg Config) string {
	t.Helper()
	s := newFakeServer(t, e, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, ln)
	return ln.Addr().String()
}

// TestOutageIsNeverTaken: with an engine whose every operation is
// undecided, each lock command answers NOQUORUM with the nodes'
// counts, never nil or 0, which a client would read as "taken".
func TestOutageIsNeverTaken(t *testing.T) {
	e := &fakeEngine{err: &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Granted: 1, Failed: 2}, Unavailable: true}}
	rc := dial(t, serveFake(t, e, Config{}))
	const want = "-NOQUORUM 1 granted, 0 denied, 2 failed of 3 nodes; 2 needed\r\n"
	for _, cmd := range [][]string{
		{"SET", "k", "t", "NX", "PX", "5000"},
		{"SET", "k", "t", "IFEQ", "t", "PX", "5000"},
		{"GET", "k"},
		{"PTTL", "k"},
		{"TYPE", "k"},
		{"HLEN", "k"},
		{"DIGEST", "k"},
		{"DELIFEQ", "k", "t"},
		{"DELEX", "k", "IFEQ", "t"},
		{"EVALSHA", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "1", "k", "t"},
	} {
		if got := rc.do(t, cmd...); got != want {
			t.Errorf("%q in an outage = %q; want %q", cmd, got, want)
		}
	}
}

// TestRefusalReachesNoNode: a refused lock command is answered without
// an engine call, and counted as its operation's refusal.
func TestRefusalReachesNoNode(t *testing.T) {
	e := &fakeEngine{}
	obs := &counter{}
	rc := dial(t, serveFake(t, e, Config{Observer: obs}))
	for _, cmd := range [][]string{
		{"SET", "k", "t", "NX", "PX", "99"},
		{"SET", "redlock-proxy:members", "t", "NX", "PX", "5000"},
		{"SET", "k", "t", "IFNE", "u", "PX", "5000"},
		{"TYPE", "redlock-proxy:members"},
		{"DELEX", "k", "IFDNE", "0123456789abcdef"},
	} {
		if got := rc.do(t, cmd...); !strings.HasPrefix(got, "-ERR ") {
			t.Errorf("%q = %q; want a refusal", cmd, got)
		}
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("engine calls after refusals only = %d; want 0", n)
	}
	for op, want := range map[quorum.Op]int64{quorum.OpAcquire: 2, quorum.OpExtend: 1, quorum.OpRead: 1, quorum.OpRelease: 1} {
		if got := obs.refusals(op); got != want {
			t.Errorf("refusals counted as %v = %d; want %d", op, got, want)
		}
	}
}
