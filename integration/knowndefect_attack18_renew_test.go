//go:build knowndefect

package integration

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A known defect (docs/guarantees.md, "Known defects"; attack18 A6): it
// fails until the fix. attack17 F4 through a script served by its
// effect: a Redisson watchdog renewal (pexpire to the watchdog's lease)
// that proxy P gave up on lands on masters after the same owner's
// unlock and new lock with a longer lease through proxy Q (one client
// whose connections a load balancer spreads over two proxies), and cuts
// that lock to the watchdog's lease: C then takes it while the owner's
// lock is valid. One Redis runs the renewal before the unlock.
//
// The renewal is Redisson's renewExpiration (served by its effect: a
// wrapped run carries no deadline on the master's clock). Its newer
// LockTask (RenewLocks, a quorum operation of its own, sent to each
// master alone) carries one, and its test is
// TestAttack18LateRedissonLockTaskRenewalDoesNotCutTheOwnersLaterLock.
// Three masters; P's links to masters 1 and 2 hold the first chunk
// naming the key 700ms (node_timeout 500ms). The owner holds K through
// Q; its renewal (2s) through P fails; it unlocks K through Q and locks
// it again for 20s, told it holds it. The renewal lands on masters 1
// and 2 (2s there). At 2.5s C must not get K.
func TestAttack18LateRedissonRenewalDoesNotCutTheOwnersLaterLock(t *testing.T) {
	// renew is one renewal of key for owner to lease: whether it renewed.
	type renewal func(ctx context.Context, cl *redis.Client, key string, lease int, owner string) (bool, error)
	for _, tc := range []struct {
		name  string
		renew renewal
	}{
		{"renewExpiration (an RLock's, by its effect)", func(ctx context.Context, cl *redis.Client, key string, lease int, owner string) (bool, error) {
			v, err := redis.NewScript(redissonRenew).Run(ctx, cl, []string{key}, lease, owner).Int64()
			return v == 1, err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { attack18LateRenewal(t, tc.renew) })
	}
}
