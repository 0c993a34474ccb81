package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// heldSet holds back a latch set's message, as a node whose set came
// over a stalled connection: it lands later (heldSet.land).
type heldSet struct {
	Node
	held *[3]any
}

func (h heldSet) LatchSet(ctx context.Context, name string, count, nonce int64) (LatchAnswer, error) {
	*h.held = [3]any{name, count, nonce}
	return LatchAnswer{}, errors.New("timeout (held back)")
}

// TestLatchOpenedStaysOpenAfterLateSetAndRestart (review27 finding 1):
// a trySetCount(1) granted on masters 0 and 1, its message to master 2
// held back; a countDown opens the latch; the held set lands on master 2
// (a late landing); master 0 restarts empty and is seeded from 1 and 2.
// Master 1's claim slot tag with no count is the evidence that the set
// was counted down to 0, so the seed drops master 2's leftover and the
// latch stays open. (latch20c's reclaim deleted that tag: the seed
// copied the leftover and the latch read 1 again.)
func TestLatchOpenedStaysOpenAfterLateSetAndRestart(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var held [3]any
	late := procs[2].node(t)
	nodes := []Node{procs[0].node(t), procs[1].node(t), heldSet{Node: late, held: &held}}
	e := New(Config{MaxTTL: 300 * time.Millisecond}, nodes...)
	ctx := t.Context()
	m := LatchMessages{Publish: "publish", Channel: "ch", Message: "0"}
	if _, err := e.Incr(ctx, "seed", 1); err != nil { // seeds the deployment
		t.Fatal(err)
	}
	if ok, err := e.LatchSet(ctx, "L", 1, m); err != nil || !ok {
		t.Fatalf("LatchSet: %v, %v; want true", ok, err)
	}
	if held[0] == nil {
		t.Fatal("the set to master 2 was not held back")
	}
	if err := e.LatchCountDown(ctx, "L", m); err != nil {
		t.Fatal(err)
	}
	for i, p := range procs[:2] {
		if tag := p.Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(); tag == "" {
			t.Errorf("master %d has no claim slot tag after the opening countDown; want the set's (the seed's evidence)", i)
		}
	}
	if _, err := late.LatchSet(ctx, held[0].(string), held[1].(int64), held[2].(int64)); err != nil {
		t.Fatal(err)
	}
	if v, err := e.LatchCount(ctx, "L"); err != nil || v != 0 {
		t.Fatalf("LatchCount after the late set: %d, %v; want 0", v, err)
	}
	// Master 0 restarts empty: a read marks it, one after the wait seeds it.
	procs[0].Client(t).FlushAll(ctx)
	e.LatchCount(ctx, "L")
	time.Sleep(e.quarantine() + 200*time.Millisecond)
	// A read seeds it; under load a seed round can time out (the read
	// then answers "1 unseeded"), and a later read seeds it again.
	v, err := e.LatchCount(ctx, "L")
	for tries := 0; err != nil && tries < 30; tries++ {
		time.Sleep(100 * time.Millisecond)
		v, err = e.LatchCount(ctx, "L")
	}
	if err != nil || v != 0 {
		for i, p := range procs {
			t.Logf("master %d: %v", i, p.Client(t).HGetAll(ctx, CountersKey).Val())
		}
		t.Fatalf("the opened latch after a late set and a restart: count %d, %v; want 0 (open for good)", v, err)
	}
	seeded := procs[0].Client(t).HGetAll(ctx, CountersKey).Val()
	if c, ok := seeded[latchCountPrefix+"L"]; ok {
		t.Errorf("master 0 seeded with count %s; want none (a leftover)", c)
	}
	if tag := procs[1].Client(t).HGet(ctx, CountersKey, latchSlotPrefix+"L").Val(); seeded[latchSlotPrefix+"L"] != "-"+tag {
		t.Errorf("master 0 seeded with claim slot tag %q; want master 1's %q, negated (the evidence, for a later seed, in no ballot)", seeded[latchSlotPrefix+"L"], tag)
	}
}
