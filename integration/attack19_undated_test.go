package integration

import "testing"

// TestAttack19FailedRefreshWithNoRoomPastItsFanOutDoesNotCutTheLaterGrant:
// with command_timeout = node_timeout (500ms) a fan-out's deadline was
// the command's end, so no time was left past it for the hold, and
// every dated write went with no limit (attack19 U1: P's failed refresh
// landed late and cut A's later grant through Q). The fan-out now ends
// its wait early enough for the hold (quorum's fitHold).
func TestAttack19FailedRefreshWithNoRoomPastItsFanOutDoesNotCutTheLaterGrant(t *testing.T) {
	attack17FailedRefreshThenObtain(t, false, attack16Config().NodeTimeout, attack16Config())
}
