package quorum

import (
	"context"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
)

// publishWithin is how long after it is sent a node may still run a
// decided message, on that node's clock: a copy that a slow link or a
// frozen master runs later is dropped there, so the hubs' count of the
// copies (internal/pubsub's window) still holds the others when it
// arrives, and it is not delivered as a second publish. A message is
// lost only when every copy is that late: every link to the masters
// stalled, when no lock operation is answered either.
const publishWithin = 5 * time.Second

// publisher is the part of Node that sends a decided message
// (rwlocknode.go).
type publisher interface {
	Publish(ctx context.Context, cmd, channel, message string, until int64) error
}

// publishDecided sends a decided message (a read lock's release, a
// latch's) on every node, each copy due on its node's clock within
// publishWithin of its send (a proxy paused before it sends loses no
// copy); the proxies' pub/sub hubs deliver the copies once, by the tag
// (internal/pubid) every copy carries, whichever nodes sent it. A node
// not yet probed sends it without a limit.
func (e *Engine) publishDecided(ctx context.Context, cmd, channel, message string) {
	message = pubid.New() + message
	fanOut(context.WithoutCancel(ctx), e, func(ctx context.Context, i int, n Node) (struct{}, error) {
		var until int64
		if t, ok := e.onNodeClock(i, time.Now().Add(publishWithin)); ok {
			until = t.UnixMilli()
		}
		return struct{}{}, n.Publish(ctx, cmd, channel, message, until)
	})
}
