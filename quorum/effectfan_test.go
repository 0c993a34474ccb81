package quorum

import (
	"fmt"
	"testing"
	"time"
)

// A body's first call, with one node frozen: the other nodes load the
// library and the body's chunk without waiting for the frozen one, and
// the take is granted by them (the pipelined fan-out would wait out the
// node timeout before any of them loaded anything).
func TestEffectFirstCallBesideAFrozenNodeIsGranted(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: 300 * time.Millisecond}, nodes...)
	l := Lock{Keys: []string{"dial"}, Token: "t"}
	// Dials every node; a loaded machine (a -race run beside the
	// integration tests) can take more than 300ms for the first.
	var err error
	for range 5 {
		if _, err = e.Acquire(t.Context(), l, time.Second); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	procs[2].Freeze(t)
	eff := e.Wrap(goZeroLock, nil)
	res, err := e.RunEffect(t.Context(), eff, []string{"k"}, []string{"tok", "10000"})
	if err != nil || !res.Granted || res.Reply.Str != "OK" {
		t.Fatalf("first take beside a frozen node = %+v, %v; want granted OK", res, err)
	}
}

// A node that lost the library after the body ran there (a flush, a
// restart) answers the pipelined FCALL by asking for it: it gets the
// library and the chunk, and the call again, and counts.
func TestEffectNodeThatLostTheLibraryCounts(t *testing.T) {
	procs := []*redisProc{startRedis(t), startRedis(t), startRedis(t)}
	nodes := make([]Node, len(procs))
	for i, p := range procs {
		nodes[i] = p.node(t)
	}
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: time.Second}, nodes...)
	eff := e.Wrap(goZeroLock, nil)
	for i := range 2 {
		res, err := e.RunEffect(t.Context(), eff, []string{fmt.Sprint("k", i)}, []string{"tok", "10000"})
		if err != nil || !res.Granted {
			t.Fatalf("take %d = %+v, %v; want granted", i, res, err)
		}
	}
	if !e.fcallsEverywhere(eff, e.batches(nil)) {
		t.Fatalf("after a call answered by every node, the FCALL is not pipelined")
	}
	for _, p := range procs[:2] {
		if err := p.Client(t).FunctionFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.RunEffect(t.Context(), eff, []string{"k2"}, []string{"tok", "10000"})
	if err != nil || !res.Granted || res.Lease.Granted != 3 {
		t.Fatalf("take after two nodes lost the library = %+v, %v; want granted on 3", res, err)
	}
	for i, p := range procs {
		if v, _ := p.Client(t).Get(t.Context(), "k2").Result(); v != "tok" {
			t.Errorf("node %d holds k2 = %q; want tok", i, v)
		}
	}
}

// A body that changes the reply table of its SET before returning it is
// answered from the table as it returns it, as one Redis answers, not as
// the SET's OK.
func TestEffectChangedSetReplyIsAnsweredAsOneRedis(t *testing.T) {
	p := startRedis(t)
	e := New(Config{MaxTTL: time.Minute, NodeTimeout: time.Second}, p.node(t))
	admin := p.Client(t)
	for _, change := range []string{`r.err = "ERR boom"`, `r.ok = "DONE"`} {
		body := `local r = redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
` + change + `
return r`
		one, oneErr := admin.Eval(t.Context(), body, []string{"one"}, "tok", "10000").Result()
		res, err := e.RunEffect(t.Context(), e.Wrap(body, nil), []string{"k2-" + change}, []string{"tok", "10000"})
		got := fmt.Sprint(valueOrErr(res.Reply, err))
		want := fmt.Sprint(one)
		if oneErr != nil {
			want = oneErr.Error()
		}
		if got != want {
			t.Errorf("%s: RunEffect answered %q; one Redis %q", change, got, want)
		}
		admin.Del(t.Context(), "one")
	}
}

func valueOrErr(v Value, err error) any {
	switch {
	case err != nil:
		return err
	case v.Kind == ValueError:
		return v.Str
	}
	return v.Str
}
