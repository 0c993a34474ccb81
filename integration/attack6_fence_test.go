package integration

import (
	"testing"

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
