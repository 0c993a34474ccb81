package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestExecInSubscribedModeAsRedis: EXEC on a RESP2 connection in
// subscribed mode is refused as one Redis refuses it (an EXEC refused
// before it runs is an EXECABORT), and the connection stays usable.
func TestExecInSubscribedModeAsRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	for _, seq := range [][]string{
		{"SUBSCRIBE|ch", "EXEC"},
		{"SUBSCRIBE|ch", "MULTI", "EXEC"},
	} {
		rc, pc := dialResp(t, ref.Addr), dialResp(t, p.Addr)
		for _, line := range append(seq, "PING|x") {
			c := cmdOf(splitArgs(line)...)
			r, err := rc.do(c)
			if err != nil {
				t.Fatalf("reference %s: %v", c, err)
			}
			pv, err := pc.do(c)
			if err != nil {
				t.Fatalf("proxy %s: %v", c, err)
			}
			if r.String() != pv.String() {
				t.Errorf("%v, then %s: proxy = %v; one Redis = %v", seq, c, pv, r)
			}
		}
	}
}

// splitArgs splits a probe line at "|".
func splitArgs(line string) []string { return strings.Split(line, "|") }

// TestCounterOverflowAsRedis: INCR and INCRBY of a fence_keys counter
// past 2^63-1 are refused with Redis's text, and the counter stays.
func TestCounterOverflowAsRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{FenceKeys: []string{"fencing:*"}})
	ref := startRedis(t)
	rc, pc := dialResp(t, ref.Addr), dialResp(t, p.Addr)
	for _, line := range []string{
		"INCRBY|fencing:x|9223372036854775806", "INCR|fencing:x", "INCR|fencing:x", "INCRBY|fencing:x|5", "GET|fencing:x", "PING",
	} {
		c := cmdOf(splitArgs(line)...)
		r, err := rc.do(c)
		if err != nil {
			t.Fatalf("reference %s: %v", c, err)
		}
		pv, err := pc.do(c)
		if err != nil {
			t.Fatalf("proxy %s: %v", c, err)
		}
		if r.String() != pv.String() {
			t.Errorf("%s: proxy = %v; one Redis = %v", c, pv, r)
		}
	}
}
