package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack15's net over perf17g's hot path (a request reused per
// connection, the command context without a timer, shared release
// answers, cached integer arrays from the nodes): a pipelined batch of
// lock commands, reads, refusals, errors and a large argument gets its
// replies in order, byte for byte the same over RESP2 and RESP3, with
// every master up, one frozen mid-batch, and two frozen (NOQUORUM within
// the node timeout, never the command timeout); a client killed by
// CLIENT KILL while its command waits on frozen masters leaves the proxy
// serving and the others' replies intact.
func TestAttack15PipelinedBatchesKeepOrderThroughFrozenMasters(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := engineConfig()
	qcfg.NodeTimeout, qcfg.MaxTTL = 500*time.Millisecond, 10*time.Second
	p := startProxy(t, proxy.Config{CommandTimeout: 3 * time.Second}, qcfg, c.addrs...)
	ctx := t.Context()
	big := strings.Repeat("x", 300<<10)
	type cmd struct {
		args []any
		want string // the reply as "%v" of its value, or "ERR:prefix"
	}
	batch := func(round string, quorum bool, keys int) []cmd {
		var cs []cmd
		for i := range keys {
			k, tok := fmt.Sprintf("a15:hot:%s:%d", round, i), fmt.Sprintf("tok-%s-%d", round, i)
			if !quorum {
				cs = append(cs,
					cmd{[]any{"SET", k, tok, "NX", "PX", "5000"}, "ERR:NOQUORUM"},
					cmd{[]any{"ECHO", big[:1000+i]}, big[:1000+i]},
					cmd{[]any{"NOSUCHCMD", k}, "ERR:ERR unknown command"},
					cmd{[]any{"EVAL", distlockRelease, "1", k, tok}, "ERR:NOQUORUM"})
				continue
			}
			cs = append(cs,
				cmd{[]any{"SET", k, tok, "NX", "PX", "5000"}, "OK"},
				cmd{[]any{"GET", k}, tok},
				cmd{[]any{"SET", k, "other", "NX", "PX", "5000"}, "<nil>"},
				cmd{[]any{"PTTL", k}, "pttl"},
				cmd{[]any{"SET", k, tok, "NX", "PX", "notanumber"}, "ERR:ERR value is not an integer"},
				cmd{[]any{"ECHO", big}, big},
				cmd{[]any{"NOSUCHCMD", k}, "ERR:ERR unknown command"},
				cmd{[]any{"EVAL", distlockRelease, "1", k, "wrong"}, "0"},
				cmd{[]any{"EVAL", distlockRelease, "1", k, tok}, "1"},
				cmd{[]any{"GET", k}, "<nil>"})
		}
		return cs
	}
	run := func(t *testing.T, cl *redis.Client, round string, quorum bool, keys int) {
		t.Helper()
		cs := batch(round, quorum, keys)
		pipe := cl.Pipeline()
		out := make([]*redis.Cmd, len(cs))
		for i, cm := range cs {
			out[i] = pipe.Do(ctx, cm.args...)
		}
		start := time.Now()
		pipe.Exec(ctx)
		took := time.Since(start)
		for i, cm := range cs {
			v, err := out[i].Result()
			got := fmt.Sprint(v)
			switch {
			case errors.Is(err, redis.Nil):
				got = "<nil>"
			case err != nil:
				got = "ERR:" + err.Error()
			}
			ok := got == cm.want
			switch {
			case cm.want == "pttl":
				n, isInt := v.(int64)
				ok = err == nil && isInt && n > 2000 && n <= 5000 // the validity left, after the commands before it
			case strings.HasPrefix(cm.want, "ERR:"):
				ok = strings.HasPrefix(got, cm.want)
			}
			if !ok {
				if len(got) > 80 {
					got = got[:80] + "..."
				}
				t.Errorf("%s reply %d to %.40v: %q; want %.80q", round, i, cm.args, got, cm.want)
			}
		}
		// Each lock command waits for the node timeout at most, one after
		// the other: never a command timeout.
		if limit := time.Duration(len(cs))*qcfg.NodeTimeout + 2*time.Second; took > limit {
			t.Errorf("%s: the batch of %d took %v; want under %v", round, len(cs), took, limit)
		}
	}
	r2 := newClient(t, p.Addr, func(o *redis.Options) { o.Protocol, o.ReadTimeout = 2, time.Minute })
	r3 := newClient(t, p.Addr, func(o *redis.Options) { o.Protocol, o.ReadTimeout = 3, time.Minute })
	for _, step := range []struct {
		name   string
		frozen []int
	}{{"all-up", nil}, {"one-frozen", []int{2}}, {"two-frozen", []int{1, 2}}} {
		for _, i := range step.frozen {
			c.procs[i].Freeze(t)
		}
		var wg sync.WaitGroup
		for proto, cl := range map[string]*redis.Client{"resp2": r2, "resp3": r3} {
			wg.Go(func() {
				run(t, cl, step.name+":"+proto, len(step.frozen) < 2, map[int]int{0: 4, 1: 2, 2: 2}[len(step.frozen)])
			})
		}
		if len(step.frozen) == 2 {
			// A client killed while its SET waits on the frozen masters.
			victim := newClient(t, p.Addr, func(o *redis.Options) { o.MaxRetries = -1; o.PoolSize = 1 })
			id, err := victim.ClientID(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- victim.Do(ctx, "SET", "a15:hot:victim", "v", "NX", "PX", "5000").Err() }()
			time.Sleep(50 * time.Millisecond)
			if n, err := p.Client.ClientKillByFilter(ctx, "ID", fmt.Sprint(id)).Result(); err != nil || n != 1 {
				t.Errorf("CLIENT KILL ID %d = %d, %v", id, n, err)
			}
			if err := <-done; err == nil {
				t.Errorf("the killed client's SET answered OK")
			}
		}
		wg.Wait()
		for _, i := range step.frozen {
			c.procs[i].Thaw()
		}
		if err := p.Client.Ping(ctx).Err(); err != nil {
			t.Fatalf("PING after %s: %v", step.name, err)
		}
	}
	time.Sleep(300 * time.Millisecond) // the thawed masters' queued commands ran
	run(t, r3, "after", true, 4)
	// The killed client's NOQUORUM take is given back where it was
	// granted (master 0); the frozen masters answered nothing, so their
	// writes stay to their TTL: either may have held the same token's
	// earlier grant (quorum's leavesSilent).
	if held := c.holding(t, "a15:hot:victim", "v"); slices.Contains(held, 0) {
		t.Errorf("a15:hot:victim after its client was killed is held on masters %v; want it given back on master 0, which granted it", held)
	}
}
