package ratelog

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestLogOneLinePerIntervalWithCount(t *testing.T) {
	const interval = 200 * time.Millisecond
	out := &Lines{}
	log := slog.New(slog.NewTextHandler(out, nil))
	r := New("client refused", interval)
	start := time.Now()
	warnings := 0
	for time.Since(start) < 3*interval+interval/2 { // a flood of 3.5 intervals
		r.Warn(log, "reason", "max_clients")
		warnings++
		time.Sleep(50 * time.Microsecond)
	}
	r.Stop()
	lines := out.Lines()
	elapsed := time.Since(start)
	if max := int(elapsed/interval) + 2; len(lines) > max || len(lines) < 2 {
		t.Errorf("%d warnings in %v made %d lines; want 2 to %d (one per %v)", warnings, elapsed, len(lines), max, interval)
	}
	if got := count(t, lines); got != warnings {
		t.Errorf("lines count %d warnings; want %d:\n%s", got, warnings, strings.Join(lines, "\n"))
	}
	if !strings.Contains(lines[0], "reason=max_clients") || strings.Contains(lines[0], "suppressed") {
		t.Errorf("first line = %q; want the warning itself, at once", lines[0])
	}
}

func TestLogCountWrittenWhenFloodStops(t *testing.T) {
	out := &Lines{}
	log := slog.New(slog.NewTextHandler(out, nil))
	r := New("accept failed", 50*time.Millisecond)
	for range 10 {
		r.Warn(log, "err", "too many open files")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(out.Lines()) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	lines := out.Lines()
	if len(lines) != 2 || !strings.Contains(lines[1], "suppressed=9") {
		t.Errorf("10 warnings at once, then none = %q; want the first, then one line with suppressed=9", lines)
	}
	if got := count(t, lines); got != 10 {
		t.Errorf("lines count %d warnings; want 10", got)
	}
	r.Stop()
}

// count is Count, failing the test on a malformed line.
func count(t *testing.T, lines []string) int {
	t.Helper()
	n, err := Count(lines)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
