package proxy

import (
	"strings"
	"testing"
)

// TestFenceCommands runs FENCE, INCR, INCRBY and GET of a counter over
// three in-process nodes (as the embedded demo nodes are), and the
// refusals around them.
func TestFenceCommands(t *testing.T) {
	addr, _ := startServer(t, 3, Config{FenceKeys: []string{"fencing:*"}})
	rc := dial(t, addr)
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"SET", "lock", "a", "NX", "PX", "10000"}, "+OK\r\n"},
		{[]string{"FENCE", "lock", "a"}, ":1\r\n"},
		{[]string{"FENCE", "lock", "a"}, ":1\r\n"}, // the same hold, the same token
		{[]string{"FENCE", "lock", "b"}, "-NOTHELD the lock 'lock' is not held by this token (or its validity ran out)\r\n"},
		{[]string{"FENCE", "nolock", "a"}, "-NOTHELD the lock 'nolock' is not held by this token (or its validity ran out)\r\n"},
		{[]string{"EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "lock", "a"}, ":1\r\n"},
		{[]string{"SET", "lock", "b", "NX", "PX", "10000"}, "+OK\r\n"},
		{[]string{"FENCE", "lock", "b"}, ":2\r\n"},
		{[]string{"GET", "fencing:t"}, "$-1\r\n"},
		{[]string{"INCR", "fencing:t"}, ":1\r\n"},
		{[]string{"INCR", "fencing:t"}, ":2\r\n"},
		{[]string{"INCRBY", "fencing:t", "10"}, ":12\r\n"},
		{[]string{"GET", "fencing:t"}, "$2\r\n12\r\n"},
		{[]string{"INCRBY", "fencing:t", "0"}, "-ERR a fence_keys counter only grows: the increment must be above 0\r\n"},
		{[]string{"INCRBY", "fencing:t", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"INCR", "other"}, "-ERR 'incr' is not supported: redlock-proxy serves lock commands only (a counter over independent masters is not monotonic; INCR and INCRBY of a key matching fence_keys are served as quorum counters)\r\n"},
		{[]string{"SET", "fencing:t", "1", "NX", "PX", "1000"}, "-ERR 'fencing:t' is a fence_keys counter: only INCR, INCRBY and GET may name it\r\n"},
		{[]string{"DEL", "fencing:t"}, "-ERR 'fencing:t' is a fence_keys counter: only INCR, INCRBY and GET may name it\r\n"},
		{[]string{"EXISTS", "x", "fencing:t"}, "-ERR 'fencing:t' is a fence_keys counter: only INCR, INCRBY and GET may name it\r\n"},
		{[]string{"EVAL", "return 1", "1", "fencing:t"}, "-ERR 'fencing:t' is a fence_keys counter: only INCR, INCRBY and GET may name it\r\n"},
		{[]string{"FENCE", "fencing:t", "a"}, "-ERR 'fencing:t' is a fence_keys counter: only INCR, INCRBY and GET may name it\r\n"},
		{[]string{"GET", "redlock-proxy:fence"}, "-ERR key 'redlock-proxy:fence' is reserved for redlock-proxy\r\n"},
		{[]string{"SET", "redlock-proxy:fence:lock", "1 b", "NX", "PX", "1000"}, "-ERR key 'redlock-proxy:fence:lock' is reserved for redlock-proxy\r\n"},
		{[]string{"EVAL", "return 1", "1", "redlock-proxy:fence"}, "-ERR key 'redlock-proxy:fence' is reserved for redlock-proxy\r\n"},
		{[]string{"FENCE", "redlock-proxy:fence", "a"}, "-ERR key 'redlock-proxy:fence' is reserved for redlock-proxy\r\n"},
		{[]string{"FENCE", "lock"}, "-ERR wrong number of arguments for 'fence' command\r\n"},
		{[]string{"PING"}, "+PONG\r\n"}, // the connection stays usable
	}
	for _, st := range steps {
		if got := rc.do(t, st.args...); got != st.want {
			t.Errorf("%s = %q; want %q", strings.Join(st.args, " "), got, st.want)
		}
	}
}

// TestIncrRefusedWithoutFenceKeys: with no fence_keys, INCR is refused and
// counters stay out of the way of every other command.
func TestIncrRefusedWithoutFenceKeys(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	if got, want := rc.do(t, "INCR", "fencing:t"), "-ERR 'incr' is not supported: redlock-proxy serves lock commands only (a counter over independent masters is not monotonic; INCR and INCRBY of a key matching fence_keys are served as quorum counters)\r\n"; got != want {
		t.Errorf("INCR = %q; want %q", got, want)
	}
	if got := rc.do(t, "SET", "fencing:t", "a", "NX", "PX", "1000"); got != "+OK\r\n" {
		t.Errorf("SET of a key no pattern names = %q; want +OK", got)
	}
}
