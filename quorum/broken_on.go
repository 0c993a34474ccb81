//go:build brokenbuild

package quorum

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"
)

// The negative-control build, for the fault-injection suite only: a binary
// built with -tags brokenbuild breaks the safety rules that
// REDLOCK_PROXY_BROKEN names (comma-separated), so the suite can show that
// its checks catch a broken proxy:
//
//	quorum1       a single node's grant is a quorum
//	novalidity    a lock is granted even when no validity is left
//	noquarantine  grants from quarantined or unverified nodes count
//	nowriteback   a counter's value is returned without its write-back
//
// Each rule is a whole function, swapped for the one in broken.go. No
// release build has this file.
var brokenModes = strings.Split(os.Getenv("REDLOCK_PROXY_BROKEN"), ",")

func quorumOf(n int) int {
	if slices.Contains(brokenModes, "quorum1") {
		return 1
	}
	return Quorum(n)
}

func expired(validity time.Duration) bool {
	return !slices.Contains(brokenModes, "novalidity") && validity <= 0
}

func (e *Engine) counts(i int) bool {
	return slices.Contains(brokenModes, "noquarantine") || e.health[i].counts.Load()
}

func (e *Engine) writeBack(ctx context.Context, key, token, field string, v int64, exclusive bool) error {
	if slices.Contains(brokenModes, "nowriteback") {
		return nil
	}
	return e.writeCounter(ctx, key, token, field, v, exclusive)
}
