package script

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// levelShapes build bodies nested n deep in the ways Lua 5.1 counts
// levels. redisFirst is the smallest n at which Redis 7.0 refuses the
// body ("chunk has too many syntax levels") and redisLine the line it
// names there, as integration's TestScriptNestingAsOneRedis checks
// against a real redis-server.
var levelShapes = []struct {
	name       string
	build      func(n int) string
	redisFirst int
	redisLine  func(n int) int
}{
	{"tables", func(n int) string { return "return " + strings.Repeat("{", n) + strings.Repeat("}", n) }, 200, one},
	{"tables over lines", func(n int) string { return "return " + strings.Repeat("{\n", n) + strings.Repeat("}", n) }, 200, same},
	{"parentheses", func(n int) string { return "return " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) }, 199, one},
	{"unary minus", func(n int) string { return "return " + strings.Repeat("- ", n) + "1" }, 199, one},
	{"concatenation (right-associative)", func(n int) string { return "return " + strings.Repeat(`"a" .. `, n-1) + `"a"` }, 200, one},
	{"if blocks", func(n int) string {
		return strings.Repeat("if true then\n", n) + "return 1\n" + strings.Repeat("end\n", n)
	}, 199, func(n int) int { return n + 1 }},
	{"do blocks", func(n int) string { return strings.Repeat("do ", n) + strings.Repeat("end ", n) + "return 1" }, 200, one},
	{"functions", func(n int) string {
		return "return " + strings.Repeat("function() return ", n) + "1" + strings.Repeat(" end", n)
	}, 100, one},
	{"named fields (read ahead over lines)", func(n int) string { return "return " + strings.Repeat("{x=\n", n) + "1" + strings.Repeat("}", n) }, 199, func(n int) int { return n + 1 }},
	{"call arguments", func(n int) string { return "return " + strings.Repeat("tostring(", n) + "1" + strings.Repeat(")", n) }, 199, one},
}

func one(int) int    { return 1 }
func same(n int) int { return n }

// Admission refuses a body nested too deep with Lua 5.1's own message and
// line, where one Redis does, and one level before: the masters run the
// body in the wrapper's function, one level deeper.
func TestAdmitRefusesNestingAsLua(t *testing.T) {
	for _, sh := range levelShapes {
		t.Run(sh.name, func(t *testing.T) {
			for _, n := range []int{sh.redisFirst - 1, sh.redisFirst, sh.redisFirst + 1, 5000} {
				_, err := Admit([]byte(sh.build(n)))
				var r *Refusal
				if !errors.As(err, &r) || !r.Compile || r.Reason != tooManyLevels {
					t.Fatalf("Admit(%d levels) = %v; want %q", n, err, tooManyLevels)
				}
				if n == sh.redisFirst {
					want := fmt.Sprintf("ERR Error compiling script (new function): user_script:%d: chunk has too many syntax levels", sh.redisLine(n))
					if got := r.CompileError(); got != want {
						t.Errorf("Admit(%d levels) = %q; want Redis's %q", n, got, want)
					}
				}
			}
			if _, err := Admit([]byte(sh.build(sh.redisFirst - 2))); err != nil {
				t.Errorf("Admit(%d levels) = %v; want admitted", sh.redisFirst-2, err)
			}
		})
	}
}

// A body as large as a command may carry costs admission a bounded
// amount, whatever its shape. One too deep, over MaxBody or over MaxTokens
// is refused after one pass of a lexer that allocates nothing: the 510 KB
// of nested tables that took gopher-lua's parser to a gigabyte and 1.6 s
// of CPU now cost nothing but that pass. An admitted body costs
// gopher-lua's scanner, which allocates a buffer for every token, and its
// tree, twice (once more to check the reprint): about 500 bytes a token,
// 4 MiB at most.
func TestAdmitCostIsBounded(t *testing.T) {
	const big = 510 << 10
	tests := []struct {
		name     string
		body     string
		maxAlloc uint64
	}{
		{"510 KB of nested tables", "return " + strings.Repeat("{", big/2) + strings.Repeat("}", big/2), 64 << 10},
		{"510 KB of a flat list", "return {" + strings.Repeat("1,", big/2) + "}", 64 << 10},
		{"510 KB of nested tables 150 deep", strings.Repeat("local a = "+strings.Repeat("{", 150)+strings.Repeat("}", 150)+"\n", big/312), 64 << 10},
		{"64 KiB of a flat list", "return {" + strings.Repeat("1,", MaxBody/2-8) + "}", 64 << 10},
		{"a flat list of MaxTokens", "return {" + strings.Repeat("1,", MaxTokens/2-2) + "}", 5 << 20},
		{"MaxTokens of nested tables 150 deep", strings.Repeat("local a = "+strings.Repeat("{", 150)+strings.Repeat("}", 150)+"\n", MaxTokens/303), 5 << 20},
		{"MaxTokens of a left-associative sum", "return " + strings.Repeat("1 + ", MaxTokens/2-2) + "1", 5 << 20},
		{"MaxTokens of locals and calls", strings.Repeat("local v = redis.call('get', KEYS[1])\n", MaxTokens/14), 5 << 20},
	}
	for _, tt := range tests {
		body := []byte(tt.body)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := Admit(body)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s (%d bytes): %d bytes allocated: %v", tt.name, len(body), alloc, err)
		if alloc > tt.maxAlloc && !raceEnabled {
			t.Errorf("Admit(%s) allocated %d bytes; want at most %d", tt.name, alloc, tt.maxAlloc)
		}
	}
}
