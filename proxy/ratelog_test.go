package proxy

import (
	"bytes"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lineLog collects log lines.
type lineLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// counted is how many warnings the lines stand for: a line with
// suppressed=k stands for k, any other for one.
func counted(t *testing.T, lines []string) int {
	t.Helper()
	n := 0
	for _, l := range lines {
		_, s, ok := strings.Cut(l, "suppressed=")
		if !ok {
			n++
			continue
		}
		k, err := strconv.Atoi(strings.Fields(s)[0])
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		n += k
	}
	return n
}

func TestRateLogOneLinePerIntervalWithCount(t *testing.T) {
	const interval = 200 * time.Millisecond
	out := &lineLog{}
	log := slog.New(slog.NewTextHandler(out, nil))
	r := newRateLog("client refused", interval)
	start := time.Now()
	warnings := 0
	for time.Since(start) < 3*interval+interval/2 { // a flood of 3.5 intervals
		r.warn(log, "reason", "max_clients")
		warnings++
		time.Sleep(50 * time.Microsecond)
	}
	r.stop()
	lines := out.lines()
	elapsed := time.Since(start)
	if max := int(elapsed/interval) + 2; len(lines) > max || len(lines) < 2 {
		t.Errorf("%d warnings in %v made %d lines; want 2 to %d (one per %v)", warnings, elapsed, len(lines), max, interval)
	}
	if got := counted(t, lines); got != warnings {
		t.Errorf("lines count %d warnings; want %d:\n%s", got, warnings, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[0], "reason=max_clients") || strings.Contains(lines[0], "suppressed") {
		t.Errorf("first line = %q; want the warning itself, at once", lines[0])
	}
}

func TestRateLogCountWrittenWhenFloodStops(t *testing.T) {
	out := &lineLog{}
	log := slog.New(slog.NewTextHandler(out, nil))
	r := newRateLog("accept failed", 50*time.Millisecond)
	for range 10 {
		r.warn(log, "err", "too many open files")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(out.lines()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lines := out.lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=9") {
		t.Errorf("10 warnings at once, then none = %q; want the first, then one line with suppressed=9", lines)
	}
	if got := counted(t, lines); got != 10 {
		t.Errorf("lines count %d warnings; want 10", got)
	}
	r.stop()
}
