//go:build !brokenbuild

package quorum

import (
	"testing"
	"time"
)

// The normal build's safety rules are the real ones: the broken build's
// functions are not compiled in.
func TestSafetyRulesAreWhole(t *testing.T) {
	for n := 1; n <= 7; n++ {
		if got := quorumOf(n); got != Quorum(n) {
			t.Errorf("quorumOf(%d) = %d; want Quorum(%d) = %d", n, got, n, Quorum(n))
		}
	}
	for _, tt := range []struct {
		validity time.Duration
		want     bool
	}{{-time.Second, true}, {0, true}, {1, false}, {time.Second, false}} {
		if got := expired(tt.validity); got != tt.want {
			t.Errorf("expired(%v) = %v; want %v", tt.validity, got, tt.want)
		}
	}
}
