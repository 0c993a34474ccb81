package integration

import "testing"

// attack18 A4: a decided publish may land late (its limit on each
// master's clock, 5s). When it shared the lock operations' connection, a
// lock operation of another client that timed out behind it made the
// next connection kill that one (F4b), and the publish, still on its
// way, with it: the zero message was lost on every master. Late-landing
// operations now go on connections of their own, never killed.
// attack14 P2's scenario (every master's link holds the chunk that
// carries the latch's zero message 2.5s, within its limit: delivered
// once) with another client's SET NXs through the same proxy while the
// chunks are held: the zero message must still be delivered once.
func TestAttack18LatchZeroMessageLandsLateBesideALockOperation(t *testing.T) {
	latchZeroMessageHeldOnEveryLink(t, "latch:attack18:a4", true)
}
