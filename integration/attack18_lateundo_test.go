package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack18 A1: F4b's fix (a new connection has the master kill a
// dropped one first) once covered only connections dropped with a
// fan-out's lock operation unanswered. A failed acquire's give-back is
// sent to each node alone (undo, fanOutOn), so its connection was not
// killed, and the undo landed after the same token's next acquire
// through the same proxy. Lock clients retry with the same token
// (redsync's Lock, redislock's retries): the retry's grant was deleted on
// the masters the undo landed on.

// attack18LateUndo: five masters; 0, 1 and 2 hold C's earlier lock, and
// P's links to masters 3 and 4 hold the first two writes naming the key
// (A's SET NX and its undo's release) for hold, past node_timeout. A's
// SET NX is denied on 0, 1 and 2, each revealing C's token, and fails on
// 3 and 4: denied, not split (no proxy retry), and a quorum said it
// does not hold A's token, so the undo releases the silent 3 and 4
// (quorum's leavesSilent), and times out on them. C's earlier lock goes
// from master 2, and A sends the same SET NX again (retry), granted on
// 2, 3 and 4, told OK. The held releases then land on masters 3 and 4,
// and C's earlier lock goes from 0 and 1: C must not get the key while
// A's retry is valid (without F4b's kill and the undo's deadline it
// gets 0, 1, 3 and 4). The SET NX's hold ends after the retry and before
// the undo's: without F4b's kill it lands, refused, on the retry's
// grant. The undo goes out on a new connection only if the SET NX's was dropped
// before the undo was sent (the two race at the deadline: on it, the
// undo is not sent or is killed with it), and stays alone on it only if
// that connection is dropped before the next write is sent (then the
// retry's new connection kills it, as F4b's fix does). A run where any
// of that did not happen on either master says nothing, and the
// scenario runs again on another key, up to 10 times; then the test
// fails.
func attack18LateUndo(t *testing.T, nodeTimeout, hold time.Duration, retry attack18Retry) {
	attack18LateUndoVia(t, nodeTimeout, hold, commandTimeout, false, retry)
}

// attack18Retry is A's SET NX of key with token through p, failed, then
// between, and its retry through again: when the retry was sent, and
// whether it was granted.
type attack18Retry func(t *testing.T, p, again *redis.Client, key, token string, between func()) (time.Time, bool)

// attack18LateUndoVia is attack18LateUndo with P serving with command_timeout
// pTimeout, and A's retry and C's SET NX through Q, a proxy with direct
// links, if throughQ.
func attack18LateUndoVia(t *testing.T, nodeTimeout, hold, pTimeout time.Duration, throughQ bool, retry attack18Retry) {
	c := startNodes(t, 5)
	var h3, h4 attack18HoldFirst
	pAddrs := []string{c.addrs[0], c.addrs[1], c.addrs[2], startHoldRelay(t, c.addrs[3], &h3), startHoldRelay(t, c.addrs[4], &h4)}
	cfg := attack16Config()
	cfg.NodeTimeout = nodeTimeout
	if throughQ {
		// No probe of P's opens a new connection (which kills the
		// undo's, F4b) before the undo lands: its deadline alone
		// keeps it from deleting the retry's grant.
		cfg.ProbeInterval = 10 * time.Second
	}
	pp, err := startMonitoredWith(t, proxy.Config{CommandTimeout: pTimeout}, cfg, pAddrs...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	p, again := pp.Client, pp.Client
	attack16Warm(t, p)
	if throughQ {
		again = startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, cfg, c.addrs...).Client
		attack16Warm(t, again)
	}
	ctx := t.Context()
	const tokA, tokC, tokEarlier = "attack18-token-A", "attack18-token-C", "attack18-token-C-earlier"
	var seen []string
	for try := range 10 {
		key := fmt.Sprintf("attack18:undo:%d", try)
		for i := range 3 {
			if err := c.direct[i].Set(ctx, key, tokEarlier, 30*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		h3.reset(key, 2, hold)
		h4.reset(key, 2, hold)
		start, ok := retry(t, p, again, key, tokA, func() {
			if err := c.direct[2].Del(ctx, key).Err(); err != nil {
				t.Error(err)
			}
		})
		c3, v3 := h3.held()
		c4, v4 := h4.held()
		expires := start.Add(20 * time.Second)
		time.Sleep(hold + 300*time.Millisecond) // the held undo lands on masters 3 and 4
		alone := func(h *attack18HoldFirst, c []int, v []string) bool {
			return len(c) == 2 && v[0] == "set" && v[1] == "eval" && c[0] != c[1] && h.marked(c[1]) == 1
		}
		if !alone(&h3, c3, v3) || !alone(&h4, c4, v4) {
			seen = append(seen, fmt.Sprintf("held %v on connections %v and %v on %v", v3, c3, v4, c4))
			t.Logf("try %d: %s: an undo not sent, sent on the SET NX's connection, or followed on its own; again", try, seen[len(seen)-1])
			continue
		}
		t.Logf("try %d: the undo went out alone on a new connection to masters 3 and 4, held %v", try, hold)
		if !ok {
			t.Errorf("A's retry was not granted")
			return
		}
		for i := range 2 { // C's earlier lock goes from masters 0 and 1
			if err := c.direct[i].Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
		}
		attack16Dump(t, c, "after the held undo landed", key)
		granted, err := again.SetNX(ctx, key, tokC, 10*time.Second).Result()
		if err == nil && granted && time.Now().Before(expires) {
			attack16Dump(t, c, "after C's SET NX", key)
			t.Errorf("C got %s while A's retry is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
		}
		return
	}
	t.Fatalf("in 10 tries the undo never went out alone on a new connection to masters 3 and 4: %q", seen)
}

// attack18SetNXTwice is A's SET NX through p and, failed, at once again
// through again.
func attack18SetNXTwice(t *testing.T, p, again *redis.Client, key, token string, between func()) (time.Time, bool) {
	ctx := t.Context()
	ok, err := p.SetNX(ctx, key, token, 20*time.Second).Result()
	if err == nil && ok {
		t.Fatal("A's SET NX with two links holding: granted; want it failed")
	}
	t.Logf("A's SET NX: %v, %v", ok, err)
	between()
	start := time.Now()
	ok, err = again.SetNX(ctx, key, token, 20*time.Second).Result()
	if err != nil || !ok {
		t.Logf("A's SET NX again: %v, %v; want OK", ok, err)
		return start, false
	}
	return start, true
}

// The client sends its SET NX again itself, at once.
func TestAttack18FailedAcquiresLateUndoDoesNotDeleteTheRetrysGrant(t *testing.T) {
	for _, tc := range []struct {
		name        string
		nodeTimeout time.Duration
		hold        time.Duration
	}{
		{"node_timeout 500ms, writes held 1.5s", 500 * time.Millisecond, 1500 * time.Millisecond},
		{"node_timeout 50ms (the default), writes held 200ms (a TCP retransmission)", 50 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { attack18LateUndo(t, tc.nodeTimeout, tc.hold, attack18SetNXTwice) })
	}
}

// redsync's Lock does the same: a try that fails is released and tried
// again with the same value.
func TestAttack18RedsyncRetryAfterAFailedTryKeepsItsGrant(t *testing.T) {
	retry := func(t *testing.T, p, _ *redis.Client, key, token string, between func()) (time.Time, bool) {
		m := redsync.New(goredis.NewPool(p)).NewMutex(key, redsync.WithExpiry(20*time.Second), redsync.WithTries(2),
			redsync.WithTimeoutFactor(0.2), redsync.WithRetryDelayFunc(func(int) time.Duration { between(); return 50 * time.Millisecond }),
			redsync.WithGenValueFunc(func() (string, error) { return token, nil }))
		start := time.Now()
		if err := m.LockContext(t.Context()); err != nil {
			t.Logf("redsync Lock with two tries: %v; want OK at the second", err)
			return start, false
		}
		// The first try's SET NX failed: its two held writes are spent.
		return start, true
	}
	attack18LateUndo(t, 500*time.Millisecond, 1500*time.Millisecond, retry)
}

// attack19: A's retry through Q, a proxy whose connections no kill of
// P's orders: the undo's deadline on each master's clock alone keeps the
// late undo from deleting the retry's grant. P serves with room past the
// undo's fan-out (command_timeout 5s); with none, the undo goes with no
// limit (knowndefect_attack19_undated_test.go).
func TestAttack19FailedAcquiresLateUndoDoesNotDeleteTheRetrysGrantThroughAnotherProxy(t *testing.T) {
	attack18LateUndoVia(t, 500*time.Millisecond, 1500*time.Millisecond, commandTimeout, true, attack18SetNXTwice)
}
