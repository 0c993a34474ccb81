package quorum

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
)

// replyHasPrefix reads a reply as go-redis's HasErrorPrefix does, for the
// pipeline's replies and go-redis's, wrapped or not; an error that is no
// reply (a connection's, a timeout's) has no prefix.
func TestReplyHasPrefixAsGoRedis(t *testing.T) {
	tests := []struct {
		err    error
		prefix string
	}{
		{wire.Error("WRONGTYPE Operation against a key holding the wrong kind of value"), "WRONGTYPE"},
		{wire.Error("ERR WRONGTYPE from a server that puts ERR first"), "WRONGTYPE"},
		{wire.Error("NOSCRIPT No matching script"), "WRONGTYPE"},
		{fmt.Errorf("node 1: %w", wire.Error("BUSY Redis is busy running a script")), "BUSY "},
		{replyErr("READONLY You can't write against a read only replica."), "READONLY"},
		{errors.New("WRONGTYPE but no reply: a local error"), "WRONGTYPE"},
		{redis.Nil, "redis"},
		{nil, "WRONGTYPE"},
	}
	for _, tt := range tests {
		if got, want := replyHasPrefix(tt.err, tt.prefix), redis.HasErrorPrefix(tt.err, tt.prefix); got != want {
			t.Errorf("replyHasPrefix(%v, %q) = %v; go-redis says %v", tt.err, tt.prefix, got, want)
		}
	}
	var re errorReply
	if !errors.As(fmt.Errorf("wrapped: %w", wire.Error("OOM")), &re) {
		t.Error("a wrapped pipeline reply is no errorReply")
	}
	var _ redis.Error = errorReply(nil) // the same method set
}
