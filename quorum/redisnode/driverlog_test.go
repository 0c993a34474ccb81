package redisnode

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// TestSetDriverLog checks that a failed dial's log line goes to the given
// logger, at Debug level, rather than to stderr.
func TestSetDriverLog(t *testing.T) {
	var buf bytes.Buffer
	SetDriverLog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { SetDriverLog(slog.New(slog.DiscardHandler)) })
	// A free port nothing listens on: the dial is refused.
	n := NewRedisNode(net.JoinHostPort("127.0.0.1", strconv.Itoa(redistest.FreePort(t))), NodeOptions{})
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	// Probe goes through go-redis (the lock operations do not).
	if _, err := n.Probe(ctx); err == nil {
		t.Fatalf("Probe on a closed port succeeded")
	}
	if got := buf.String(); !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "go-redis") || !strings.Contains(got, "dial") {
		t.Errorf("driver log = %q; want a DEBUG go-redis line about the dial", got)
	}
}
