//go:build !brokenbuild

package quorum

import (
	"context"
	"time"
)

// The safety rules that the negative-control build breaks on purpose
// (broken_on.go, the same functions whole, for the fault suite). Each is
// a whole function called as is, so no safety line carries a test hook,
// and no release build contains the broken ones.

// quorumOf is how many of n nodes must grant: Quorum(n).
func quorumOf(n int) int { return Quorum(n) }

// expired reports whether a lock with validity left is no lock.
func expired(validity time.Duration) bool { return validity <= 0 }

// counts reports whether node i's grants count towards a quorum: not
// while it is quarantined, unverified or refused.
func (e *Engine) counts(i int) bool { return e.health[i].counts.Load() }

// writeBack is a counter's write-back round (fence.go): field raised to
// v on every node, done when a quorum wrote it.
func (e *Engine) writeBack(ctx context.Context, key, token, field string, v int64, exclusive bool) error {
	return e.writeCounter(ctx, key, token, field, v, exclusive)
}
