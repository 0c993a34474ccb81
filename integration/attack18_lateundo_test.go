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

// attack18LateUndo: P's links to masters 1 and 2 hold the first two
// writes naming the key (A's SET NX and its undo's release) for hold,
// past node_timeout. A's SET NX fails; the undo releases master 0 and
// times out on 1 and 2. A sends the same SET NX again (retry), told OK.
// The held releases then land on masters 1 and 2; C must not get the
// key while A's retry is valid. The undo goes out on a new connection
// only if the SET NX's was dropped before the undo was sent (the two
// race at the deadline: on it, the undo is not sent or is killed with
// it), and stays alone on it only if that connection is dropped before
// the next write is sent (then the retry's new connection kills it, as
// F4b's fix does). A run where any of that happened on either master
// says nothing, and the scenario runs again on another key, up to 6
// times.
func attack18LateUndo(t *testing.T, nodeTimeout, hold time.Duration, retry attack18Retry) {
	attack18LateUndoVia(t, nodeTimeout, hold, commandTimeout, false, retry)
}

// attack18Retry is A's SET NX of key with token through p, failed, and its
// retry through again: when the retry was sent, and whether it was granted.
type attack18Retry func(t *testing.T, p, again *redis.Client, key, token string) (time.Time, bool)

// attack18LateUndoVia is attack18LateUndo with P serving with command_timeout
// pTimeout, and A's retry and C's SET NX through Q, a proxy with direct
// links, if throughQ.
func attack18LateUndoVia(t *testing.T, nodeTimeout, hold, pTimeout time.Duration, throughQ bool, retry attack18Retry) {
	c := startNodes(t, 3)
	var h1, h2 attack18HoldFirst
	pAddrs := []string{c.addrs[0], startHoldRelay(t, c.addrs[1], &h1), startHoldRelay(t, c.addrs[2], &h2)}
	cfg := attack16Config()
	cfg.NodeTimeout = nodeTimeout
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
	const tokA, tokC = "attack18-token-A", "attack18-token-C"
	for try := range 6 {
		key := fmt.Sprintf("attack18:undo:%d", try)
		h1.reset(key, 2, hold)
		h2.reset(key, 2, hold)
		start, ok := retry(t, p, again, key, tokA)
		c1, v1 := h1.held()
		c2, v2 := h2.held()
		expires := start.Add(20 * time.Second)
		time.Sleep(hold + 300*time.Millisecond) // the held undo lands on masters 1 and 2
		alone := func(h *attack18HoldFirst, c []int, v []string) bool {
			return len(c) == 2 && v[0] == "set" && v[1] == "eval" && c[0] != c[1] && h.marked(c[1]) == 1
		}
		if !alone(&h1, c1, v1) || !alone(&h2, c2, v2) {
			t.Logf("try %d: held %v on connections %v and %v on %v: an undo not sent, sent on the SET NX's connection, or followed on its own; again", try, v1, c1, v2, c2)
			continue
		}
		if !ok {
			t.Errorf("A's retry was not granted")
			return
		}
		attack16Dump(t, c, "after the held undo landed", key)
		granted, err := again.SetNX(t.Context(), key, tokC, 10*time.Second).Result()
		if err == nil && granted && time.Now().Before(expires) {
			attack16Dump(t, c, "after C's SET NX", key)
			t.Errorf("C got %s while A's retry is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
		}
		return
	}
	t.Skip("in 6 tries the undo never went out on a new connection")
}

// attack18SetNXTwice is A's SET NX through p and, failed, at once again
// through again.
func attack18SetNXTwice(t *testing.T, p, again *redis.Client, key, token string) (time.Time, bool) {
	ctx := t.Context()
	ok, err := p.SetNX(ctx, key, token, 20*time.Second).Result()
	if err == nil && ok {
		t.Fatal("A's SET NX with two links holding: granted; want it failed")
	}
	t.Logf("A's SET NX: %v, %v", ok, err)
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
		{"node_timeout 500ms, writes held 700ms", 500 * time.Millisecond, 700 * time.Millisecond},
		{"node_timeout 50ms (the default), writes held 200ms (a TCP retransmission)", 50 * time.Millisecond, 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) { attack18LateUndo(t, tc.nodeTimeout, tc.hold, attack18SetNXTwice) })
	}
}

// redsync's Lock does the same: a try that fails is released and tried
// again with the same value.
func TestAttack18RedsyncRetryAfterAFailedTryKeepsItsGrant(t *testing.T) {
	retry := func(t *testing.T, p, _ *redis.Client, key, token string) (time.Time, bool) {
		m := redsync.New(goredis.NewPool(p)).NewMutex(key, redsync.WithExpiry(20*time.Second), redsync.WithTries(2),
			redsync.WithTimeoutFactor(0.2), redsync.WithRetryDelay(50*time.Millisecond),
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
	attack18LateUndoVia(t, 500*time.Millisecond, 700*time.Millisecond, commandTimeout, true, attack18SetNXTwice)
}
