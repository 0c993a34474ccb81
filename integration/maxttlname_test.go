package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// A TTL over max_ttl is refused naming the command the client sent, as
// Redis names a command in its errors: 'evalsha' for an EVALSHA (it said
// 'eval'), in any case the client wrote it.
func TestOverMaxTTLNamesTheCommandSent(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	extend := scriptNamed(t, "redis-py extend")
	const acquire = `return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`
	acquireSHA := sha1Hex(acquire)
	if err := p.Client.ScriptLoad(ctx, acquire).Err(); err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	if err := p.Client.Do(ctx, "SET", "held", "tok", "NX", "PX", "10000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	tests := []struct {
		args []any
		want string
	}{
		{[]any{"SET", "k", "t", "NX", "PX", "600000"}, "ERR invalid expire time in 'set' command: 10m0s is over max_ttl"},
		{[]any{"EVAL", acquire, "1", "k", "t", "600000"}, "ERR invalid expire time in 'eval' command: 600000ms is over max_ttl"},
		{[]any{"EVALSHA", acquireSHA, "1", "k", "t", "600000"}, "ERR invalid expire time in 'evalsha' command: 600000ms is over max_ttl"},
		{[]any{"evalSha", acquireSHA, "1", "k", "t", "600000"}, "ERR invalid expire time in 'evalsha' command: 600000ms is over max_ttl"},
		// redis-py's extend adds to the TTL left: over max_ttl only once added.
		{[]any{"EVAL", extend.body, "1", "held", "tok", "299000", "0"}, "ERR invalid expire time in 'eval' command: the extended TTL would be over max_ttl"},
		{[]any{"EVALSHA", extend.sha, "1", "held", "tok", "299000", "0"}, "ERR invalid expire time in 'evalsha' command: the extended TTL would be over max_ttl"},
	}
	for _, tt := range tests {
		if got := errText(p.Client.Do(ctx, tt.args...).Err()); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s = %q; want %q…", tt.args[0], got, tt.want)
		}
	}
}
