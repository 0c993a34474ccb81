package quorum

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// infoInt reads one integer field of INFO section from a node.
func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s = %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

// TestEffectLibraryStaysBounded: distinct scripts served by effect leave a
// node one library, and its functions' memory stays within a few MB
// however many there are (before, each left a library of ~100 KB); a body
// the library dropped, or a library flushed, runs again.
func TestEffectLibraryStaysBounded(t *testing.T) {
	admin, n, e := formEngine(t, asLibrary)
	ctx := t.Context()
	count := 10000
	if testing.Short() {
		count = 1500
	}
	run := func(i int, key string) {
		t.Helper()
		body := fmt.Sprintf(`local v = %d return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000)`, i)
		ne, err := n.RunEffect(ctx, e.Wrap(body, nil), newEffectCall([]string{key}, []string{"tok"}, 1), nil)
		if err != nil || ne.Refused != "" || ne.Reply.Kind != ValueStatus || ne.Reply.Str != "OK" {
			t.Fatalf("script %d = %+v, %v; want OK", i, ne, err)
		}
	}
	for i := range count {
		run(i, "k"+strconv.Itoa(i))
	}
	info := admin.Info(ctx, "memory").Val()
	used := infoInt(t, info, "used_memory_vm_functions") + infoInt(t, info, "used_memory_functions")
	t.Logf("%d distinct scripts: used_memory_vm_functions + used_memory_functions = %d bytes", count, used)
	if used > 4<<20 {
		t.Errorf("%d distinct scripts leave %d bytes of functions; want at most 4 MB", count, used)
	}
	libs, err := admin.Do(ctx, "FUNCTION", "LIST").Slice()
	if err != nil || len(libs) != 1 {
		t.Errorf("FUNCTION LIST = %d libraries, %v; want 1", len(libs), err)
	}
	run(0, "again") // dropped from the library's bodies long ago
	if err := admin.Do(ctx, "FUNCTION", "FLUSH").Err(); err != nil {
		t.Fatal(err)
	}
	run(0, "after a flush")
}

// TestEffectTakeReplyIsEachRuns: the library answers a take of ARGV[1]
// with the last such take's reply when its ttl argument is the same
// (wrapperTailSrc); every other take, run after one on the same node,
// still reports its own holder and hold.
func TestEffectTakeReplyIsEachRuns(t *testing.T) {
	_, n, e := formEngine(t, asLibrary)
	ctx := t.Context()
	take := e.Wrap(`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, nil)
	takeSecond := e.Wrap(`return redis.call("set", KEYS[1], ARGV[2], "NX", "PX", ARGV[3])`, nil)
	takeAndDel := e.Wrap(`local r = redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])
redis.call("del", KEYS[1])
return r`, nil)
	for i, c := range []struct {
		eff   *Effect
		args  []string
		after []string
		hold  time.Duration
	}{
		{take, []string{"tok", "10500"}, []string{"tok"}, 10500 * time.Millisecond},
		{take, []string{"tok", "20000"}, []string{"tok"}, 20 * time.Second},
		{take, []string{"tok2", "20000"}, []string{"tok2"}, 20 * time.Second},
		{takeSecond, []string{"a", "b", "20000"}, []string{"b"}, 20 * time.Second},
		{takeAndDel, []string{"tok", "20000"}, nil, 0},
		{take, []string{"tok", "10500"}, []string{"tok"}, 10500 * time.Millisecond},
	} {
		key := "k" + strconv.Itoa(i)
		ne, err := n.RunEffect(ctx, c.eff, newEffectCall([]string{key}, c.args, 1), nil)
		if err != nil || ne.Refused != "" || ne.Reply.Kind != ValueStatus || ne.Reply.Str != "OK" || len(ne.Keys) != 1 {
			t.Fatalf("take %d = %+v, %v; want OK and one key", i, ne, err)
		}
		k := ne.Keys[0]
		if !k.Changed || !slices.Equal(k.AfterOwn, c.after) || len(k.BeforeOwn) != 0 || k.Hold != c.hold {
			t.Errorf("take %d of %s with %q: %+v; want changed, after %q, hold %v", i, key, c.args, k, c.after, c.hold)
		}
	}
}

// TestEffectRunForgetsTheLastRunsKeys: the library keeps a key's state
// from run to run and clears what a run that refreshed an own value or
// put a key on the slow path left in it: a take after such runs, on the
// same node, reports no holder before it.
func TestEffectRunForgetsTheLastRunsKeys(t *testing.T) {
	admin, n, e := formEngine(t, asLibrary)
	ctx := t.Context()
	take := e.Wrap(`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, nil)
	each := e.Wrap(`for i = 1, #KEYS do
  if redis.call("GET", KEYS[i]) == ARGV[1] then
    redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
  else
    redis.call("SET", KEYS[i], ARGV[1], "NX", "PX", ARGV[2])
  end
end
return "OK"`, nil)
	hash := e.Wrap(`redis.call("hset", KEYS[1], ARGV[1], 1)
redis.call("pexpire", KEYS[1], ARGV[2])
return 1`, nil)
	for _, k := range []string{"a1", "a2"} {
		if err := admin.Set(ctx, k, "tok", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range []struct {
		eff    *Effect
		keys   []string
		before []string
	}{
		{each, []string{"a1", "a2"}, []string{"tok"}}, // refreshes: held
		{take, []string{"b1"}, nil},
		{each, []string{"a1", "c2"}, []string{"tok"}},
		{each, []string{"c1", "c3"}, nil},
		{hash, []string{"h1"}, nil}, // the slow path
		{take, []string{"d1"}, nil},
	} {
		ne, err := n.RunEffect(ctx, c.eff, newEffectCall(c.keys, []string{"tok", "10000"}, 1), nil)
		if err != nil || ne.Refused != "" || len(ne.Keys) != len(c.keys) {
			t.Fatalf("run %d = %+v, %v; want one effect per key", i, ne, err)
		}
		for j, k := range ne.Keys {
			want := c.before
			if j > 0 && i == 2 {
				want = nil // c2 was free
			}
			if !k.Changed || !slices.Equal(k.BeforeOwn, want) || !slices.Equal(k.AfterOwn, []string{"tok"}) {
				t.Errorf("run %d, key %s: %+v; want changed, before %q, after tok", i, c.keys[j], k, want)
			}
		}
	}
}

// TestEffectCommandInAnyCase: the guard knows a command whatever the case
// the body writes it in, and refuses one off the allow-list by its name.
func TestEffectCommandInAnyCase(t *testing.T) {
	inBothForms(t, func(t *testing.T, form wrapperForm) {
		_, n, e := formEngine(t, form)
		ctx := t.Context()
		take := e.Wrap(`if redis.call("gEt", KEYS[1]) == ARGV[1] then return 2 end
return redis.call("Set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, nil)
		ne, err := n.RunEffect(ctx, take, newEffectCall([]string{"k"}, []string{"tok", "10000"}, 1), nil)
		if err != nil || ne.Refused != "" || ne.Reply.Str != "OK" || len(ne.Keys) != 1 ||
			!ne.Keys[0].Changed || !slices.Equal(ne.Keys[0].AfterOwn, []string{"tok"}) {
			t.Fatalf("take in mixed case = %+v, %v; want OK, k taken", ne, err)
		}
		ne, err = n.RunEffect(ctx, take, newEffectCall([]string{"k"}, []string{"tok", "10000"}, 1), nil)
		if err != nil || ne.Refused != "" || ne.Reply.Kind != ValueInt || ne.Reply.Int != 2 {
			t.Fatalf("take again = %+v, %v; want 2 (its GET found its token)", ne, err)
		}
		flush := e.Wrap(`return redis.call("FlushAll")`, nil)
		ne, err = n.RunEffect(ctx, flush, newEffectCall([]string{"k"}, []string{"tok"}, 1), nil)
		if err != nil || !strings.Contains(ne.Refused, "FLUSHALL is not a lock command") {
			t.Fatalf("FlushAll = %+v, %v; want refused as not a lock command", ne, err)
		}
	})
}
