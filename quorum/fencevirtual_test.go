package quorum

import (
	"testing"
	"testing/synctest"
	"time"
)

// FENCE's one round, on the fake's counters in virtual time: the quorum
// asked first (two of three) each answer 20ms late, the key's TTL then
// 1000ms there, so the hold's validity ends exactly 1s - (10ms drift +
// 2ms) after the call began, and T is the counter plus one, taken in one
// round with no write-back. A repeated FENCE of the hold, later, gets
// the same T from the records that round left.
func TestFenceValidityIsExactOnTheFake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		for _, f := range fs {
			f.delay = 20 * time.Millisecond
			f.withCounters(map[string]int64{FenceField: 7}).with("k", "tok", 1020*time.Millisecond)
		}
		e := New(Config{NodeTimeout: 50 * time.Millisecond, MaxTTL: time.Minute}, asNodes(fs)...)
		start := time.Now()
		got, err := e.Fence(t.Context(), "k", "tok")
		if err != nil || got.Token != 8 || !got.Expires.Equal(start.Add(988*time.Millisecond)) {
			t.Fatalf("Fence = %d expiring at +%v, %v; want 8 at +988ms", got.Token, got.Expires.Sub(start), err)
		}
		rounds := 0
		for _, f := range fs {
			rounds += len(f.callsTo("fenceround"))
			if w := f.callsTo("writecounter"); len(w) > 0 {
				t.Errorf("node %s: %d write-backs after a round a quorum agreed on", f.addr, len(w))
			}
		}
		if rounds != 2 {
			t.Errorf("FENCE asked %d nodes; want the quorum asked first, 2", rounds)
		}

		time.Sleep(100 * time.Millisecond)
		again, err := e.Fence(t.Context(), "k", "tok")
		if err != nil || again.Token != 8 {
			t.Fatalf("repeated Fence = %d, %v; want 8 again", again.Token, err)
		}
	})
}
