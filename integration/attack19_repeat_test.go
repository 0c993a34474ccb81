package integration

import (
	"testing"
	"time"
)

// The plain repeat of SET NX (docs/guarantees.md), on real masters: the
// holder of K sends its SET NX again with its own token (a client
// retrying an acquire whose reply it lost); master 0 denies it, and the
// replies of masters 1 and 2 are held past node_timeout. The failed
// acquire's undo leaves masters 1 and 2, where K holds the token (fewer
// than a quorum answered, and master 0 revealed the token), and C must
// not get K while the holder's grant runs. Before quorum's leavesSilent
// the undo released them, the earlier grant was left on master 0 alone,
// and C got K (a known defect, under the knowndefect build tag). One
// Redis answers nil and keeps the key.
func TestAttack19PlainRepeatWithLostRepliesKeepsTheEarlierGrant(t *testing.T) {
	c := startNodes(t, 3)
	var h1, h2 attack18HoldFirst
	pAddrs := []string{c.addrs[0], startHoldRelay(t, c.addrs[1], &h1), startHoldRelay(t, c.addrs[2], &h2)}
	p := mustStartMonitored(t, attack16Config(), pAddrs...).Client
	attack16Warm(t, p)
	ctx := t.Context()
	const key, tokA, tokC = "attack19:repeat", "attack19-token-A", "attack19-token-C"
	start := time.Now()
	if ok, err := p.SetNX(ctx, key, tokA, 30*time.Second).Result(); !ok || err != nil {
		t.Fatalf("A's SET NX: %v, %v; want OK", ok, err)
	}
	expires := start.Add(30 * time.Second)
	h1.resetReplies(key, 1, 700*time.Millisecond)
	h2.resetReplies(key, 1, 700*time.Millisecond)
	ok, err := p.SetNX(ctx, key, tokA, 30*time.Second).Result()
	t.Logf("A's SET NX again, replies of masters 1 and 2 held: %v, %v", ok, err)
	time.Sleep(time.Second) // the held replies come, the undo is done
	attack16Dump(t, c, "after A's repeat", key)
	if ok, err := p.SetNX(ctx, key, tokC, 10*time.Second).Result(); err == nil && ok && time.Now().Before(expires) {
		attack16Dump(t, c, "after C's SET NX", key)
		t.Errorf("C got %s while A's grant is valid for %v more", key, time.Until(expires).Round(time.Millisecond))
	}
}
