// Package leakcheck fails a test binary whose tests leave goroutines
// running: TestMain takes a snapshot before the tests and checks after
// them, with a grace period for goroutines that are still winding down
// (connection handlers after a Close, process waiters after a kill).
// It is the check etcd's TestMain runs, kept to the standard library.
package leakcheck

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// Grace is how long Main waits for goroutines to end after the tests.
const Grace = 10 * time.Second

// Snapshot is the set of goroutine ids running at one moment.
type Snapshot map[string]bool

// Take returns the goroutines running now.
func Take() Snapshot {
	s := Snapshot{}
	for id := range goroutines() {
		s[id] = true
	}
	return s
}

// Check waits up to grace for every goroutine not in before to end. It
// returns an error holding the stacks of those still running then.
//
// A goroutine blocked in a function of one of the ignored packages (its
// top frame's name starts with one of them) is not counted: a third-party
// package's own goroutines, which its API gives no way to end.
func Check(before Snapshot, grace time.Duration, ignored ...string) error {
	deadline := time.Now().Add(grace)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		var leaked []string
		for id, stack := range goroutines() {
			if !before[id] && !benign(stack) && !blockedIn(stack, ignored) {
				leaked = append(leaked, stack)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			slices.Sort(leaked)
			return fmt.Errorf("%d goroutines still running %v after the tests:\n\n%s",
				len(leaked), grace, strings.Join(leaked, "\n\n"))
		}
		time.Sleep(wait)
	}
}

// Main runs the tests and then, if they passed, Check with Grace and
// ignored. It returns the exit code for os.Exit.
func Main(m *testing.M, ignored ...string) int {
	before := Take()
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := Check(before, Grace, ignored...); err != nil {
		fmt.Fprintf(os.Stderr, "leakcheck: %v\n", err)
		return 1
	}
	return 0
}

// benign reports goroutines the runtime and the testing package start
// for themselves: the signal loop, and the test runner's own.
func benign(stack string) bool {
	for _, s := range []string{
		"os/signal.signal_recv",
		"os/signal.loop",
		"created by testing.(*M).",
		"created by testing.runFuzzing",
		"runtime.ensureSigM",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}

// blockedIn reports whether the goroutine's top frame is a function of
// one of the packages (import path and a dot: "example.com/pkg.").
func blockedIn(stack string, packages []string) bool {
	// The first line is "goroutine 12 [chan send]:", the second the top
	// frame's function.
	_, rest, _ := strings.Cut(stack, "\n")
	top, _, _ := strings.Cut(rest, "\n")
	for _, p := range packages {
		if strings.HasPrefix(top, p) {
			return true
		}
	}
	return false
}

// goroutines returns the stack of every goroutine, keyed by its id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	m := map[string]string{}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		// Each starts "goroutine 12 [chan receive]:".
		f := strings.Fields(string(g))
		if len(f) >= 2 && f[0] == "goroutine" {
			m[f[1]] = string(g)
		}
	}
	return m
}
