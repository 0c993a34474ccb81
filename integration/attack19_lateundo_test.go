package integration

import (
	"fmt"
	"testing"
	"time"
)

// attack18 A1 by the proxy's own retry of a split acquire (proxy/lock.go:
// granted and denied both, with failures that could make either side a
// quorum, is tried once more a node timeout later, with the same token).
// Master 0 holds another client's leftover (C's, gone in 700ms) and
// denies A's SET NX, master 1 grants it, master 2's link holds the SET:
// split. The undo releases masters 1 and 2 (a quorum said they do not
// hold A's token, so also under repeat19's rule for silent masters), and
// their links hold the releases 1500ms (node_timeout 500ms), master 2's
// the SET past the test (a segment lost until the end). The retry, a
// second after the first try, C's leftover gone, is granted and answered
// OK. The held releases then land; C must not get the key while A's grant is
// valid: the retry's new connection to master 2 kills the one the
// release was dropped with (F4b), and the release's deadline on the
// master's clock refuses it too.
func TestAttack19SplitAcquiresRetryKeepsItsGrantFromTheFirstTrysLateUndo(t *testing.T) {
	c := startNodes(t, 3)
	var h1, h2 attack18HoldFirst
	pAddrs := []string{c.addrs[0], startHoldRelay(t, c.addrs[1], &h1), startHoldRelay(t, c.addrs[2], &h2)}
	p := mustStartMonitored(t, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const tokA, tokC = "attack19-token-A", "attack19-token-C"
	const leftover, hold = 700 * time.Millisecond, 1500 * time.Millisecond
	var seen []string
	for try := range 8 {
		key := fmt.Sprintf("attack19:split:%d", try)
		if err := c.direct[0].Set(ctx, key, tokC, leftover).Err(); err != nil {
			t.Fatal(err)
		}
		h1.resetAfter(key, 1, 1, hold)         // the SET goes, the release is held
		h2.resetEach(key, 4*time.Second, hold) // the SET past the test, the release held
		start := time.Now()
		ok, err := p.SetNX(ctx, key, tokA, 20*time.Second).Result()
		c1, v1 := h1.held()
		c2, v2 := h2.held()
		seen = append(seen, fmt.Sprintf("A's SET NX: %v, %v; held %v on %v on master 1, %v on %v on master 2", ok, err, v1, c1, v2, c2))
		t.Logf("try %d: %s", try, seen[len(seen)-1])
		if len(v1) != 1 || v1[0] != "eval" || len(v2) != 2 || v2[0] != "set" || v2[1] != "eval" || err != nil || !ok {
			// Not split, an undo not sent (it races the SET's deadline),
			// or the retry not granted: again.
			continue
		}
		expires := start.Add(20 * time.Second)
		time.Sleep(time.Until(start.Add(500*time.Millisecond + hold + 300*time.Millisecond))) // the held releases land
		attack16Dump(t, c, "after the held releases landed", key)
		granted, err := p.SetNX(ctx, key, tokC, 10*time.Second).Result()
		if err == nil && granted && time.Now().Before(expires) {
			attack16Dump(t, c, "after C's SET NX", key)
			t.Errorf("C got %s while A's grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
		}
		return
	}
	t.Fatalf("in 8 tries the first try's undo never released masters 1 and 2 before a granted retry: %q", seen)
}
