package quorum

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A granted hold given back later (the proxy does so when the validity
// ran out before the reply, or a new lock is taken while draining) gives
// back only the keys it took new, on the nodes that took them: a parent
// lock the script only checked with EXISTS, though it holds the same
// token, stays (issue 16, finding 4, the drain case).
func TestUndoEffectGivesBackOnlyTheKeysTaken(t *testing.T) {
	ps := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(ps))
	for i, p := range ps {
		nodes[i] = p.node(t)
		p.Client(t).Set(t.Context(), "parent", "tok", 30*time.Second)
	}
	e := New(Config{MaxTTL: time.Minute}, nodes...)
	eff := e.Wrap(`if redis.call("exists", KEYS[2]) == 1 then
  return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
end
return false`, nil)
	res, err := e.RunEffect(t.Context(), eff, []string{"child", "parent"}, []string{"tok", "10000"})
	if err != nil || !res.Granted || !res.Took || res.Op != EffectHold {
		t.Fatalf("RunEffect = %+v, %v; want a new lock of the child granted", res, err)
	}
	e.UndoEffect(t.Context(), res)
	for i, p := range ps {
		if v, err := p.Client(t).Get(t.Context(), "child").Result(); err != redis.Nil {
			t.Errorf("node %d: child = %q, %v after the undo; want no key", i, v, err)
		}
		if v := p.Client(t).Get(t.Context(), "parent").Val(); v != "tok" {
			t.Errorf("node %d: parent = %q after the undo; want the caller's token kept", i, v)
		}
	}
}
