// Package ratelog writes a warning that may repeat thousands of times a
// second at most once per interval, with a count of the ones between:
// the proxy's refused clients and failed accepts, a master's error
// replies. It is its own package because both the listener (proxy) and
// the engine (quorum) log so.
package ratelog

import (
	"log/slog"
	"sync"
	"time"
)

// Log writes a warning that may repeat thousands of times a second
// (a refused client, a failed accept) at most once per interval. The
// first one is written at once; the ones within the interval after it
// are counted, and one line for them all, with the last one's attributes
// and their count ("suppressed"), is written when the interval ends. A
// flood thus writes one line per interval, and no count is lost.
type Log struct {
	msg      string
	interval time.Duration

	mu         sync.Mutex
	log        *slog.Logger // the last warning's
	last       time.Time    // when a line was last written
	suppressed int          // warnings since then, not written
	args       []any        // the last suppressed warning's attributes
	timer      *time.Timer
	stopped    bool
}

// New returns a Log of msg, one line per interval at most.
func New(msg string, interval time.Duration) *Log {
	return &Log{msg: msg, interval: interval}
}

// Warn logs msg with args to log now, or counts it if a line was written
// less than an interval ago.
func (r *Log) Warn(log *slog.Logger, args ...any) {
	r.mu.Lock()
	now := time.Now()
	r.log = log
	if r.stopped || r.timer == nil && (r.last.IsZero() || now.Sub(r.last) >= r.interval) {
		r.last = now
		r.mu.Unlock()
		log.Warn(r.msg, args...)
		return
	}
	r.suppressed++
	r.args = args
	if r.timer == nil {
		// Its goroutine is the timer's, and only writes the line; stop
		// writes the count itself, after any flush already under way.
		r.timer = time.AfterFunc(r.last.Add(r.interval).Sub(now), r.flush)
	}
	r.mu.Unlock()
}

// flush writes the count of the warnings suppressed since the last line.
// It writes under r.mu, so that once Stop's own flush returns, a line the
// timer's flush began is written too.
func (r *Log) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, args := r.suppressed, r.args
	r.suppressed, r.args, r.timer = 0, nil, nil
	if n > 0 {
		r.last = time.Now()
		r.log.Warn(r.msg, append(args, "suppressed", n)...)
	}
}

// Stop writes the pending count, if any, and logs every later warning
// at once: its writer is closing.
func (r *Log) Stop() {
	r.mu.Lock()
	r.stopped = true
	t := r.timer
	r.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	r.flush()
}
