package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// RCountDownLatch's scripts, byte for byte as Java's string concatenation
// builds them at redisson/redisson commit
// 66863978b4a92093b97c1f8c96f182a77e81d50e (2026-08-21), under
// redisson/src/main/java/org/redisson/. Redisson calls each with KEYS
// {name, "redisson_countdownlatch__channel__{" + name + "}"}; ARGV below.
const (
	// RedissonCountDownLatch.java:255-257, countDownAsync: ARGV {0 (the
	// zero message), PUBLISH}.
	redissonLatchCountDown = "local v = redis.call('decr', KEYS[1]);if v <= 0 then redis.call('del', KEYS[1]) end;if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end;"
	// RedissonCountDownLatch.java:288-294, trySetCountAsync: ARGV {1 (the
	// new count message), count, PUBLISH}.
	redissonLatchTrySetCount = "if redis.call('exists', KEYS[1]) == 0 then redis.call('set', KEYS[1], ARGV[2]); redis.call(ARGV[3], KEYS[2], ARGV[1]); return 1 else return 0 end"
	// RedissonCountDownLatch.java:302-307, deleteAsync: ARGV {1, PUBLISH}.
	redissonLatchDelete = "if redis.call('del', KEYS[1]) == 1 then redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1 else return 0 end"
)

// latchClient is what Redisson sends for one latch: its scripts, getCount
// (GET, nil read as 0) and await's subscription.
type latchClient struct {
	cl            *redis.Client
	name, channel string
}

func newLatchClient(cl *redis.Client, name string) latchClient {
	return latchClient{cl: cl, name: name, channel: "redisson_countdownlatch__channel__{" + name + "}"}
}

func (l latchClient) keys() []string { return []string{l.name, l.channel} }

func (l latchClient) trySetCount(t *testing.T, n int64) (int64, error) {
	return redis.NewScript(redissonLatchTrySetCount).Run(t.Context(), l.cl, l.keys(), 1, n, "PUBLISH").Int64()
}

// countDown returns nil when the script answered nil, as one Redis does.
func (l latchClient) countDown(t *testing.T) error {
	err := redis.NewScript(redissonLatchCountDown).Run(t.Context(), l.cl, l.keys(), 0, "PUBLISH").Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err == nil {
		return errors.New("countDown answered a value; want nil")
	}
	return err
}

func (l latchClient) delete(t *testing.T) (int64, error) {
	return redis.NewScript(redissonLatchDelete).Run(t.Context(), l.cl, l.keys(), 1, "PUBLISH").Int64()
}

// getCount is Redisson's: GET, nil read as 0.
func (l latchClient) getCount(t *testing.T) (int64, error) {
	v, err := l.cl.Get(t.Context(), l.name).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

func (l latchClient) subscribe(t *testing.T) *redis.PubSub {
	t.Helper()
	sub := l.cl.Subscribe(t.Context(), l.channel)
	t.Cleanup(func() { sub.Close() })
	if _, err := sub.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	return sub
}

// wantMessages reads the messages that arrive within wait, and fails
// unless they are want, in order.
func wantMessages(t *testing.T, sub *redis.PubSub, wait time.Duration, want ...string) {
	t.Helper()
	var got []string
	for {
		msg, err := sub.ReceiveTimeout(t.Context(), wait)
		if err != nil {
			break
		}
		if m, ok := msg.(*redis.Message); ok {
			got = append(got, m.Payload)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("messages %q; want %q", got, want)
	}
}

// latchLife runs one latch's life as Redisson does, checking each reply
// and message as one Redis gives them.
func latchLife(t *testing.T, cl *redis.Client, name string) {
	l := newLatchClient(cl, name)
	sub := l.subscribe(t)
	step := func(what string, got int64, err error, want int64) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %d, %v; want %d", what, got, err, want)
		}
	}
	v, err := l.getCount(t)
	step("getCount of a latch never set", v, err, 0)
	v, err = l.trySetCount(t, 2)
	step("trySetCount(2)", v, err, 1)
	wantMessages(t, sub, 200*time.Millisecond, "1")
	v, err = l.trySetCount(t, 3)
	step("trySetCount(3) of a latch set", v, err, 0)
	v, err = l.getCount(t)
	step("getCount", v, err, 2)
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	v, err = l.getCount(t)
	step("getCount after one countDown", v, err, 1)
	wantMessages(t, sub, 200*time.Millisecond)
	if err := l.countDown(t); err != nil {
		t.Fatalf("the last countDown: %v", err)
	}
	wantMessages(t, sub, 300*time.Millisecond, "0")
	v, err = l.getCount(t)
	step("getCount of the open latch", v, err, 0)
	if err := l.countDown(t); err != nil {
		t.Fatalf("a countDown of the open latch: %v", err)
	}
	wantMessages(t, sub, 200*time.Millisecond)
	v, err = l.getCount(t)
	step("getCount after a countDown too many", v, err, 0)
	v, err = l.trySetCount(t, 1)
	step("trySetCount(1) of the open latch", v, err, 1)
	v, err = l.delete(t)
	step("delete", v, err, 1)
	wantMessages(t, sub, 200*time.Millisecond, "1", "1")
	v, err = l.delete(t)
	step("delete of a latch gone", v, err, 0)
	v, err = l.getCount(t)
	step("getCount of a latch deleted", v, err, 0)
	wantMessages(t, sub, 100*time.Millisecond)
}

func latchConfig() proxy.Config {
	return proxy.Config{CommandTimeout: commandTimeout, LatchKeys: []string{"latch:*"}}
}

// latchSetup starts n masters and a proxy serving latch:* over them.
func latchSetup(t *testing.T, n int) (*cluster, *proxyProc) {
	t.Helper()
	c := startNodes(t, n)
	return c, startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...)
}

// latchEngineConfig is a valid engine config for the latch's tests:
// min_ttl 1s, node_timeout 400ms (at most half of it), and maxTTL (the
// seeding's wait).
func latchEngineConfig(maxTTL time.Duration) quorum.Config {
	cfg := engineConfig()
	cfg.MinTTL, cfg.MaxTTL, cfg.NodeTimeout = time.Second, maxTTL, 400*time.Millisecond
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return cfg
}

// TestRedissonLatchSideBySide: one latch's life (trySetCount, getCount,
// countDown to 0 and past it, delete), replies and messages, against one
// redis-server and through the proxy over 5 masters, all up and with 2
// down.
func TestRedissonLatchSideBySide(t *testing.T) {
	t.Run("one redis", func(t *testing.T) { latchLife(t, direct(t, startRedis(t).Addr), "latch:a") })
	for _, down := range []int{0, 2} {
		t.Run(fmt.Sprintf("proxy, %d of 5 down", down), func(t *testing.T) {
			c, p := latchSetup(t, 5)
			cl := newClient(t, p.Addr, nil)
			if _, err := newLatchClient(cl, "latch:first").getCount(t); err != nil {
				t.Fatalf("the first read, all up: %v", err) // starts the counters
			}
			for i := range down {
				c.kill(i)
			}
			latchLife(t, cl, "latch:a")
			for _, i := range c.live() {
				if n := c.direct[i].Exists(t.Context(), "latch:a").Val(); n != 0 {
					t.Errorf("master %d has a key of the latch's name", i)
				}
			}
		})
	}
}

// TestRedissonLatchRefusedOutsideLatchKeys: a latch whose name does not
// match latch_keys is refused naming the setting, and nothing reaches a
// master.
func TestRedissonLatchRefusedOutsideLatchKeys(t *testing.T) {
	c, p := latchSetup(t, 3)
	l := newLatchClient(p.Client, "other")
	if _, err := l.trySetCount(t, 2); !strings.Contains(errText(err), "Redisson's RCountDownLatch is not served: its name must match latch_keys") {
		t.Fatalf("trySetCount of a name outside latch_keys = %v; want the refusal", err)
	}
	if err := l.countDown(t); !strings.Contains(errText(err), "latch_keys") {
		t.Fatalf("countDown of a name outside latch_keys = %v; want the refusal", err)
	}
	err := redis.NewScript(redissonLatchCountDown).Run(t.Context(), p.Client, []string{"latch:x", "another"}, 0, "PUBLISH").Err()
	if !strings.Contains(errText(err), "served only as Redisson calls it") {
		t.Fatalf("countDown with another channel = %v; want the layout refusal", err)
	}
	if _, err := p.Client.ScriptLoad(t.Context(), redissonLatchCountDown).Result(); err != nil {
		t.Fatalf("SCRIPT LOAD of countDown: %v; want its digest (served for latch_keys names)", err)
	}
	for i := range 3 {
		if n := c.direct[i].Exists(t.Context(), quorum.CountersKey, "other", "latch:x").Val(); n != 0 {
			t.Errorf("master %d has %d keys after refusals; want none", i, n)
		}
		stats := c.direct[i].Info(t.Context(), "commandstats").Val()
		for _, cmd := range []string{"cmdstat_eval:", "cmdstat_evalsha:", "cmdstat_fcall:"} {
			if strings.Contains(stats, cmd) {
				t.Errorf("master %d ran %s; want nothing of a refused call to reach it", i, strings.TrimSuffix(cmd, ":"))
			}
		}
	}
}

// TestRedissonLatchThroughTwoProxies: the latch set through one proxy,
// counted down through both, a waiter on each proxy woken once by the zero
// message, and read open through either.
func TestRedissonLatchThroughTwoProxies(t *testing.T) {
	c := startNodes(t, 5)
	ps := []*proxyProc{startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...), startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...)}
	ls := []latchClient{newLatchClient(newClient(t, ps[0].Addr, nil), "latch:two"), newLatchClient(newClient(t, ps[1].Addr, nil), "latch:two")}
	subs := []*redis.PubSub{ls[0].subscribe(t), ls[1].subscribe(t)}
	if v, err := ls[0].trySetCount(t, 4); v != 1 || err != nil {
		t.Fatalf("trySetCount(4) = %d, %v", v, err)
	}
	for n := range 4 {
		if v, err := ls[(n+1)%2].getCount(t); v != int64(4-n) || err != nil {
			t.Fatalf("getCount through proxy %d = %d, %v; want %d", (n+1)%2, v, err, 4-n)
		}
		if err := ls[n%2].countDown(t); err != nil {
			t.Fatalf("countDown %d: %v", n, err)
		}
	}
	for i, sub := range subs {
		wantMessages(t, sub, 300*time.Millisecond, "1", "0")
		if v, err := ls[i].getCount(t); v != 0 || err != nil {
			t.Errorf("getCount through proxy %d = %d, %v; want 0", i, v, err)
		}
	}
}

// TestRedissonLatchMajorityRestartedEmpty: 2 of 3 masters restarted
// empty (no key there: one Redis's latch would read open) never read the
// latch open: unavailable, before and after the seeding's wait, since
// fewer than a quorum of masters kept their counters.
func TestRedissonLatchMajorityRestartedEmpty(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := latchEngineConfig(time.Second) // the seeding waits max_ttl
	p := startProxy(t, latchConfig(), qcfg, c.addrs...)
	l := newLatchClient(p.Client, "latch:r")
	sub := l.subscribe(t)
	if v, err := l.trySetCount(t, 3); v != 1 || err != nil {
		t.Fatalf("trySetCount(3) = %d, %v", v, err)
	}
	if err := l.countDown(t); err != nil {
		t.Fatal(err)
	}
	c.procs[0] = restartRedis(t, c.procs[0])
	if v, err := l.getCount(t); v != 2 || err != nil {
		t.Fatalf("getCount with 1 of 3 restarted empty = %d, %v; want 2", v, err)
	}
	c.procs[1] = restartRedis(t, c.procs[1])
	for _, when := range []string{"at once", "after the wait"} {
		if v, err := l.getCount(t); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
			t.Fatalf("getCount with 2 of 3 restarted empty, %s = %d, %v; want NOQUORUM, never 0", when, v, err)
		}
		if err := l.countDown(t); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
			t.Fatalf("countDown with 2 of 3 restarted empty, %s: %v; want NOQUORUM", when, err)
		}
		time.Sleep(time.Second + 200*time.Millisecond)
	}
	wantMessages(t, sub, 100*time.Millisecond, "1")
}

// TestRedissonLatchMasterRestartedBetweenCountDowns: 5 masters, one
// restarted empty between countDowns and seeded again after max_ttl; the
// count stays exact and the zero message comes once, after the last.
func TestRedissonLatchMasterRestartedBetweenCountDowns(t *testing.T) {
	c := startNodes(t, 5)
	qcfg := latchEngineConfig(time.Second) // the seeding waits max_ttl
	p := startProxy(t, latchConfig(), qcfg, c.addrs...)
	l := newLatchClient(p.Client, "latch:r")
	sub := l.subscribe(t)
	if v, err := l.trySetCount(t, 3); v != 1 || err != nil {
		t.Fatalf("trySetCount(3) = %d, %v", v, err)
	}
	if err := l.countDown(t); err != nil {
		t.Fatal(err)
	}
	c.procs[0] = restartRedis(t, c.procs[0])
	if v, err := l.getCount(t); v != 2 || err != nil {
		t.Fatalf("getCount with master 0 restarted empty = %d, %v; want 2", v, err)
	}
	if err := l.countDown(t); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second + 200*time.Millisecond)
	if v, err := l.getCount(t); v != 1 || err != nil { // seeds master 0
		t.Fatalf("getCount = %d, %v; want 1", v, err)
	}
	if v, err := c.direct[0].HGet(t.Context(), quorum.CountersKey, "l:latch:r").Int64(); v != 1 || err != nil {
		t.Errorf("master 0 seeded with %d, %v; want 1", v, err)
	}
	c.kill(1)
	c.kill(2) // master 0 now counts in every quorum
	if err := l.countDown(t); err != nil {
		t.Fatal(err)
	}
	wantMessages(t, sub, 300*time.Millisecond, "1", "0")
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount = %d, %v; want 0", v, err)
	}
}

// TestRedissonLatchCountDownRace: countDowns from several clients through
// two proxies at once, more than the count: one zero message on each
// waiter, and the latch reads open.
func TestRedissonLatchCountDownRace(t *testing.T) {
	c := startNodes(t, 5)
	ps := []*proxyProc{startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...), startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...)}
	for round := range 3 {
		name := fmt.Sprintf("latch:race%d", round)
		waiters := []*redis.PubSub{newLatchClient(newClient(t, ps[0].Addr, nil), name).subscribe(t), newLatchClient(newClient(t, ps[1].Addr, nil), name).subscribe(t)}
		if v, err := newLatchClient(ps[0].Client, name).trySetCount(t, 6); v != 1 || err != nil {
			t.Fatalf("trySetCount(6) = %d, %v", v, err)
		}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				l := newLatchClient(newClient(t, ps[i%2].Addr, nil), name)
				if err := l.countDown(t); err != nil {
					t.Errorf("countDown %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		for i, w := range waiters {
			wantMessages(t, w, 500*time.Millisecond, "1", "0")
			if v, err := newLatchClient(ps[i].Client, name).getCount(t); v != 0 || err != nil {
				t.Errorf("round %d: getCount through proxy %d = %d, %v; want 0", round, i, v, err)
			}
		}
	}
}

// TestRedissonLatchMasterThatMissedTheSet: with one master that missed
// the trySetCount (its count deleted behind the proxy's back) and 2 of 5
// down, a quorum of answers holds one master without a count: getCount
// is unavailable, never 0 (the quorum-th largest count would read the
// latch open before any countDown).
func TestRedissonLatchMasterThatMissedTheSet(t *testing.T) {
	c, p := latchSetup(t, 5)
	l := newLatchClient(p.Client, "latch:m")
	if v, err := l.trySetCount(t, 2); v != 1 || err != nil {
		t.Fatalf("trySetCount(2) = %d, %v", v, err)
	}
	if err := c.direct[4].HDel(t.Context(), quorum.CountersKey, "l:latch:m").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := l.getCount(t); v != 2 || err != nil {
		t.Fatalf("getCount, all up = %d, %v; want 2", v, err)
	}
	c.kill(0)
	c.kill(1)
	if v, err := l.getCount(t); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
		t.Fatalf("getCount with 2 down and 1 that missed the set = %d, %v; want NOQUORUM, never 0", v, err)
	}
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	if v, err := l.getCount(t); err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") {
		t.Fatalf("getCount after 1 of 2 countDowns = %d, %v; want NOQUORUM, never 0", v, err)
	}
	if err := l.countDown(t); err != nil {
		t.Fatalf("countDown: %v", err)
	}
	if v, err := l.getCount(t); v != 0 || err != nil {
		t.Fatalf("getCount after 2 countDowns = %d, %v; want 0", v, err)
	}
}

// TestRedissonLatchRefusesTheProxiesOwnKeys: with latch_keys matching
// every name, a latch named as one of the proxies' own keys is refused
// as every command naming one is, and nothing reaches a master.
func TestRedissonLatchRefusesTheProxiesOwnKeys(t *testing.T) {
	c := startNodes(t, 3)
	cfg := latchConfig()
	cfg.LatchKeys = []string{"*"}
	p := startProxy(t, cfg, latchEngineConfig(time.Minute), c.addrs...)
	for _, name := range []string{quorum.CountersKey, quorum.CountersKey + ":x", quorum.MembersKey} {
		l := newLatchClient(p.Client, name)
		if _, err := l.trySetCount(t, 2); !strings.Contains(errText(err), "is reserved for redlock-proxy") {
			t.Errorf("trySetCount of %q = %v; want the refusal for the proxies' own keys", name, err)
		}
	}
	for i := range 3 {
		if n := c.direct[i].Exists(t.Context(), quorum.CountersKey).Val(); n != 0 {
			t.Errorf("master %d has the counters' hash after refusals; want none", i)
		}
	}
}

// TestRedissonLatchOpenedLatchKeepsTwoFieldsUntilDelete: an opened
// latch keeps its claim slot (two fields, "o:" and "m:") on every master
// until delete(): the slot's tag with no count is the evidence a
// restarted master's seed reads to drop a leftover count, even of a set
// that lands late (review27; latch20c's reclaim removed it and an opened
// latch closed again). delete() takes the claim and leaves the tag a
// tombstone ("-1") beside the memory of the ballots its master voted for
// ("d:"): a claim that read no tag creates a slot where a master has no
// field of it, so with no trace the master could give its vote again
// (U1b); the memory lets a claim of another ballot vote there (L4).
func TestRedissonLatchOpenedLatchKeepsTwoFieldsUntilDelete(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, latchConfig(), latchEngineConfig(time.Second), c.addrs...)
	ctx := t.Context()
	hlen := func() []int64 {
		var n []int64
		for _, d := range c.direct {
			n = append(n, d.HLen(ctx, quorum.CountersKey).Val())
		}
		return n
	}
	const latches = 40
	var ls []latchClient
	for i := range latches {
		l := newLatchClient(p.Client, fmt.Sprintf("latch:job:%d", i))
		if v, err := l.trySetCount(t, 1); v != 1 || err != nil {
			t.Fatalf("%s: trySetCount(1) = %d, %v", l.name, v, err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		if err := l.countDown(t); err != nil {
			t.Fatalf("%s: countDown: %v", l.name, err)
		}
	}
	opened := hlen()
	for _, l := range ls {
		if v, err := l.getCount(t); v != 0 || err != nil {
			t.Fatalf("%s: getCount = %d, %v; want 0", l.name, v, err)
		}
		if v, err := l.delete(t); v != 0 || err != nil {
			t.Fatalf("%s: delete of the opened latch = %d, %v; want 0 (no count)", l.name, v, err)
		}
	}
	deleted := hlen()
	for i := range opened {
		if opened[i] != deleted[i] {
			t.Errorf("master %d: %d fields with %d opened latches, %d after their delete; want 2 per latch until delete, and 2 after (the tombstone and its memory)", i, opened[i], latches, deleted[i])
		}
	}
	for i, d := range c.direct {
		for f, v := range d.HGetAll(ctx, quorum.CountersKey).Val() {
			if strings.HasPrefix(f, "m:") || strings.HasPrefix(f, "o:") && v != "-1" || strings.HasPrefix(f, "d:") && v == "0" {
				t.Errorf("master %d keeps %s = %s after every latch was deleted; want only tombstones (o: -1) and the memory of each one's vote (d:)", i, f, v)
			}
		}
	}
}
