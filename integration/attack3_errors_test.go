package integration

import (
	"strings"
	"testing"
	"time"

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

// TestInfoKeyspaceOutageIsNotEmpty: with a lock held and 2 of 3 masters
// down, INFO keyspace must not read as an empty keyspace (the reply one
// Redis with no keys gives): DBSIZE answers NOQUORUM in the same state,
// and an outage is never answered as "none".
func TestInfoKeyspaceOutageIsNotEmpty(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if err := p.Client.SetNX(ctx, "held", "tok", 30*time.Second).Err(); err != nil {
		t.Fatalf("SET NX: %v", err)
	}
	empty := startRedis(t)
	none := newClient(t, empty.Addr, nil).Info(ctx, "keyspace").Val()
	c.kill(0)
	c.kill(1)
	if _, err := p.Client.DBSize(ctx).Result(); err == nil {
		t.Fatalf("DBSIZE with 2 of 3 masters down: nil error; want NOQUORUM")
	}
	got, err := p.Client.Info(ctx, "keyspace").Result()
	if err == nil && got == none {
		t.Errorf("INFO keyspace with a lock held and 2 of 3 masters down = %q, the reply of a Redis with no keys; want an error or a section that says the count is unknown", got)
	}
}
