package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestCheckReportsGoroutineStartedAfterSnapshot(t *testing.T) {
	before := Take()
	end := startBlocked()
	err := Check(before, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "blockedForLeakcheckTest") {
		t.Errorf("Check with a blocked goroutine = %v; want its stack", err)
	}
	end()
	if err := Check(before, time.Second); err != nil {
		t.Errorf("Check after it ended = %v; want nil", err)
	}
}

func TestCheckWaitsForGoroutineWindingDown(t *testing.T) {
	before := Take()
	go time.Sleep(100 * time.Millisecond) // ends within Check's grace
	if err := Check(before, 5*time.Second); err != nil {
		t.Errorf("Check = %v; want nil once the goroutine ended", err)
	}
}

// A goroutine blocked in an ignored package is not reported; one blocked
// elsewhere still is, even if an ignored package is on its stack.
func TestCheckIgnoresGoroutinesBlockedInIgnoredPackages(t *testing.T) {
	before := Take()
	end := startBlocked()
	defer end()
	pkg := "github.com/redlock-proxy/redlock-proxy/internal/leakcheck."
	if err := Check(before, 50*time.Millisecond, pkg); err != nil {
		t.Errorf("Check ignoring %s = %v; want nil", pkg, err)
	}
	if err := Check(before, 50*time.Millisecond, "github.com/Shopify/toxiproxy/v2/toxics."); err == nil {
		t.Errorf("Check ignoring another package = nil; want the blocked goroutine")
	}
}

// startBlocked starts a goroutine blocked in blockedForLeakcheckTest; the
// function it returns ends it and waits for it.
func startBlocked() func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // waited for by the returned function, through done
		defer close(done)
		blockedForLeakcheckTest(stop)
	}()
	return func() {
		close(stop)
		<-done
	}
}

func blockedForLeakcheckTest(stop chan struct{}) { <-stop }
