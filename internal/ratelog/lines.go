package ratelog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Lines collects log lines, for tests that read what a Log wrote.
type Lines struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Lines returns the lines written so far.
func (l *Lines) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.b.String()), "\n")
}

// Count is how many warnings lines stand for: a line with suppressed=k
// stands for k, any other for one.
func Count(lines []string) (int, error) {
	n := 0
	for _, l := range lines {
		_, s, ok := strings.Cut(l, "suppressed=")
		if !ok {
			n++
			continue
		}
		k, err := strconv.Atoi(strings.Fields(s)[0])
		if err != nil {
			return 0, fmt.Errorf("line %q: %w", l, err)
		}
		n += k
	}
	return n, nil
}
