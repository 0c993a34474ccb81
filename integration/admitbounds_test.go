package integration

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// nestingShapes nest a script n levels deep in the ways Lua 5.1 counts
// levels, some moving on a line at each level.
var nestingShapes = map[string]func(n int) string{
	"tables": func(n int) string {
		return "local t = " + strings.Repeat("{", n) + strings.Repeat("}", n) + " return 1"
	},
	"tables over lines": func(n int) string {
		return "local t = " + strings.Repeat("{\n", n) + strings.Repeat("}", n) + " return 1"
	},
	"parentheses": func(n int) string { return "return " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) },
	"if blocks": func(n int) string {
		return strings.Repeat("if true then\n", n) + "return 1\n" + strings.Repeat("end\n", n)
	},
	"named fields over lines": func(n int) string { return "return " + strings.Repeat("{x=\n", n) + "1" + strings.Repeat("}", n) },
	"functions": func(n int) string {
		return "local f = " + strings.Repeat("function() return ", n) + "1" + strings.Repeat(" end", n) + " return 1"
	},
}

// A script nested too deep is refused as one Redis refuses it, with the
// same error and line: found by asking a real redis-server where it
// starts refusing. One level before that, where Redis still compiles it,
// the proxy refuses it the same way: the masters run the body inside the
// wrapper's function, one level deeper, and would not compile it.
func TestScriptNestingAsOneRedis(t *testing.T) {
	ref := direct(t, startRedis(t).Addr)
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	for name, build := range nestingShapes {
		t.Run(name, func(t *testing.T) {
			first := 0
			for n := 80; n <= 210 && first == 0; n++ {
				if strings.Contains(errText(ref.Eval(ctx, build(n), nil).Err()), "too many syntax levels") {
					first = n
				}
			}
			if first == 0 {
				t.Fatalf("redis-server compiled every depth up to 210")
			}
			for _, n := range []int{first, first + 1} {
				want := errText(ref.Eval(ctx, build(n), nil).Err())
				if got := errText(p.Client.Eval(ctx, build(n), nil).Err()); got != want {
					t.Errorf("EVAL %d levels: proxy %q; one Redis %q", n, got, want)
				}
			}
			got := errText(p.Client.Eval(ctx, build(first-1), nil).Err())
			if !strings.HasPrefix(got, "ERR Error compiling script (new function): user_script:") || !strings.HasSuffix(got, ": chunk has too many syntax levels") {
				t.Errorf("EVAL %d levels (one Redis runs it) = %q; want the compile error", first-1, got)
			}
			if err := p.Client.Eval(ctx, build(first-2), nil).Err(); err != nil && !errors.Is(err, redis.Nil) {
				t.Errorf("EVAL %d levels = %v; want it run", first-2, err)
			}
		})
	}
}

// The 510 KB EVAL of nested tables that took the proxy to about 1 GB and
// 1.6 s of CPU is answered as one Redis answers it, at a cost in the
// proxy of under twice its size (the command's own bytes, read and
// copied).
func TestDeepScriptCostsAboutItsSize(t *testing.T) {
	ref := direct(t, startRedis(t).Addr)
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	const n = 510 << 10 / 2
	body := "return " + strings.Repeat("{", n) + strings.Repeat("}", n)
	want := errText(ref.Eval(ctx, body, nil).Err())
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := errText(p.Client.Eval(ctx, body, nil).Err())
	runtime.ReadMemStats(&after)
	if got != want {
		t.Errorf("EVAL of %d nested tables: proxy %q; one Redis %q", n, got, want)
	}
	// The test's client encodes the command too; both sides run in this
	// process.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("EVAL of %d bytes: %d bytes allocated (%.1fx)", len(body), alloc, float64(alloc)/float64(len(body)))
	if alloc > 20*uint64(len(body)) {
		t.Errorf("EVAL of %d bytes allocated %d bytes; want under 20x", len(body), alloc)
	}
}
