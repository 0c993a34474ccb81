package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func TestCheckReportsGoroutineStartedAfterSnapshot(t *testing.T) {
	before := Take()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // waited for below, through done
		defer close(done)
		blockedForLeakcheckTest(stop)
	}()
	err := Check(before, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "blockedForLeakcheckTest") {
		t.Errorf("Check with a blocked goroutine = %v; want its stack", err)
	}
	close(stop)
	<-done
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

func blockedForLeakcheckTest(stop chan struct{}) { <-stop }
