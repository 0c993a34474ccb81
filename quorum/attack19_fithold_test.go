package quorum

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// attack19 F1, on fitHold: a dated write that no time is left to wait and
// hold for is not sent (dated answers errNoTimeToHold). Its node
// was never called, so that is no stall of it: three such commands in a
// row must not mark a healthy node down, which drops its connection
// (every other client's operations in flight on it fail) and takes it
// from every quorum until a probe brings it back. It failed: each node was
// marked down once (dated's not-sent error, context.DeadlineExceeded, was
// noted as a timeout of the node while the command's context still ran;
// before fitHold the write went out and timed out with the command,
// which noteResult ignores). Now errNoTimeToHold, which it skips.
func TestAttack19DatedWriteNotSentIsNoStallOfItsNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, a, b, c := startedFakes(t)
		time.Sleep(300 * time.Millisecond) // the reading ages
		_, hold := e.writeUntil(0, time.Now().Add(50*time.Millisecond))
		l := Lock{Keys: []string{"k"}, Token: "t"}
		for range stallLimit {
			// A release (or a FENCE write-back after its read rounds)
			// with hold/2 of the command's time left.
			ctx, cancel := context.WithTimeout(t.Context(), hold/2)
			_, err := e.Release(ctx, l)
			cancel()
			t.Logf("release with %v left: %v", hold/2, err)
			time.Sleep(10 * time.Millisecond)
		}
		for i, n := range []*fakeNode{a, b, c} {
			if downs := e.health[i].downs.Load(); downs > 0 {
				t.Errorf("%s: marked down %d times by releases it was never sent (its connection dropped with it)", n.addr, downs)
			}
		}
	})
}
