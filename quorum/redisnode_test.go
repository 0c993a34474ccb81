package quorum

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// These tests run on real redis-server processes through the go-redis
// node (quorum/redisnode): the engine end to end, and the fake checked
// against the node. The node's own tests are in quorum/redisnode.

// redisProc is a redis-server started for one test, with this package's
// node over it (node); Client gives a plain client for setting up and
// checking keys.
type redisProc struct{ *redistest.Server }

// startRedis runs a redis-server with no persistence on a free loopback
// port and stops it when the test ends.
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	return &redisProc{redistest.Start(t)}
}

// subscribe subscribes c to channel, waits for the node's confirmation,
// and closes the subscription when the test ends.
func subscribe(t *testing.T, c *redis.Client, channel string) *redis.PubSub {
	t.Helper()
	sub := c.Subscribe(t.Context(), channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	return sub
}

// nextPayload is the payload of sub's next message, which must come
// within 2s.
func nextPayload(t *testing.T, sub *redis.PubSub) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("no message within 2s: %v", err)
	}
	return msg.Payload
}

// quietCount counts the messages msgs brings until 300ms pass without
// one.
func quietCount(msgs <-chan *redis.Message) int {
	n := 0
	for {
		select {
		case <-msgs:
			n++
		case <-time.After(300 * time.Millisecond):
			return n
		}
	}
}

// node returns the go-redis node for p, closed when the test ends.
func (p *redisProc) node(t *testing.T) Node { return p.nodeIn(t, asLibrary) }

// nodeIn is node, running wrapped scripts in form.
func (p *redisProc) nodeIn(t testing.TB, form wrapperForm) Node {
	t.Helper()
	n := RedisNode(p.Addr, bool(form))
	t.Cleanup(func() { n.Close() })
	return n
}

// The engine over three real nodes: the Redlock steps end to end, and a
// frozen node costs NodeTimeout and no more.
func TestEngineOverRedisNodes(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	// No node is frozen in the first part, so its NodeTimeout only bounds
	// a node that never answers: a loaded machine must not turn a slow
	// first dial into a failure. Validities are checked against the time
	// each call took, which is all they may lose.
	e := New(Config{NodeTimeout: 10 * time.Second}, nodes...)
	ctx := t.Context()
	lock := Lock{Keys: []string{"job"}, Token: "mine"}
	const ttl = 10 * time.Second
	most := ttl - e.Drift(ttl)

	start := time.Now()
	lease, err := e.Acquire(ctx, lock, ttl)
	least := ttl - time.Since(start) - e.Drift(ttl)
	if err != nil || lease.Granted != 3 || lease.Validity > most || lease.Validity < least {
		t.Fatalf("Acquire = %+v, %v; want 3 granted, validity in [%v, %v]", lease, err, least, most)
	}
	if _, err := e.Acquire(ctx, Lock{Keys: []string{"job"}, Token: "other"}, ttl); !errors.Is(err, ErrDenied) {
		t.Errorf("second Acquire = %v; want %v", err, ErrDenied)
	}
	if st, err := e.Inspect(ctx, "job"); err != nil || !st.Held || st.Token != "mine" || st.Validity <= 0 || st.Validity > most {
		t.Errorf(`Inspect("job") = %+v, %v; want held by "mine" with validity in (0, %v]`, st, err, most)
	}
	// ExtendBy adds to what is left; Extend would leave at most ttl.
	if lease, err := e.ExtendBy(ctx, lock, ttl, 0); err != nil || lease.Granted != 3 || lease.Validity <= ttl {
		t.Errorf("ExtendBy(%v) = %+v, %v; want 3 granted, validity over %v", ttl, lease, err, ttl)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Keys: 1}) {
		t.Errorf("Release = %+v, %v; want {Keys:1}", rel, err)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Missing: 1}) {
		t.Errorf("Release again = %+v, %v; want {Missing:1}", rel, err)
	}

	// The same nodes, now with a short NodeTimeout, and one of them frozen.
	// Without the per-node deadline on the socket, the frozen node would
	// cost go-redis's own read timeout, 3s; a loaded machine may add to
	// NodeTimeout, but not that much.
	const nodeTimeout = 500 * time.Millisecond
	const readTimeout = 3 * time.Second
	e = New(Config{NodeTimeout: nodeTimeout}, nodes...)
	procs[2].Freeze(t)
	start = time.Now()
	lease, err = e.Acquire(ctx, lock, ttl)
	elapsed := time.Since(start)
	if err != nil || lease.Granted != 2 {
		t.Fatalf("Acquire with a frozen node = %+v, %v; want 2 granted", lease, err)
	}
	if ne := (*NodeError)(nil); !errors.As(lease.Failures, &ne) || ne.Node != 2 {
		t.Errorf("Acquire with a frozen node: Failures = %v; want node 2's failure", lease.Failures)
	}
	if elapsed < nodeTimeout || elapsed >= readTimeout {
		t.Errorf("Acquire with a frozen node took %v; want about %v, under go-redis's %v read timeout", elapsed, nodeTimeout, readTimeout)
	}
	if most := ttl - nodeTimeout - e.Drift(ttl); lease.Validity > most {
		t.Errorf("Acquire with a frozen node: validity %v; want at most %v", lease.Validity, most)
	}
	if rel, err := e.Release(ctx, lock); err != nil || rel != (Released{Keys: 1}) {
		t.Errorf("Release with a frozen node = %+v, %v; want {Keys:1}", rel, err)
	}
}

// conformStep is one call in a TestFakeNodeMatchesRedisNode scenario. It
// returns the call's result in a form both nodes must agree on.
type conformStep func(t *testing.T, n Node) answer

// answer is a node's answer with a positive TTL in it (a returned TTL, or
// an Entry's) apart: the two nodes count TTLs down on their own clocks,
// Redis in whole milliseconds, so theirs may differ by the time the
// scenario has run, and by no more. Zero and negative TTLs (denied, no
// expiry) stay in text, compared exactly.
type answer struct {
	text string
	ttl  time.Duration
}

func (a answer) String() string {
	if a.ttl == 0 {
		return a.text
	}
	return fmt.Sprintf("%s, TTL %v", a.text, a.ttl)
}

// matches reports whether a and b agree, TTLs within slack.
func (a answer) matches(b answer, slack time.Duration) bool {
	d := a.ttl - b.ttl
	return a.text == b.text && (a.ttl > 0) == (b.ttl > 0) && d <= slack && d >= -slack
}

func norm(v any, err error) answer {
	if err != nil {
		return answer{text: "error"}
	}
	switch v := v.(type) {
	case time.Duration:
		if v > 0 {
			return answer{text: "extended", ttl: v}
		}
	case Acquired:
		// The first positive TTL of a key taken again is compared; the
		// others are left out.
		var ttl time.Duration
		before := make([]string, len(v.Before))
		for i, e := range v.Before {
			if e.TTL > 0 && ttl == 0 {
				ttl, e.TTL = e.TTL, 0
			} else if e.TTL > 0 {
				e.TTL = 0
			}
			before[i] = fmt.Sprintf("%+v", e)
		}
		return answer{text: fmt.Sprintf("granted %v, before %v, revealed %v %q", v.Granted, before, v.Revealed, v.Held), ttl: ttl}
	case Entry:
		if ttl := v.TTL; ttl > 0 {
			v.TTL = 0
			return answer{text: fmt.Sprintf("{Present:%v Token:%s Type:%s}", v.Present, v.Token, v.Type), ttl: ttl}
		}
		return answer{text: fmt.Sprintf("%+v", v)}
	case CounterEntry:
		// The nodes' clocks differ: their readings (Now, a pending
		// mark) are left out.
		v.Now = 0
		if v.State == CounterPending {
			v.Value = 0
		}
		if ttl := v.TTL; ttl > 0 {
			v.TTL = 0
			return answer{text: fmt.Sprintf("%+v", v), ttl: ttl}
		}
		return answer{text: fmt.Sprintf("%+v", v)}
	}
	return answer{text: fmt.Sprint(v)}
}

func acquireStep(l Lock, ttl time.Duration) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Acquire(t.Context(), l, ttl)) }
}

func undoStep(l Lock, before []Entry) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Undo(t.Context(), l, before, 0)) }
}

func releaseStep(l Lock) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Release(t.Context(), l, 0)) }
}

func extendStep(l Lock, ttl time.Duration, mode ExtendMode) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Extend(t.Context(), l, ttl, mode, 0, 0)) }
}

func inspectStep(key string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Inspect(t.Context(), key)) }
}

func deleteStep(keys ...string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Delete(t.Context(), keys)) }
}

// seedStep stores key = token with ttl (negative: no expiry), as another
// client would.
func seedStep(key, token string, ttl time.Duration) conformStep {
	return func(t *testing.T, n Node) answer {
		switch n := n.(type) {
		case *fakeNode:
			n.with(key, token, ttl)
		case adminNode:
			if err := n.admin.Set(t.Context(), key, token, max(ttl, 0)).Err(); err != nil {
				t.Fatalf("SET %s: %v", key, err)
			}
		}
		return answer{text: "seeded"}
	}
}

// adminNode is a real node with a plain client to the same server, which
// seedStep and countersStep write with.
type adminNode struct {
	Node
	admin *redis.Client
}

// countersStep seeds the node's counters with fields, as
// counter_seed.lua does.
func countersStep(fields map[string]int64) conformStep {
	return func(t *testing.T, n Node) answer {
		switch n := n.(type) {
		case *fakeNode:
			n.withCounters(fields)
		case adminNode:
			args := []any{"seeded", "1"}
			for f, v := range fields {
				args = append(args, f, v)
			}
			n.admin.Del(t.Context(), CountersKey) // seeding writes the hash anew
			if err := n.admin.HSet(t.Context(), CountersKey, args...).Err(); err != nil {
				t.Fatalf("HSET %s: %v", CountersKey, err)
			}
		}
		return answer{text: "seeded counters"}
	}
}

func fenceStep(key, token string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.FenceRound(t.Context(), key, token, FenceField)) }
}

func readCounterStep(key, token, field string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.ReadCounter(t.Context(), key, token, field)) }
}

func writeCounterStep(key, token, field string, v int64, exclusive bool) conformStep {
	return func(t *testing.T, n Node) answer {
		return norm(n.WriteCounter(t.Context(), key, token, field, v, exclusive, 0))
	}
}

func markStep(id string) conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.MarkCounters(t.Context(), id)) }
}

func countersReadStep() conformStep {
	return func(t *testing.T, n Node) answer { return norm(n.Counters(t.Context())) }
}

func sleepStep(d time.Duration) conformStep {
	return func(*testing.T, Node) answer {
		time.Sleep(d)
		return answer{text: "slept"}
	}
}

// The fake must do what the Lua scripts do, or the engine tests prove
// nothing. Each scenario runs on both and their answers must agree.
func TestFakeNodeMatchesRedisNode(t *testing.T) {
	p := startRedis(t)
	admin := p.Client(t)
	rn := adminNode{p.node(t), admin}
	if _, err := rn.Probe(t.Context()); err != nil { // Redis 7.0: SET NX GET reveals
		t.Fatalf("Probe: %v", err)
	}
	mine := func(keys ...string) Lock { return Lock{Keys: keys, Token: "mine"} }
	tests := []struct {
		name  string
		steps []conformStep
	}{
		{"acquire and release one key", []conformStep{
			acquireStep(mine("k"), time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second),
			acquireStep(mine("k"), time.Second),
			acquireStep(mine("k", "k2"), time.Second),
			acquireStep(Lock{Keys: []string{"k2", "k"}, Token: "other"}, time.Second),
			inspectStep("k"),
			releaseStep(Lock{Keys: []string{"k"}, Token: "other"}),
			releaseStep(mine("k")),
			releaseStep(mine("k")),
			inspectStep("k"),
		}},
		{"many keys, all or nothing", []conformStep{
			seedStep("k2", "other", time.Second),
			acquireStep(mine("k1", "k2"), time.Second),
			inspectStep("k1"),
			acquireStep(mine("k1", "k3"), 2*time.Second),
			releaseStep(mine("k1", "k2", "k3")),
			deleteStep("k1", "k2", "k3"),
		}},
		{"undo of a re-entry", []conformStep{
			seedStep("k", "app:1", 2*time.Second),
			seedStep("k3", "app:0", -1),
			acquireStep(Lock{Keys: []string{"k", "k2", "k3"}, Token: "app:2", PrefixLen: 4}, time.Second),
			undoStep(Lock{Keys: []string{"k", "k2", "k3"}, Token: "app:2"}, []Entry{
				{Present: true, Token: "app:1", TTL: 1500 * time.Millisecond}, {}, {Present: true, Token: "app:0", TTL: -time.Millisecond},
			}),
			inspectStep("k"),
			inspectStep("k2"),
			inspectStep("k3"),
			undoStep(Lock{Keys: []string{"k"}, Token: "app:2"}, []Entry{{Present: true, Token: "app:9", TTL: time.Second}}),
			inspectStep("k"),
			seedStep("k", "app:2", time.Second),
			undoStep(Lock{Keys: []string{"k"}, Token: "app:2"}, []Entry{{Present: true, Token: "app:1", TTL: 0}}),
			sleepStep(20 * time.Millisecond),
			inspectStep("k"),
		}},
		{"prefix re-entry", []conformStep{
			acquireStep(Lock{Keys: []string{"k"}, Token: "app:1"}, 2*time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}, time.Second),
			inspectStep("k"),
			acquireStep(Lock{Keys: []string{"k"}, Token: "web:3", PrefixLen: 4}, time.Second),
			acquireStep(Lock{Keys: []string{"k"}, Token: "ap", PrefixLen: 10}, time.Second),
			acquireStep(Lock{Keys: []string{"k", "k2"}, Token: "app:9", PrefixLen: 4}, 3*time.Second),
			inspectStep("k"),
			inspectStep("k2"),
		}},
		{"extend modes", []conformStep{
			seedStep("k", "mine", 500*time.Millisecond),
			extendStep(mine("k"), time.Second, ExtendSet),
			extendStep(mine("k"), time.Second, ExtendAdd),
			inspectStep("k"),
			extendStep(mine("k", "k2"), time.Second, ExtendOrAcquire),
			inspectStep("k2"),
			extendStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second, ExtendSet),
			seedStep("k3", "mine", -1),
			extendStep(mine("k3"), time.Second, ExtendAdd),
			inspectStep("k3"),
			extendStep(mine("k3"), time.Second, ExtendSet),
			inspectStep("k3"),
			extendStep(mine("missing"), time.Second, ExtendSet),
			extendStep(mine("missing"), time.Second, ExtendAdd),
		}},
		{"extend or acquire over another token", []conformStep{
			seedStep("k2", "other", time.Second),
			extendStep(mine("k1", "k2"), time.Second, ExtendOrAcquire),
			inspectStep("k1"),
			inspectStep("k2"),
		}},
		{"keys expire", []conformStep{
			acquireStep(mine("k"), 50*time.Millisecond),
			sleepStep(100 * time.Millisecond),
			inspectStep("k"),
			releaseStep(mine("k")),
			acquireStep(Lock{Keys: []string{"k"}, Token: "other"}, time.Second),
		}},
		{"no expiry", []conformStep{
			seedStep("k", "mine", -1),
			inspectStep("k"),
			acquireStep(mine("k"), time.Second),
			releaseStep(mine("k")),
		}},
		{"counters and FENCE rounds", []conformStep{
			readCounterStep("", "", FenceField),
			markStep("id1"),
			readCounterStep("", "", FenceField),
			writeCounterStep("", "", FenceField, 3, false),
			countersStep(map[string]int64{FenceField: 7}),
			markStep("id2"),
			seedStep("k", "mine", time.Second),
			fenceStep("k", "mine"),
			fenceStep("k", "mine"),
			fenceStep("k", "other"),
			readCounterStep("k", "mine", FenceField),
			writeCounterStep("k", "mine", FenceField, 5, true),
			writeCounterStep("k", "mine", FenceField, 9, false),
			fenceStep("k", "mine"),
			extendStep(mine("k"), 2*time.Second, ExtendSet),
			readCounterStep("k", "mine", FenceField),
			writeCounterStep("k", "other", FenceField, 10, false),
			writeCounterStep("", "", counterPrefix+"x", 3, true),
			countersReadStep(),
			releaseStep(mine("k")),
			readCounterStep("k", "mine", FenceField),
			seedStep("k", "mine", time.Second),
			fenceStep("k", "mine"),
			seedStep("n", "mine", -1),
			fenceStep("n", "mine"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			redistest.Flush(t, admin)
			fake := &fakeNode{addr: "fake", fence: true}
			begin := time.Now()
			for i, step := range tt.steps {
				want, got := step(t, rn), step(t, fake)
				slack := time.Since(begin) + 2*time.Millisecond // Redis's rounding, at each end
				if !got.matches(want, slack) {
					t.Errorf("step %d: fake = %s; want %s, as Redis answered (TTLs within %v)", i, got, want, slack)
				}
			}
		})
	}
}
