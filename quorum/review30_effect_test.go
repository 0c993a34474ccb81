package quorum

import (
	"fmt"
	"testing"
	"time"
)

// review30 N2: a node that lost the library (FUNCTION FLUSH) while
// another is frozen, not marked down: the pipelined FCALL's fan-out waits
// for the frozen node until the deadline, and only then runs the call
// again on the node that asked for the library, with no time left. The
// call has a quorum (the flushed node and the whole one) and should be
// granted, as the script path's NOSCRIPT is since e3bcee6.
func TestReview30EffectNodeThatLostTheLibraryBesideAFrozenNodeCounts(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: 300 * time.Millisecond}, nodes...)
	eff := e.Wrap(goZeroLock, nil)
	// Every node answers the body's FCALL once: the next call is piped.
	var err error
	for i := range 5 {
		var res EffectResult
		res, err = e.RunEffect(t.Context(), eff, []string{fmt.Sprint("k", i)}, []string{"tok", "10000"})
		if err == nil && res.Granted && res.Lease.Granted == 3 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("takes with every node up: %v", err)
	}
	procs[2].Freeze(t)
	if err := procs[0].Client(t).FunctionFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	res, err := e.RunEffect(t.Context(), eff, []string{"lost"}, []string{"tok", "10000"})
	if err != nil || !res.Granted || res.Lease.Granted != 2 {
		t.Errorf("take with node 0 flushed and node 2 frozen = %+v, %v; want granted on 2", res, err)
	}
	// The call after it goes per node (node 0's ready bit is cleared).
	res, err = e.RunEffect(t.Context(), eff, []string{"after"}, []string{"tok", "10000"})
	if err != nil || !res.Granted || res.Lease.Granted != 2 {
		t.Errorf("the next take = %+v, %v; want granted on 2", res, err)
	}
}
