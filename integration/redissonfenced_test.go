package integration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// RFencedLock's acquire scripts, byte for byte as Java's string
// concatenation builds them at redisson/redisson commit
// 66863978b4a92093b97c1f8c96f182a77e81d50e (2026-08-21), file
// redisson/src/main/java/org/redisson/RedissonFencedLock.java and lines.
// KEYS: the lock, "redisson_lock_token:{name}"; ARGV: lease ms,
// "<uuid>:<threadId>". Unlock and renewal are RLock's.
const (
	// :107-117, tryLockInnerAsync(leaseTime, unit, threadId), behind
	// lockAndGetToken and tryLockAndGetToken: {-1, token} or {pttl, -1}.
	redissonFencedToken = "if (redis.call('exists', KEYS[1]) == 0 or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then local token = redis.call('incr', KEYS[2]);redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return {-1, token}; end; return {redis.call('pttl', KEYS[1]), -1};"
	// :297-307, the RLock override behind lock() and tryLock(): nil or
	// the PTTL; the token is then read by getToken(), a GET.
	redissonFencedLock = "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('incr', KEYS[2]);redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"
)

// fencedLockClient is one Redisson thread's view of an RFencedLock.
type fencedLockClient struct {
	name, thread string
}

func (c fencedLockClient) keys() []string {
	return []string{c.name, "redisson_lock_token:{" + c.name + "}"}
}

// lockAndGetToken runs the token script and returns its reply as sent.
func (c fencedLockClient) lockAndGetToken(t *testing.T, cl *redis.Client) ([]any, error) {
	t.Helper()
	v, err := redis.NewScript(redissonFencedToken).Run(t.Context(), cl, c.keys(), 30000, c.thread).Result()
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("lockAndGetToken by %s replied %T %v; want an array", c.thread, v, v)
	}
	return a, nil
}

// mustToken takes the lock with the token script and returns the token.
func (c fencedLockClient) mustToken(t *testing.T, cl *redis.Client) int64 {
	t.Helper()
	a, err := c.lockAndGetToken(t, cl)
	if err != nil || len(a) != 2 || a[0] != int64(-1) {
		t.Fatalf("lockAndGetToken by %s = %v, %v; want [-1 token]", c.thread, a, err)
	}
	tok, ok := a[1].(int64)
	if !ok || tok <= 0 {
		t.Fatalf("lockAndGetToken by %s: token %T %v; want a positive integer", c.thread, a[1], a[1])
	}
	return tok
}

// lock runs the lock() script: nil when taken, else the PTTL.
func (c fencedLockClient) lock(t *testing.T, cl *redis.Client) (int64, error) {
	t.Helper()
	return redis.NewScript(redissonFencedLock).Run(t.Context(), cl, c.keys(), 30000, c.thread).Int64()
}

// getToken is RFencedLock.getToken(): a GET of the token key.
func (c fencedLockClient) getToken(t *testing.T, cl *redis.Client) int64 {
	t.Helper()
	s, err := cl.Get(t.Context(), c.keys()[1]).Result()
	if err != nil {
		t.Fatalf("getToken: %v", err)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("getToken = %q: %v", s, err)
	}
	return v
}

// unlock is RLock's unlock (RFencedLock inherits it): 0 while re-entered,
// 1 when released.
func (c fencedLockClient) unlock(t *testing.T, cl *redis.Client, request string) int64 {
	t.Helper()
	keys := []string{c.name, "redisson_lock__channel:{" + c.name + "}", "redisson_unlock_latch:{" + c.name + "}:" + request}
	v, err := redis.NewScript(redissonUnlock).Run(t.Context(), cl, keys, 0, 30000, c.thread, "PUBLISH", 3000).Int64()
	if err != nil {
		t.Fatalf("unlock by %s: %v", c.thread, err)
	}
	return v
}

// TestRedissonFencedLockSideBySide replays RFencedLock beside one Redis
// and through the proxy, all up and with 2 of 5 masters killed after the
// first hold: each acquisition (a re-entry too, and a thread taking the
// lock again) gets a token above every earlier one, in the replies'
// own types; a contender gets the PTTL; getToken reads the latest.
func TestRedissonFencedLockSideBySide(t *testing.T) {
	run := func(t *testing.T, cl *redis.Client, kill func()) {
		a, b := fencedLockClient{"fl", "8c1f-0001:1"}, fencedLockClient{"fl", "8c1f-0002:7"}
		last := int64(0)
		above := func(what string, tok int64) {
			t.Helper()
			if tok <= last {
				t.Errorf("%s: token %d; want above %d", what, tok, last)
			}
			last = tok
		}
		above("A's lockAndGetToken", a.mustToken(t, cl))
		if got := a.getToken(t, cl); got != last {
			t.Errorf("getToken = %d; want %d", got, last)
		}
		above("A's re-entry", a.mustToken(t, cl))
		if r, err := b.lockAndGetToken(t, cl); err != nil || len(r) != 2 || r[1] != int64(-1) || r[0].(int64) <= 0 || r[0].(int64) > 30000 {
			t.Errorf("B's lockAndGetToken while A holds = %v, %v; want [PTTL -1]", r, err)
		}
		if ms, err := b.lock(t, cl); err != nil || ms <= 0 || ms > 30000 {
			t.Errorf("B's lock while A holds = %d, %v; want the PTTL", ms, err)
		}
		if a.unlock(t, cl, "r1") != 0 || a.unlock(t, cl, "r2") != 1 {
			t.Errorf("A's unlocks: want 0 then 1")
		}
		if kill != nil {
			kill()
		}
		if ms, err := b.lock(t, cl); !errors.Is(err, redis.Nil) {
			t.Fatalf("B's lock = %d, %v; want nil (taken)", ms, err)
		}
		above("B's getToken after lock()", b.getToken(t, cl))
		if b.unlock(t, cl, "r3") != 1 {
			t.Errorf("B's unlock: want 1")
		}
		above("A taking the lock again (the same thread name)", a.mustToken(t, cl))
		if a.unlock(t, cl, "r4") != 1 {
			t.Errorf("A's unlock: want 1")
		}
	}
	t.Run("one redis", func(t *testing.T) {
		run(t, direct(t, startRedis(t).Addr), nil)
	})
	for _, down := range []int{0, 2} {
		t.Run(fmt.Sprintf("proxy, %d of 5 down", down), func(t *testing.T) {
			c, p := setup(t, 5, proxy.Config{})
			run(t, p.Client, func() {
				for i := range down {
					c.kill(i)
				}
			})
			ctx := t.Context()
			fl := fencedLockClient{"fl", "8c1f-0001:1"}
			other := []string{"fl", "redisson_lock_token:{other}"}
			if err := redis.NewScript(redissonFencedToken).Run(ctx, p.Client, other, 30000, fl.thread).Err(); errText(err) != "ERR Redisson's RFencedLock lock is served only as Redisson calls it: 2 keys (the lock, redisson_lock_token:{name}) and 2 arguments (lease, name)" {
				t.Errorf("the token script naming another lock's counter: %v; want the layout refusal", err)
			}
			if err := p.Client.Del(ctx, fl.keys()[1]).Err(); errText(err) != "ERR 'redisson_lock_token:{fl}' is an RFencedLock's token counter: only GET (getToken), INCR, INCRBY and the lock's scripts may name it" {
				t.Errorf("DEL of the token counter: %v; want the counter refusal", err)
			}
			for _, i := range c.live() {
				if n := c.direct[i].Exists(ctx, fl.keys()[1]).Val(); n != 0 {
					t.Errorf("master %d has a key %s: the token is one master's INCR", i, fl.keys()[1])
				}
			}
		})
	}
}

// TestRedissonFencedLockThroughTwoProxies: threads of two clients take
// turns through two proxies over the same masters, by lockAndGetToken
// and by lock() then getToken(); the tokens keep increasing.
func TestRedissonFencedLockThroughTwoProxies(t *testing.T) {
	c := startNodes(t, 5)
	cfg := proxy.Config{CommandTimeout: commandTimeout}
	ps := []*proxyProc{startProxy(t, cfg, engineConfig(), c.addrs...), startProxy(t, cfg, engineConfig(), c.addrs...)}
	last := int64(0)
	for n := range 6 {
		cl := ps[n%2].Client
		th := fencedLockClient{"fl2", fmt.Sprintf("8c1f-000%d:1", n%2+1)}
		var tok int64
		if n%3 == 2 {
			if ms, err := th.lock(t, cl); !errors.Is(err, redis.Nil) {
				t.Fatalf("hold %d: lock = %d, %v; want nil (taken)", n, ms, err)
			}
			tok = th.getToken(t, ps[(n+1)%2].Client)
		} else {
			tok = th.mustToken(t, cl)
		}
		if tok <= last {
			t.Errorf("hold %d (proxy %d) got token %d; want above %d", n, n%2, tok, last)
		}
		last = tok
		if th.unlock(t, cl, fmt.Sprintf("r%d", n)) != 1 {
			t.Errorf("hold %d: unlock: want 1", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRedissonFencedLockWithoutTokenIsGivenBack: when no token can be
// had (a new deployment's counters start only once every master
// answered, and 2 of 5 are down), the acquisition answers the error and
// the lock it took is given back on every master.
func TestRedissonFencedLockWithoutTokenIsGivenBack(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(0)
	c.kill(1)
	a := fencedLockClient{"fl3", "8c1f-0001:1"}
	if r, err := a.lockAndGetToken(t, p.Client); err == nil || !strings.HasPrefix(errText(err), "NOQUORUM") {
		t.Fatalf("lockAndGetToken without counters = %v, %v; want NOQUORUM", r, err)
	}
	for _, i := range c.live() {
		if n := c.direct[i].Exists(t.Context(), a.name).Val(); n != 0 {
			t.Errorf("master %d still holds %s: a lock taken without its token was not given back", i, a.name)
		}
	}
}

// TestRedissonFencedLockWhileDraining: as RLock, a new lock while the
// proxy drains gets DRAINING with nothing left on the masters and no
// token taken, while a re-entry of a lock held before is served with a
// new token.
func TestRedissonFencedLockWhileDraining(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	a := fencedLockClient{"held", "8c1f-0001:1"}
	first := a.mustToken(t, p.Client)
	p.Server.Drain()
	n := fencedLockClient{"new", "8c1f-0001:1"}
	if r, err := n.lockAndGetToken(t, p.Client); err == nil || !strings.HasPrefix(err.Error(), "DRAINING ") {
		t.Errorf("lockAndGetToken of a free lock while draining = %v, %v; want DRAINING", r, err)
	}
	c.wantFreeEverywhere(t, "new")
	if tok := a.mustToken(t, p.Client); tok <= first {
		t.Errorf("re-entry while draining: token %d; want above %d", tok, first)
	}
}
