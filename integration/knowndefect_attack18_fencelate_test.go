//go:build knowndefect

package integration

import "testing"

// A known defect (docs/guarantees.md, "Known defects"; attack18 A7
// across proxies): it fails until the fix. The late write-back of
// attack18LateFenceWriteBack lands after the same token's next hold
// through another proxy, whose connections no kill of the first orders.
func TestAttack18LateFenceWriteBackDoesNotLowerTheLaterHoldsTokenThroughAnotherProxy(t *testing.T) {
	attack18LateFenceWriteBack(t, true)
}
