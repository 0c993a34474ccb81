package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// distlockRelease is the compare-and-delete script from the Redis
// distributed-locks page, byte for byte.
const distlockRelease = `if redis.call("get",KEYS[1]) == ARGV[1] then
    return redis.call("del",KEYS[1])
else
    return 0
end`

// SET NX PX grants, and the token is on every node with a TTL no longer
// than the one asked for.
func TestSetNXGrantsOnEveryNode(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok1", "NX", "PX", "5000").Result()
	if err != nil || got != "OK" {
		t.Fatalf("SET lock tok1 NX PX 5000 = %v, %v; want OK", got, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok1", 5*time.Second)
}

// A second SET NX on a held key gets nil, and the first token stays.
func TestSecondSetOnHeldKeyGetsNil(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	if err := p.Client.Do(t.Context(), "SET", "lock", "tok1", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("first SET: %v", err)
	}
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok2", "NX", "PX", "5000").Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("second SET lock tok2 NX PX 5000 = %v, %v; want nil", got, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok1", 5*time.Second)
}

// A holder that sends its SET again with the same token gets nil, as from
// a single Redis, and keeps its lock on every node.
func TestRepeatedSetBySameTokenKeepsLock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	if err := p.Client.Do(t.Context(), "SET", "lock", "tok1", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("first SET: %v", err)
	}
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok1", "NX", "PX", "5000").Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("repeated SET lock tok1 NX PX 5000 = %v, %v; want nil", got, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok1", 5*time.Second)
}

// SET's options work in any order and case, with EX, PX, EXAT and PXAT.
func TestSetOptionsInAnyOrderAndCase(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	now := time.Now()
	exat := strconv.FormatInt(now.Unix()+10, 10)
	pxat := strconv.FormatInt(now.UnixMilli()+5000, 10)
	tests := []struct {
		name   string
		args   []any // after SET key token
		maxTTL time.Duration
	}{
		{"lower-case ex before nx (go-redis)", []any{"ex", "5", "nx"}, 5 * time.Second},
		{"NX before PX (redis-cli)", []any{"NX", "PX", "5000"}, 5 * time.Second},
		{"PX before NX (redis-py)", []any{"PX", "5000", "NX"}, 5 * time.Second},
		{"mixed case", []any{"Nx", "pX", "5000"}, 5 * time.Second},
		{"EXAT", []any{"NX", "EXAT", exat}, 10 * time.Second},
		{"PXAT", []any{"pxat", pxat, "nx"}, 5 * time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "opt-" + strconv.Itoa(i)
			args := append([]any{"set", key, "tok"}, tt.args...)
			got, err := p.Client.Do(t.Context(), args...).Result()
			if err != nil || got != "OK" {
				t.Fatalf("%v = %v, %v; want OK", args, got, err)
			}
			c.wantHeldEverywhere(t, key, "tok", tt.maxTTL)
		})
	}
}

// Every refused SET form gets an error reply, takes nothing on any node,
// and leaves the connection usable.
func TestRefusedSetFormsKeepConnectionUsable(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := engineConfig()
	qcfg.MinTTL, qcfg.MaxTTL = 100*time.Millisecond, time.Minute
	p := startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, qcfg, c.addrs...)
	conn := p.Client.Conn()
	t.Cleanup(func() { conn.Close() })
	past := strconv.FormatInt(time.Now().Unix()-10, 10)
	tests := []struct {
		name string
		args []any // after SET key token
	}{
		{"without NX", []any{"PX", "5000"}},
		{"no options", nil},
		{"XX", []any{"XX", "PX", "5000"}},
		{"NX XX", []any{"NX", "XX", "PX", "5000"}},
		{"GET", []any{"NX", "GET", "PX", "5000"}},
		{"KEEPTTL", []any{"NX", "KEEPTTL"}},
		{"no expiry", []any{"NX"}},
		{"PX 0", []any{"NX", "PX", "0"}},
		{"EX 0", []any{"NX", "EX", "0"}},
		{"negative PX", []any{"NX", "PX", "-5000"}},
		{"non-numeric PX", []any{"NX", "PX", "soon"}},
		{"fractional EX", []any{"NX", "EX", "1.5"}},
		{"PX beyond int64", []any{"NX", "PX", "99999999999999999999"}},
		{"EX overflowing milliseconds", []any{"NX", "EX", "9223372036854775807"}},
		{"PX max int64", []any{"NX", "PX", "9223372036854775807"}},
		{"EXAT in the past", []any{"NX", "EXAT", past}},
		{"under min_ttl", []any{"NX", "PX", "99"}},
		{"over max_ttl", []any{"NX", "PX", "60001"}},
		{"over max_ttl in seconds", []any{"NX", "EX", "61"}},
		{"two expiries", []any{"NX", "PX", "5000", "EX", "5"}},
		{"PX without a value", []any{"NX", "PX"}},
		{"unknown option", []any{"NX", "PX", "5000", "SOON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]any{"SET", "refused", "tok"}, tt.args...)
			got, err := conn.Do(t.Context(), args...).Result()
			if err == nil || errors.Is(err, redis.Nil) {
				t.Fatalf("%v = %v, %v; want an error reply", args, got, err)
			}
			var rerr redis.Error
			if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), "ERR ") {
				t.Errorf("%v = %v; want an ERR reply", args, err)
			}
			if pong, err := conn.Ping(t.Context()).Result(); err != nil || pong != "PONG" {
				t.Fatalf("PING after %v = %v, %v; want PONG on the same connection", args, pong, err)
			}
			c.wantFreeEverywhere(t, "refused")
		})
	}
}

// With default_ttl set, SET NX without an expiry grants with that TTL.
func TestSetWithoutExpiryUsesDefaultTTL(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{DefaultTTL: 2 * time.Second})
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX").Result()
	if err != nil || got != "OK" {
		t.Fatalf("SET lock tok NX with default_ttl 2s = %v, %v; want OK", got, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok", 2*time.Second)
}

// With 2 of 5 nodes killed, SET still grants on the 3 that are up.
func TestSetGrantsWithTwoOfFiveNodesDown(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(0)
	c.kill(3)
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX", "PX", "5000").Result()
	if err != nil || got != "OK" {
		t.Fatalf("SET with 3 of 5 nodes up = %v, %v; want OK", got, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok", 5*time.Second)
	if tok, err := p.Client.Get(t.Context(), "lock").Result(); err != nil || tok != "tok" {
		t.Errorf("GET with 3 of 5 nodes up = %q, %v; want tok", tok, err)
	}
}

// With 3 of 5 nodes killed, SET replies an error starting with NOQUORUM,
// never nil, and no node keeps the token.
func TestSetWithThreeOfFiveNodesDownRepliesNoQuorum(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(1)
	c.kill(2)
	c.kill(4)
	got, err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX", "PX", "5000").Result()
	if !strings.HasPrefix(errText(err), "NOQUORUM") {
		t.Fatalf("SET with 2 of 5 nodes up = %v, %q; want an error starting with NOQUORUM", got, errText(err))
	}
	c.wantFreeEverywhere(t, "lock")
	if got, err := p.Client.Get(t.Context(), "lock").Result(); !strings.HasPrefix(errText(err), "NOQUORUM") {
		t.Errorf("GET with 2 of 5 nodes up = %q, %q; want an error starting with NOQUORUM", got, errText(err))
	}
}

// With 2 of 5 masters cut and the key held by another token on 2 of the 3
// left, a SET gets 1 grant, 2 denials and 2 failures: not decided, since
// the 2 failed could have granted. The reply counts each kind and says
// how many were needed, instead of "3 of 5 nodes answered, 3 needed",
// which read as a contradiction.
func TestNoQuorumCountsGrantedDeniedFailed(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	for _, i := range []int{1, 2} {
		if err := c.direct[i].Set(t.Context(), "lock", "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	c.kill(3)
	c.kill(4)
	err := p.Client.SetNX(t.Context(), "lock", "tok", 5*time.Second).Err()
	if want := "NOQUORUM 1 granted, 2 denied, 2 failed of 5 nodes; 3 needed"; errText(err) != want {
		t.Errorf("contended SET NX with 2 of 5 masters down = %q; want %q", errText(err), want)
	}
	if v, ok := c.value(t, 0, "lock"); ok {
		t.Errorf("node 0 holds %q after the failed acquire; want it released", v)
	}
}

// A frozen node (SIGSTOP) costs about node_timeout and no more: the bound
// is against a multi-second hang, not a benchmark.
func TestFrozenNodeCostsAboutNodeTimeout(t *testing.T) {
	const timeout, margin = 300 * time.Millisecond, 500 * time.Millisecond
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{}, quorum.Config{NodeTimeout: timeout}, c.addrs...)
	// One command first, so that the proxy has a connection to every node.
	if err := p.Client.Do(t.Context(), "SET", "warm", "tok", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("SET before the freeze: %v", err)
	}
	c.procs[2].Freeze(t)
	c.killed[2] = true // not to be asked directly while frozen
	for _, key := range []string{"lock1", "lock2"} {
		start := time.Now()
		got, err := p.Client.Do(t.Context(), "SET", key, "tok", "NX", "PX", "5000").Result()
		elapsed := time.Since(start)
		if err != nil || got != "OK" {
			t.Fatalf("SET %s with node 2 frozen = %v, %v; want OK", key, got, err)
		}
		if elapsed < timeout || elapsed >= timeout+margin {
			t.Errorf("SET %s with node 2 frozen took %v; want in [%v, %v)", key, elapsed, timeout, timeout+margin)
		}
		c.wantHeldEverywhere(t, key, "tok", 5*time.Second)
	}
	start := time.Now()
	tok, err := p.Client.Get(t.Context(), "lock1").Result()
	if elapsed := time.Since(start); err != nil || tok != "tok" || elapsed >= timeout+margin {
		t.Errorf("GET lock1 with node 2 frozen = %q, %v after %v; want tok within %v", tok, err, elapsed, timeout+margin)
	}
}

// A crashed node (its port refuses connections) fails fast: each command
// costs far less than node_timeout, as Redlock asks ("if an instance is
// not available, we should try to talk with the next instance ASAP").
func TestCrashedNodeFailsFast(t *testing.T) {
	const timeout, bound = time.Second, 250 * time.Millisecond
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{}, quorum.Config{NodeTimeout: timeout}, c.addrs...)
	c.kill(1)
	for _, key := range []string{"lock1", "lock2", "lock3"} {
		start := time.Now()
		got, err := p.Client.Do(t.Context(), "SET", key, "tok", "NX", "PX", "5000").Result()
		elapsed := time.Since(start)
		if err != nil || got != "OK" {
			t.Fatalf("SET %s with node 1 crashed = %v, %v; want OK", key, got, err)
		}
		if elapsed >= bound {
			t.Errorf("SET %s with node 1 crashed took %v; want under %v (node_timeout is %v)", key, elapsed, bound, timeout)
		}
		c.wantHeldEverywhere(t, key, "tok", 5*time.Second)
	}
}

// GET returns the token a quorum holds, and nil for a free key or one a
// minority holds.
func TestGetReturnsQuorumToken(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	if err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := p.Client.Get(t.Context(), "lock").Result(); err != nil || got != "tok" {
		t.Errorf("GET lock = %q, %v; want tok", got, err)
	}
	if got, err := p.Client.Get(t.Context(), "free").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET free = %q, %v; want nil", got, err)
	}
	if err := c.direct[0].Set(t.Context(), "minority", "tok", 5*time.Second).Err(); err != nil {
		t.Fatalf("node 0 SET: %v", err)
	}
	if got, err := p.Client.Get(t.Context(), "minority").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of a key 1 of 3 nodes hold = %q, %v; want nil", got, err)
	}
}

// PTTL and TTL are conservative: positive and no more than asked; a free
// key gives -2.
func TestPTTLAndTTLAreConservative(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if err := p.Client.Do(ctx, "SET", "lock", "tok", "NX", "EX", "10").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if ms, err := p.Client.Do(ctx, "PTTL", "lock").Int64(); err != nil || ms <= 0 || ms > 10000 {
		t.Errorf("PTTL lock = %d, %v; want in (0, 10000]", ms, err)
	}
	if s, err := p.Client.Do(ctx, "TTL", "lock").Int64(); err != nil || s <= 0 || s > 10 {
		t.Errorf("TTL lock = %d, %v; want in (0, 10]", s, err)
	}
	if ms, err := p.Client.Do(ctx, "PTTL", "free").Int64(); err != nil || ms != -2 {
		t.Errorf("PTTL free = %d, %v; want -2", ms, err)
	}
	if s, err := p.Client.Do(ctx, "TTL", "free").Int64(); err != nil || s != -2 {
		t.Errorf("TTL free = %d, %v; want -2", s, err)
	}
}

// EXISTS counts the keys a quorum holds.
func TestExistsCountsHeldKeys(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	for _, key := range []string{"a", "b"} {
		if err := p.Client.Do(t.Context(), "SET", key, "tok", "NX", "PX", "5000").Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
	}
	if n, err := p.Client.Exists(t.Context(), "a", "b", "free").Result(); err != nil || n != 2 {
		t.Errorf("EXISTS a b free = %d, %v; want 2", n, err)
	}
	if n, err := p.Client.Exists(t.Context(), "free").Result(); err != nil || n != 0 {
		t.Errorf("EXISTS free = %d, %v; want 0", n, err)
	}
}

// DEL is refused, and the lock stays, unless allow_force_del is set; then
// it deletes the key on every node.
func TestDelRefusedUnlessAllowForceDel(t *testing.T) {
	t.Run("refused by default", func(t *testing.T) {
		c, p := setup(t, 3, proxy.Config{})
		if err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if n, err := p.Client.Del(t.Context(), "lock").Result(); err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("DEL lock = %d, %v; want an error reply", n, err)
		}
		c.wantHeldEverywhere(t, "lock", "tok", 5*time.Second)
	})
	t.Run("allow_force_del", func(t *testing.T) {
		c, p := setup(t, 3, proxy.Config{AllowForceDel: true})
		if err := p.Client.Do(t.Context(), "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if n, err := p.Client.Del(t.Context(), "lock").Result(); err != nil || n != 1 {
			t.Errorf("DEL lock = %d, %v; want 1", n, err)
		}
		c.wantFreeEverywhere(t, "lock")
	})
}

// A failed acquire (the key is held on 2 of 3 nodes by someone else)
// replies nil and leaves the caller's token on no node.
func TestFailedAcquireLeavesNoToken(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	for _, i := range []int{0, 1} {
		if err := c.direct[i].Set(t.Context(), "lock", "other", 10*time.Second).Err(); err != nil {
			t.Fatalf("node %d SET: %v", i, err)
		}
	}
	got, err := p.Client.Do(t.Context(), "SET", "lock", "mine", "NX", "PX", "5000").Result()
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("SET of a key 2 of 3 nodes hold = %v, %v; want nil", got, err)
	}
	if idx := c.holding(t, "lock", "mine"); len(idx) != 0 {
		t.Errorf("nodes %v hold the failed acquire's token; want none", idx)
	}
	if idx := c.holding(t, "lock", "other"); len(idx) != 2 {
		t.Errorf("nodes %v hold the other token; want [0 1]", idx)
	}
}

// The distlock release script returns 1 for the holder's token, and 0
// for a wrong token or a free key.
func TestReleaseScript(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if err := p.Client.Do(ctx, "SET", "lock", "tok", "NX", "PX", "5000").Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := p.Client.Eval(ctx, distlockRelease, []string{"lock"}, "wrong").Int64(); err != nil || n != 0 {
		t.Errorf("release with a wrong token = %d, %v; want 0", n, err)
	}
	c.wantHeldEverywhere(t, "lock", "tok", 5*time.Second)
	if n, err := p.Client.Eval(ctx, distlockRelease, []string{"lock"}, "tok").Int64(); err != nil || n != 1 {
		t.Errorf("release = %d, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "lock")
	if n, err := p.Client.Eval(ctx, distlockRelease, []string{"lock"}, "tok").Int64(); err != nil || n != 0 {
		t.Errorf("second release = %d, %v; want 0", n, err)
	}
	// The lock is free again.
	if got, err := p.Client.Do(ctx, "SET", "lock", "tok2", "NX", "PX", "5000").Result(); err != nil || got != "OK" {
		t.Errorf("SET after release = %v, %v; want OK", got, err)
	}
}

// A release when only a minority of nodes hold the token returns 0.
func TestReleaseWithTokenOnMinorityReturnsZero(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	if err := c.direct[0].Set(t.Context(), "lock", "mine", 5*time.Second).Err(); err != nil {
		t.Fatalf("node 0 SET: %v", err)
	}
	if n, err := p.Client.Eval(t.Context(), distlockRelease, []string{"lock"}, "mine").Int64(); err != nil || n != 0 {
		t.Errorf("release with the token on 1 of 3 nodes = %d, %v; want 0", n, err)
	}
}
