package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Attacks on fencing tokens (issue 18): a token given to a later holder
// of a key must be strictly greater than every token given before, and
// never one of an earlier hold.

// The counters and the hold records live on the masters under
// quorum.CountersKey; issue 18: a client cannot forge, reset or delete
// them, every command on them is refused. Through the proxy, a client
// that writes a hold record "1 X" for a key makes the next FENCE of a
// hold by X return 1, below the tokens earlier holders got; a script that
// deletes the counters' fields resets every counter.
func TestAttackFenceReservedKeysRefusedThroughProxy(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	e := newEngine(t, engineConfig(), c.addrs...) // a second proxy's engine: FENCE
	ctx := t.Context()
	cl := newClient(t, p.Addr, nil)
	const key = "fence:forged"
	record := quorum.CountersKey + ":" + key

	// Three holders, each fenced: the counter is at 3.
	var last int64
	for _, tok := range []string{"C1", "C2", "C3"} {
		if err := cl.SetNX(ctx, key, tok, 10*time.Second).Err(); err != nil {
			t.Fatalf("%s acquire: %v", tok, err)
		}
		f, err := e.Fence(ctx, key, tok)
		if err != nil {
			t.Fatalf("%s fence: %v", tok, err)
		}
		last = f.Token
		if n, err := cl.Do(ctx, "DELIFEQ", key, tok).Int64(); n != 1 || err != nil {
			t.Fatalf("%s release = %d, %v", tok, n, err)
		}
	}

	// The attacker releases C3's hold record as if it were a lock, and
	// forges X's, then X takes the key.
	if err := cl.Do(ctx, "DELIFEQ", record, fmt.Sprintf("%d C3", last)).Err(); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("DELIFEQ %s through the proxy = %v; want it refused as reserved", record, err)
	}
	if err := cl.SetNX(ctx, record, "1 X", 10*time.Second).Err(); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Errorf("SET NX %s through the proxy = %v; want it refused as reserved", record, err)
	}
	if err := cl.SetNX(ctx, key, "X", 10*time.Second).Err(); err != nil {
		t.Fatalf("X acquire: %v", err)
	}
	f, err := e.Fence(ctx, key, "X")
	if err != nil {
		t.Fatalf("X fence: %v", err)
	}
	if f.Token <= last {
		t.Errorf("X's token %d is not above the last holder's %d (a forged hold record decided it)", f.Token, last)
	}

	// Every other way to the counters' hash and the records is refused.
	const delFields = `redis.call("HDEL", KEYS[1], ARGV[1]) redis.call("HDEL", KEYS[1], ARGV[2]) return 1`
	for _, cmd := range [][]any{
		{"GET", record},
		{"EVAL", delFields, 1, quorum.CountersKey, "seeded", "c"},
		{"EVAL", `return redis.call("GET", KEYS[1])`, 1, record},
		{"HGETALL", quorum.CountersKey},
		{"TYPE", quorum.CountersKey},
		{"EXISTS", quorum.CountersKey},
		{"PTTL", record},
	} {
		err := cl.Do(ctx, cmd...).Err()
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%v through the proxy = %v; want it refused as reserved", cmd[:2], err)
		}
	}
	for i := range c.direct {
		if n, _ := c.direct[i].HLen(ctx, quorum.CountersKey).Result(); n < 2 {
			t.Errorf("node %d: the counters' hash has %d fields; a client reset it", i, n)
		}
	}
}
