package redisnode

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// KillScript sends SCRIPT KILL on a connection of its own (the pipeline's
// may be waiting for the busy script), and FUNCTION KILL where the node
// runs the wrapper as a function and answers that only that stops it.
func (n *redisNode) KillScript(ctx context.Context) (quorum.Kill, string, error) {
	kill, text, err := killReply(n.c.Do(ctx, "SCRIPT", "KILL").Err())
	if err != nil && redis.HasErrorPrefix(err, "BUSY ") {
		return killReply(n.c.Do(ctx, "FUNCTION", "KILL").Err())
	}
	return kill, text, err
}

// ScriptBusy pings the node on a connection of its own: a node busy in a
// script answers BUSY.
func (n *redisNode) ScriptBusy(ctx context.Context) (bool, error) {
	err := n.c.Ping(ctx).Err()
	if redis.HasErrorPrefix(err, "BUSY ") {
		return true, nil
	}
	return false, err
}

// killReply classifies a SCRIPT KILL or FUNCTION KILL reply.
func killReply(err error) (quorum.Kill, string, error) {
	switch {
	case err == nil:
		return quorum.KillDone, "", nil
	case redis.HasErrorPrefix(err, "NOTBUSY"):
		return quorum.KillNotBusy, "", nil
	case redis.HasErrorPrefix(err, "UNKILLABLE"):
		return quorum.KillUnkillable, err.Error(), nil
	}
	return quorum.KillNotBusy, "", err
}
