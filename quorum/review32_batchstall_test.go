package quorum

import (
	"context"
	"testing"
	"time"
)

// review32: attack19 F1 on the batch path, which go-redis nodes take and
// the fakes do not (TestAttack19DatedWriteNotSentIsNoStallOfItsNode runs
// dated). There fanOutCallOn fits the hold itself; with no time left the
// pipeline does not send the op and finishes it with
// context.DeadlineExceeded. The fan-out then holds to the command's end
// before the breaker sees the error, so it reads as the caller's timeout,
// not the node's: three such releases in a row mark no node down.
func TestReview32BatchReleaseNotSentIsNoStallOfItsNode(t *testing.T) {
	review32BatchStall(t, func(d time.Duration) (context.Context, context.CancelFunc) {
		return context.WithTimeout(t.Context(), d)
	})
}

// The same where the command's timer has not fired yet when the hold
// ends (a loaded machine: CI saw each node marked down once): a command
// context whose deadline never reads as passed. A wait cut short by
// fitHold is the caller's (waitCut), whatever the context says.
func TestBatchWaitCutShortIsNoStallBeforeTheCommandsTimer(t *testing.T) {
	review32BatchStall(t, func(d time.Duration) (context.Context, context.CancelFunc) {
		return unfired{t.Context(), time.Now().Add(d)}, func() {}
	})
}

// unfired is a context with a deadline that its Err never reports.
type unfired struct {
	context.Context
	d time.Time
}

func (u unfired) Deadline() (time.Time, bool) { return u.d, true }

func review32BatchStall(t *testing.T, withTimeout func(time.Duration) (context.Context, context.CancelFunc)) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	// NodeTimeout long enough that no probe on a loaded machine marks a
	// node down.
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: time.Second, ProbeInterval: time.Second, DriftFactor: 0.01}, nodes...)
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.batches(nil) == nil {
		t.Fatal("the go-redis nodes have no batch path")
	}
	l := Lock{Keys: []string{"k"}, Token: "t"}
	// Connections made with time to spare.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	if _, err := e.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(300 * time.Millisecond) // the reading ages
	var hold time.Duration
	for i := range nodes {
		_, h := e.writeUntil(i, time.Now().Add(50*time.Millisecond))
		hold = max(hold, h)
	}
	if hold <= 0 {
		t.Fatal("no hold: the engine has read no node's clock")
	}
	downs := make([]uint64, len(nodes))
	for i, st := range e.Status() {
		downs[i] = st.Downs
	}
	for range stallLimit {
		// A release with hold/2 of the command's time left: the write
		// cannot be waited for and held within it, and is not sent.
		ctx, cancel := withTimeout(hold / 2)
		_, err := e.Release(ctx, l)
		cancel()
		t.Logf("release with %v left: %v", hold/2, err)
		time.Sleep(10 * time.Millisecond)
	}
	for i, st := range e.Status() {
		if st.Downs > downs[i] {
			t.Errorf("node %d (%s): marked down %d times by releases it was never sent", i, st.Addr, st.Downs-downs[i])
		}
	}
}
