package integration

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// The compare-and-delete and compare-and-set commands of Redis 8.4
// (DELEX, DIGEST, SET ... IFEQ|IFNE|IFDEQ|IFDNE) and Valkey (SET ... IFEQ
// 8.1, DELIFEQ 9.0). No server here runs them (Debian's redis-server is
// 7.0), so the expected replies are the upstream test suites', cited by
// file and line: redis/redis tests/unit/type/string.tcl at unstable
// 84318433 (June 2026), valkey-io/valkey tests/unit/type/string.tcl and
// src/t_string.c (delifeqCommand). They are driven through go-redis
// v9.23's methods for them, as an application calls them; go-redis has
// none for DELIFEQ, which goes through Do.

// digestOf is token's digest as go-redis's Digest returns it.
func digestOf(t *testing.T, token string) uint64 {
	t.Helper()
	d, err := strconv.ParseUint(resp.Digest(token), 16, 64)
	if err != nil {
		t.Fatalf("parse digest: %v", err)
	}
	return d
}

// holdHash makes key a hash on every node, as a Redisson lock is.
func holdHash(t *testing.T, c *cluster, key string) {
	t.Helper()
	for _, a := range c.addrs {
		if err := direct(t, a).HSet(t.Context(), key, "owner", "1").Err(); err != nil {
			t.Fatalf("HSET on %s: %v", a, err)
		}
	}
}

// wantErrPrefix fails unless err is an error reply starting with prefix.
func wantErrPrefix(t *testing.T, what string, err error, prefix string) {
	t.Helper()
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(err.Error(), prefix) {
		t.Errorf("%s = %v; want an error reply %q...", what, err, prefix)
	}
}

// DELEX key IFEQ token releases the caller's lock on every node and
// replies 1; a wrong token, or a missing key, replies 0 and leaves the
// key as it was (string.tcl:1060-1069, 1108-1114).
func TestDelExIfEqReleasesOwnLock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	if ok, err := p.Client.SetNX(ctx, "k", "tok", 10*time.Second).Result(); !ok || err != nil {
		t.Fatalf("SetNX = %v, %v; want true", ok, err)
	}
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFEQ", MatchValue: "other"}).Result(); n != 0 || err != nil {
		t.Errorf("DELEX k IFEQ other = %v, %v; want 0", n, err)
	}
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFEQ", MatchValue: "tok"}).Result(); n != 1 || err != nil {
		t.Errorf("DELEX k IFEQ tok = %v, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "k")
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "ifeq", MatchValue: "tok"}).Result(); n != 0 || err != nil {
		t.Errorf("DELEX of a missing key = %v, %v; want 0", n, err)
	}
}

// DELIFEQ key token (Valkey 9.0) is the same release: 1, or 0 for a
// wrong token or a missing key (valkey src/commands/delifeq.json; its
// delifeqCommand replies czero for both).
func TestDelIfEqReleasesOwnLock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	if n, err := p.Client.Do(ctx, "DELIFEQ", "k", "other").Int64(); n != 0 || err != nil {
		t.Errorf("DELIFEQ k other = %v, %v; want 0", n, err)
	}
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)
	if n, err := p.Client.Do(ctx, "DELIFEQ", "k", "tok").Int64(); n != 1 || err != nil {
		t.Errorf("DELIFEQ k tok = %v, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "k")
	if n, err := p.Client.Do(ctx, "DELIFEQ", "k", "tok").Int64(); n != 0 || err != nil {
		t.Errorf("DELIFEQ of a missing key = %v, %v; want 0", n, err)
	}
}

// DIGEST replies the XXH3 digest of the token a quorum holds, nil for a
// missing key, WRONGTYPE for a hash (string.tcl:927-1047); DELEX IFDEQ
// with that digest releases the lock, with another it does not
// (string.tcl:1082-1106, 1629-1655).
func TestDigestAndDelExIfDEq(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	want := digestOf(t, "tok")
	if d, err := p.Client.Digest(ctx, "k").Result(); d != want || err != nil {
		t.Errorf("DIGEST k = %x, %v; want %x", d, err, want)
	}
	if _, err := p.Client.Digest(ctx, "missing").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("DIGEST of a missing key = %v; want nil", err)
	}
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFDEQ", MatchDigest: want + 1}).Result(); n != 0 || err != nil {
		t.Errorf("DELEX k IFDEQ <another digest> = %v, %v; want 0", n, err)
	}
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFDEQ", MatchDigest: want}).Result(); n != 1 || err != nil {
		t.Errorf("DELEX k IFDEQ <its digest> = %v, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "k")
	holdHash(t, c, "h")
	_, err := p.Client.Digest(ctx, "h").Result()
	wantErrPrefix(t, "DIGEST of a hash", err, "WRONGTYPE ")
}

// SET key token IFEQ token PX ms extends the caller's lock: OK, and the
// new TTL on every node; another token, or a missing key, gets nil and
// changes nothing (string.tcl:1280-1296, 1436-1441). With GET it replies
// the old value: the token (string.tcl:1358-1362), another holder's
// token, or nil for a missing key (1364-1374). IFDEQ with the
// token's digest is the same extend (string.tcl:1316-1321).
func TestSetIfEqExtendsOwnLock(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 2*time.Second)
	if got, err := p.Client.SetIFEQ(ctx, "k", "tok", "tok", 20*time.Second).Result(); got != "OK" || err != nil {
		t.Fatalf("SET k tok PX 20000 IFEQ tok = %q, %v; want OK", got, err)
	}
	for _, i := range c.live() {
		if ms, _ := direct(t, c.addrs[i]).PTTL(ctx, "k").Result(); ms < 10*time.Second {
			t.Errorf("node %d: PTTL after the extend = %v; want near 20s", i, ms)
		}
	}
	if _, err := p.Client.SetIFEQ(ctx, "k", "other", "other", 20*time.Second).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("SET IFEQ with another token = %v; want nil", err)
	}
	if _, err := p.Client.SetIFEQ(ctx, "missing", "tok", "tok", 20*time.Second).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("SET IFEQ of a missing key = %v; want nil", err)
	}
	c.wantFreeEverywhere(t, "missing")
	if old, err := p.Client.SetIFEQGet(ctx, "k", "tok", "tok", 30*time.Second).Result(); old != "tok" || err != nil {
		t.Errorf("SET IFEQ GET = %q, %v; want the old value tok", old, err)
	}
	if _, err := p.Client.SetIFEQGet(ctx, "missing", "tok", "tok", 30*time.Second).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("SET IFEQ GET of a missing key = %v; want nil", err)
	}
	// Another holder's lock: GET replies its token, the old value, and
	// nothing changes (string.tcl:1364-1368).
	p.Client.SetNX(ctx, "k2", "other", 10*time.Second)
	if old, err := p.Client.SetIFEQGet(ctx, "k2", "tok", "tok", 30*time.Second).Result(); old != "other" || err != nil {
		t.Errorf("SET IFEQ GET of another's lock = %q, %v; want its token, other", old, err)
	}
	c.wantHeldEverywhere(t, "k2", "other", 10*time.Second)
	if got, err := p.Client.SetIFDEQ(ctx, "k", "tok", digestOf(t, "tok"), 40*time.Second).Result(); got != "OK" || err != nil {
		t.Errorf("SET k tok IFDEQ <digest of tok> = %q, %v; want OK", got, err)
	}
	c.wantHeldEverywhere(t, "k", "tok", 40*time.Second)
}

// The conditions that would delete or overwrite a lock held under
// another token, or give a lock a new token, are refused with an error,
// and the lock stays as it was.
func TestCompareAndSetRefusesOtherHoldersLocks(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	refused := map[string]error{
		"DELEX IFNE":          p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFNE", MatchValue: "other"}).Err(),
		"DELEX IFDNE":         p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFDNE", MatchDigest: 1}).Err(),
		"SET IFNE":            p.Client.SetIFNE(ctx, "k", "mine", "other", 10*time.Second).Err(),
		"SET IFDNE":           p.Client.SetIFDNE(ctx, "k", "mine", 1, 10*time.Second).Err(),
		"SET IFEQ a new one":  p.Client.SetIFEQ(ctx, "k", "new", "tok", 10*time.Second).Err(),
		"SET IFDEQ a new one": p.Client.SetIFDEQ(ctx, "k", "new", digestOf(t, "tok"), 10*time.Second).Err(),
	}
	for what, err := range refused {
		wantErrPrefix(t, what, err, "ERR ")
	}
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)
}

// Bad arguments and wrong types get Redis 8.4's and Valkey's errors, in
// their order, and the connection stays usable.
func TestCompareAndDeleteErrors(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	holdHash(t, c, "h")
	conn := p.Client.Conn()
	t.Cleanup(func() { conn.Close() })
	errs := []struct {
		name   string
		args   []any
		prefix string
	}{
		// string.tcl:1190-1197.
		{"DELEX without a value", []any{"DELEX", "k", "IFEQ"}, "ERR wrong number of arguments for 'delex' command"},
		{"DELEX with one more", []any{"DELEX", "k", "IFEQ", "tok", "extra"}, "ERR wrong number of arguments for 'delex' command"},
		// string.tcl:1199-1204.
		{"DELEX INVALID", []any{"DELEX", "k", "INVALID", "tok"}, "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE"},
		// string.tcl:1604-1627.
		{"DELEX IFDEQ short", []any{"DELEX", "k", "IFDEQ", "123456789abcdef"}, "ERR must be exactly 16 hexadecimal characters"},
		{"SET IFDEQ empty", []any{"SET", "k", "tok", "PX", "5000", "IFDEQ", ""}, "ERR must be exactly 16 hexadecimal characters"},
		// string.tcl:1172-1188, and SET IFEQ: 1466-1470.
		{"DELEX of a hash", []any{"DELEX", "h", "IFEQ", "1"}, "ERR Key should be of string type if conditions are specified"},
		{"DELEX IFDEQ of a hash", []any{"DELEX", "h", "IFDEQ", "0123456789abcdef"}, "ERR Key should be of string type if conditions are specified"},
		{"SET IFEQ of a hash", []any{"SET", "h", "t", "IFEQ", "t", "PX", "5000"}, "WRONGTYPE "},
		// valkey delifeqCommand: checkType.
		{"DELIFEQ of a hash", []any{"DELIFEQ", "h", "1"}, "WRONGTYPE "},
		{"DIGEST with two keys", []any{"DIGEST", "k", "k2"}, "ERR wrong number of arguments for 'digest' command"},
		// valkey "SET with IFEQ conditional - with xx / - with nx".
		{"SET IFEQ with NX", []any{"SET", "k", "tok", "IFEQ", "tok", "NX"}, "ERR syntax error"},
	}
	for _, tt := range errs {
		_, err := conn.Do(ctx, tt.args...).Result()
		wantErrPrefix(t, tt.name, err, tt.prefix)
		if pong, err := conn.Ping(ctx).Result(); err != nil || pong != "PONG" {
			t.Fatalf("PING after %s = %v, %v; want PONG", tt.name, pong, err)
		}
	}
	// Redis looks at the key before the condition: a missing key is 0
	// (string.tcl:1108-1114), whatever follows.
	for _, args := range [][]any{{"DELEX", "missing", "INVALID", "x"}, {"DELEX", "missing", "IFDEQ", "12"}} {
		if n, err := conn.Do(ctx, args...).Int64(); n != 0 || err != nil {
			t.Errorf("%v = %v, %v; want 0", args, n, err)
		}
	}
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)
}

// DELEX key without a condition is DEL key, under DEL's rules: refused
// unless allow_force_del.
func TestDelExWithoutConditionIsDel(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	wantErrPrefix(t, "DELEX k", p.Client.DelExArgs(ctx, "k", redis.DelExArgs{}).Err(), "ERR DEL is refused")
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)

	c, p = setup(t, 3, proxy.Config{AllowForceDel: true})
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{}).Result(); n != 1 || err != nil {
		t.Errorf("DELEX k with allow_force_del = %v, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, "k")
}

// With too few nodes up, a release or extend is an error that counts the
// nodes, never the 0 or nil of "not yours".
func TestCompareAndSetWithoutQuorumIsAnError(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	c.kill(0)
	c.kill(1)
	wantErrPrefix(t, "DELEX IFEQ", p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFEQ", MatchValue: "tok"}).Err(), "NOQUORUM ")
	wantErrPrefix(t, "DELIFEQ", p.Client.Do(ctx, "DELIFEQ", "k", "tok").Err(), "NOQUORUM ")
	wantErrPrefix(t, "SET IFEQ", p.Client.SetIFEQ(ctx, "k", "tok", "tok", 10*time.Second).Err(), "NOQUORUM ")
	wantErrPrefix(t, "DIGEST", p.Client.Digest(ctx, "k").Err(), "NOQUORUM ")
}

// DIGEST is the read class's, the compare-and-deletes and SET IFEQ the
// lock class's, and DELEX without a condition, a DEL, the admin class's;
// a user's key patterns apply to each.
func TestCompareAndSetUserClasses(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{AllowForceDel: true, Users: []acl.UserConfig{
		{Name: "app", Password: "app-pw", Allow: []string{"lock", "read"}, Keys: []string{"lock:*"}},
		{Name: "reader", Password: "reader-pw", Allow: []string{"read"}},
	}})
	ctx := t.Context()
	app := newClient(t, p.Addr, func(o *redis.Options) { o.Username, o.Password = "app", "app-pw" })
	reader := newClient(t, p.Addr, func(o *redis.Options) { o.Username, o.Password = "reader", "reader-pw" })
	if ok, err := app.SetNX(ctx, "lock:1", "tok", 10*time.Second).Result(); !ok || err != nil {
		t.Fatalf("app's SetNX = %v, %v", ok, err)
	}
	if d, err := reader.Digest(ctx, "lock:1").Result(); d != digestOf(t, "tok") || err != nil {
		t.Errorf("reader's DIGEST = %x, %v; want the token's digest", d, err)
	}
	for what, err := range map[string]error{
		"reader's DELIFEQ":              reader.Do(ctx, "DELIFEQ", "lock:1", "tok").Err(),
		"reader's DELEX IFEQ":           reader.DelExArgs(ctx, "lock:1", redis.DelExArgs{Mode: "IFEQ", MatchValue: "tok"}).Err(),
		"reader's SET IFEQ":             reader.SetIFEQ(ctx, "lock:1", "tok", "tok", 10*time.Second).Err(),
		"app's DELEX of another key":    app.DelExArgs(ctx, "other", redis.DelExArgs{Mode: "IFEQ", MatchValue: "tok"}).Err(),
		"app's DELEX without condition": app.DelExArgs(ctx, "lock:1", redis.DelExArgs{}).Err(),
	} {
		wantErrPrefix(t, what, err, "NOPERM ")
	}
	c.wantHeldEverywhere(t, "lock:1", "tok", 10*time.Second)
	if n, err := app.Do(ctx, "DELIFEQ", "lock:1", "tok").Int64(); n != 1 || err != nil {
		t.Errorf("app's DELIFEQ = %v, %v; want 1", n, err)
	}
}

// SET IFEQ without an expiry would take the lock's TTL away on one Redis;
// here it is refused, or extends by default_ttl when that is set.
func TestSetIfEqWithoutExpiry(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	wantErrPrefix(t, "SET k tok IFEQ tok", p.Client.SetIFEQ(ctx, "k", "tok", "tok", 0).Err(), "ERR a lock needs a TTL")
	c.wantHeldEverywhere(t, "k", "tok", 10*time.Second)

	c, p = setup(t, 3, proxy.Config{DefaultTTL: 30 * time.Second})
	p.Client.SetNX(ctx, "k", "tok", 2*time.Second)
	if got, err := p.Client.SetIFEQ(ctx, "k", "tok", "tok", 0).Result(); got != "OK" || err != nil {
		t.Fatalf("SET k tok IFEQ tok with default_ttl = %q, %v; want OK", got, err)
	}
	for _, i := range c.live() {
		if ms, _ := direct(t, c.addrs[i]).PTTL(ctx, "k").Result(); ms < 20*time.Second {
			t.Errorf("node %d: PTTL after the extend = %v; want near default_ttl, 30s", i, ms)
		}
	}
}

// While the proxy drains, new locks are refused but holders still extend
// and release with the compare-and-set commands, as with the scripts.
func TestCompareAndSetServedWhileDraining(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	p.Client.SetNX(ctx, "k", "tok", 10*time.Second)
	p.Server.Drain()
	wantErrPrefix(t, "SET NX while draining", p.Client.SetNX(ctx, "k2", "tok", 10*time.Second).Err(), "DRAINING ")
	if got, err := p.Client.SetIFEQ(ctx, "k", "tok", "tok", 20*time.Second).Result(); got != "OK" || err != nil {
		t.Errorf("SET IFEQ while draining = %q, %v; want OK", got, err)
	}
	if n, err := p.Client.DelExArgs(ctx, "k", redis.DelExArgs{Mode: "IFEQ", MatchValue: "tok"}).Result(); n != 1 || err != nil {
		t.Errorf("DELEX IFEQ while draining = %v, %v; want 1", n, err)
	}
}
