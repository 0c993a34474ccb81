package quorum

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
)

// TestPublishDecidedDropsALateCopy: a decided message is sent by a node
// only while its node clock is within the limit the engine computed from
// its probes; a copy that reaches its node later (a slow link, a frozen
// master thawed) is dropped there, not delivered by the hubs as a second
// publish (attack12 P1). Without a limit (a node not yet probed) it is
// sent.
func TestPublishDecidedDropsALateCopy(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	var nodes []Node
	for _, p := range procs {
		nodes = append(nodes, p.node(t))
	}
	e := New(Config{MaxTTL: 200 * time.Millisecond, NodeTimeout: 150 * time.Millisecond, ProbeInterval: 20 * time.Millisecond}, nodes...)
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	got := subscribe(t, procs[1].Client(t), "ch").Channel()
	expect := func(what, want string) {
		t.Helper()
		select {
		case m := <-got:
			if m.Payload != want {
				t.Fatalf("%s: got %q; want %q", what, m.Payload, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no message; want %q", what, want)
		}
	}

	n := nodes[1].(publisher)
	if _, ok := e.onNodeClock(1, time.Now()); ok {
		t.Fatal("a node clock known before any probe")
	}
	if err := n.Publish(ctx, "PUBLISH", "ch", "no limit", 0); err != nil {
		t.Fatal(err)
	}
	expect("a copy with no limit", "no limit")

	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.onNodeClock(1, time.Now()); !ok {
		t.Fatal("no node clock after Start's probes")
	}
	e.publishDecided(ctx, "PUBLISH", "ch", "in time")
	select {
	case m := <-got: // the engine's copy carries its tag (internal/pubid)
		if _, rest, ok := pubid.Split(m.Payload); !ok || rest != "in time" {
			t.Fatalf("a copy in time: got %q; want a tag, then \"in time\"", m.Payload)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("a copy in time: no message")
	}

	late, _ := e.onNodeClock(1, time.Now().Add(-time.Second))
	if err := n.Publish(ctx, "PUBLISH", "ch", "late", late.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	soon, _ := e.onNodeClock(1, time.Now().Add(time.Second))
	if err := n.Publish(ctx, "PUBLISH", "ch", "next", soon.UnixMilli()); err != nil {
		t.Fatal(err)
	}
	expect("a late copy, then one in time", "next") // not "late"
}
