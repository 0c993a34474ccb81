package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// unread is a master whose counter reads are lost (a slow link): the
// reader gets a timeout.
type unread struct {
	Node
}

func (unread) ReadCounter(context.Context, string, string, string) (CounterEntry, error) {
	return CounterEntry{}, errors.New("timeout (read lost)")
}

// TestLatchZeroMessageOnceAcrossANewSetWithNoBallot is review28 F0 with
// the later countDown reading no tag on a quorum: latch L set to 1 on
// three masters, A's countDown opens it (its claim lost to master 2) and
// sends the zero message; a new trySetCount(1) lands on master 0 only.
// B cannot read master 1: it reads the new count on master 0 and L open
// on master 2, counts master 0 down to 0, reads L open with no ballot,
// and claims. Master 0's vote, given to A in the slot the new set
// replaced, answers B's claim: B holds master 2 alone and sends nothing
// (before, master 0's new slot and master 2 gave B a quorum).
func TestLatchZeroMessageOnceAcrossANewSetWithNoBallot(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	ctx := t.Context()
	m := LatchMessages{Publish: "publish", Channel: "latch20g:latch", Message: "0"}
	msgs := subscribe(t, procs[2].Client(t), m.Channel).Channel()

	cfg := Config{MaxTTL: time.Second, NodeTimeout: 500 * time.Millisecond}
	plain := New(cfg, procs[0].node(t), procs[1].node(t), procs[2].node(t))
	a := New(cfg, procs[0].node(t), procs[1].node(t), lostClaim{Node: procs[2].node(t)})
	b := New(cfg, procs[0].node(t), unread{Node: procs[1].node(t)}, procs[2].node(t))
	if _, err := plain.Incr(ctx, "seed", 1); err != nil { // seeds the deployment
		t.Fatal(err)
	}
	if ok, err := plain.LatchSet(ctx, "L", 1, m); err != nil || !ok {
		t.Fatalf("LatchSet: %v, %v; want true", ok, err)
	}
	quietCount(msgs) // the set's own message
	if err := a.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatalf("A's countDown: %v", err)
	}
	if n := quietCount(msgs); n != 1 {
		t.Fatalf("A's opening countDown sent %d zero messages; want 1", n)
	}
	if ans, err := procs[0].node(t).LatchSet(ctx, "L", 1, positiveNonce()); err != nil || ans.Value != 1 {
		t.Fatalf("the new set on master 0: %+v, %v; want set", ans, err)
	}
	if err := b.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatalf("B's countDown: %v", err)
	}
	if n := quietCount(msgs); n != 0 {
		for i, p := range procs {
			t.Logf("master %d: %v", i, p.Client(t).HGetAll(ctx, CountersKey).Val())
		}
		t.Errorf("%d zero messages for one opening of L; want 1 (B's claim won with master 0's second vote)", 1+n)
	}
}
