package redisnode

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// SetDriverLog sends go-redis's own log lines (a failed dial, for one) to
// l at Debug level. go-redis otherwise prints them to stderr, a line per
// failed dial while a node is down. go-redis keeps its logger globally, so
// this affects every client in the process; call it once, at start-up.
func SetDriverLog(l *slog.Logger) {
	redis.SetLogger(driverLog{l})
}

type driverLog struct{ l *slog.Logger }

func (d driverLog) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, "go-redis", "msg", fmt.Sprintf(format, v...))
}
