//go:build knowndefect

package integration

import "testing"

// A known defect (docs/guarantees.md, "Known defects"; attack18 A7
// across proxies): it fails until the fix. The late write-back of
// attack18LateFenceWriteBack lands after the same token's next hold
// through another proxy, whose connections no kill of the first orders.
// The write-back carries the lock writes' deadline on each master's
// clock, but P here runs no monitor, so it has read no clock and sends
// no limit (as a proxy before its first probe); with P monitored its
// later connections' kills order the write-back first, and this setup
// tells nothing of the deadline (TestLockWritesPastTheirDeadlineDoNothing
// in quorum/redisnode shows a late write-back doing nothing).
func TestAttack18LateFenceWriteBackDoesNotLowerTheLaterHoldsTokenThroughAnotherProxy(t *testing.T) {
	attack18LateFenceWriteBack(t, true, false)
}
