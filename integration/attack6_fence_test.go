package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack6 A3. Every command naming an RFencedLock's token counter other
// than GET, INCR, INCRBY and the lock's own scripts is refused
// (guarantees.md), but any script served by its effect may name it: a
// lock script then takes a lock on a key of that name on the masters,
// where one Redis, whose counter is that key, answers as the key holds.
func TestAttack6ScriptOnAnRFencedLockTokenName(t *testing.T) {
	const key = "redisson_lock_token:{a6}"
	take := redis.NewScript("return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000)")
	run := func(t *testing.T, cl *redis.Client) (string, error) {
		ctx := t.Context()
		if err := cl.Incr(ctx, key).Err(); err != nil {
			t.Fatalf("INCR %s: %v", key, err)
		}
		return take.Run(ctx, cl, []string{key}, "tok").Text()
	}
	one, oneErr := run(t, direct(t, startRedis(t).Addr))
	_, p := setup(t, 3, proxy.Config{})
	got, err := run(t, p.Client)
	refused := errText(err) == "ERR '"+key+"' is an RFencedLock's token counter: only GET (getToken), INCR, INCRBY and the lock's scripts may name it"
	if !refused && (errText(err) != errText(oneErr) || got != one) {
		t.Errorf("a SET NX script on %s after INCR through the proxy = %q, %v; one Redis = %q, %v (or the counter refusal a plain SET gets)",
			key, got, err, one, oneErr)
	}
}

// attack6 A5. RFencedLock's lockAndGetToken script with a lease of 0 (or
// below): one Redis takes a token (INCR) and answers {-1, token}, the
// lock deleted at once by its PEXPIRE. The proxy runs RLock's script for
// the lock part, finds no hold, and answers that script's own reply, a
// nil, which the token script never returns.
func TestAttack6FencedTokenScriptWithLeaseZero(t *testing.T) {
	run := func(t *testing.T, cl *redis.Client) (any, error) {
		c := fencedLockClient{"fl0", "8c1f-0001:1"}
		return redis.NewScript(redissonFencedToken).Run(t.Context(), cl, c.keys(), 0, c.thread).Result()
	}
	one, oneErr := run(t, direct(t, startRedis(t).Addr))
	_, p := setup(t, 3, proxy.Config{})
	got, err := run(t, p.Client)
	a, ok := got.([]any)
	if !ok || len(a) != 2 || a[0] != int64(-1) {
		if err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("lockAndGetToken with lease 0 through the proxy = %v, %v; one Redis = %v, %v (or a refusal of the lease)", got, err, one, oneErr)
		}
	}
}

// attack6 A7. An admin's forced DEL (allow_force_del) deletes the lock
// key but leaves FENCE's hold record ("T token"), which lives on with the
// TTL the lock had. A client that takes the key again with the same token
// (one token per process, as some clients use; Redisson's uuid:threadId)
// gets the earlier hold's T again, deterministically: a DEL is the admin's
// way with a stuck holder, the paused holder fencing exists for, and its
// late writes carry the same T as the new hold's.
func TestAttack6ForcedDelLeavesTheHoldRecord(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{AllowForceDel: true})
	ctx := t.Context()
	if err := p.Client.SetNX(ctx, "fk", "host:1", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	t1, err := p.Client.Do(ctx, "FENCE", "fk", "host:1").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Client.Del(ctx, "fk").Err(); err != nil {
		t.Fatalf("forced DEL: %v", err)
	}
	if err := p.Client.SetNX(ctx, "fk", "host:1", 30*time.Second).Err(); err != nil {
		t.Fatalf("SET NX after the forced DEL: %v", err)
	}
	t2, err := p.Client.Do(ctx, "FENCE", "fk", "host:1").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if t2 <= t1 {
		t.Errorf("FENCE of a new hold after a forced DEL = %d; the hold before it got %d: want above", t2, t1)
	}
}
