package integration

import "testing"

// attack18 A7 across proxies with P monitored, as main runs it: the
// write-back P gave up on carries the lock writes' deadline on each
// master's clock (47f9d96) and does nothing when it lands after the
// same token's next hold through Q. P's links to the two masters hold
// its CLIENT KILLs past that, so no kill of its orders the late
// write-back: the deadline alone does.
func TestAttack19LateFenceWriteBackThroughAMonitoredProxyDoesNotLowerTheLaterHoldsToken(t *testing.T) {
	attack18LateFenceWriteBack(t, true, true)
}
