package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
)

// TestReprintedProgramsBehaveAlike runs random programs (every statement
// form, locals and closures, loops, calls, every operator with and
// without parentheses, strings in every quoting, comments and line breaks
// of every kind between tokens) on a real redis-server as sent and as
// admission re-printed them: the values they record and the errors of
// their pcalls, line numbers included, must be the same.
func TestReprintedProgramsBehaveAlike(t *testing.T) {
	r := direct(t, startRedis(t).Addr)
	rng := rand.New(rand.NewPCG(5, 10))
	for i := range 150 {
		g := &progGen{rng: rng}
		body := g.program()
		a, err := script.Admit([]byte(body))
		if err != nil {
			t.Fatalf("program %d refused: %v\n%s", i, err, body)
		}
		again, err := script.Admit([]byte(a.Source))
		if err != nil || again.Source != a.Source {
			t.Fatalf("program %d: its Source does not print as itself (%v)\n%q\n%q\nsent:\n%q", i, err, a.Source, again.Source, body)
		}
		want, got := evalRecord(t, r, body), evalRecord(t, r, a.Source)
		if got != want {
			t.Fatalf("program %d: recorded %q as sent, %q as re-printed\nsent:\n%s\nre-printed:\n%s", i, want, got, body, a.Source)
		}
	}
}

// evalRecord runs body and returns what it recorded, or its error with
// the script's digest left out.
func evalRecord(t *testing.T, r *redis.Client, body string) string {
	t.Helper()
	rec, err := r.Eval(t.Context(), body, []string{"k"}, "a1").StringSlice()
	if err != nil {
		return "error: " + scriptSHA.ReplaceAllString(err.Error(), "script: <sha>")
	}
	return strings.Join(rec, "\x00")
}

// progGen writes one random program that records values in acc.
type progGen struct {
	rng    *rand.Rand
	b      strings.Builder
	scopes [][]string      // the locals in scope
	fns    map[string]bool // the locals that are functions
	n      int             // names made
	loops  int
}

func (g *progGen) program() string {
	// show, not tostring: a table's or a function's address differs
	// from run to run.
	g.w("local acc = {} local function show(v) local t = type(v) if t == 'table' or t == 'function' then return t end return tostring(v) end")
	g.scopes = [][]string{{"acc"}}
	for range 4 + g.rng.IntN(6) {
		g.stmt(3)
	}
	g.ws()
	g.w("return acc")
	return g.b.String()
}

func (g *progGen) w(s string) { g.b.WriteString(s) }

// ws separates two tokens: spaces, tabs, line ends of every kind,
// comments short and long.
func (g *progGen) ws() {
	g.w([]string{" ", " ", "\n", "\r\n", "\r", "\t", " --c\n", " --[[x\r\n]]", " --[==[ ]] ]==]\n", "\n\n"}[g.rng.IntN(10)])
}

func (g *progGen) name() string {
	g.n++
	return fmt.Sprintf("v%d", g.n)
}

func (g *progGen) declare(n string) { g.scopes[len(g.scopes)-1] = append(g.scopes[len(g.scopes)-1], n) }

func (g *progGen) local() string {
	var all []string
	for _, s := range g.scopes {
		all = append(all, s...)
	}
	return all[g.rng.IntN(len(all))]
}

func (g *progGen) block(depth int) {
	g.scopes = append(g.scopes, nil)
	for range g.rng.IntN(3) {
		g.stmt(depth - 1)
	}
	g.scopes = g.scopes[:len(g.scopes)-1]
}

func (g *progGen) stmt(depth int) {
	g.ws()
	k := g.rng.IntN(14)
	if depth <= 0 {
		k = k % 4
	}
	switch k {
	case 0, 1: // record a value, or the error of computing it
		g.w("acc[#acc + 1] = show(")
		g.safe(3)
		g.w(")")
	case 2:
		n := g.name()
		g.w("local " + n + " =")
		g.ws()
		g.safe(2)
		g.declare(n)
	case 3:
		if l := g.local(); l != "acc" && !g.fns[l] { // admission refuses a function reassigned
			g.w(l + " = ")
			g.safe(2)
		} else {
			// A statement that begins with "(": Lua 5.1 refuses one on a
			// line of its own after a name or ")" (ambiguous syntax), so the
			// client ends the statement before with ";" (which Lua 5.1 takes
			// only after a statement).
			g.w(`tostring(1);("x"):upper()`)
		}
	case 4:
		n := g.name()
		if g.rng.IntN(2) == 0 {
			g.w("local function " + n + "(p, q)")
		} else {
			g.w("local " + n + " = function(p, q)")
		}
		g.scopes = append(g.scopes, []string{"p", "q"})
		saved := g.loops
		g.loops = 0
		g.block(depth)
		g.ws()
		g.w("return ")
		g.expr(2)
		g.loops = saved
		g.scopes = g.scopes[:len(g.scopes)-1]
		g.ws()
		g.w("end")
		g.declare(n)
		if g.fns == nil {
			g.fns = map[string]bool{}
		}
		g.fns[n] = true
		g.ws()
		g.w("acc[#acc + 1] = show(select(2, pcall(" + n + ", ")
		g.expr(1)
		g.w(", ")
		g.expr(1)
		g.w(")))")
	case 5:
		g.w("if ")
		g.safe(2)
		g.w(" then")
		g.block(depth)
		if g.rng.IntN(2) == 0 {
			g.ws()
			g.w("elseif ")
			g.safe(2)
			g.w(" then")
			g.block(depth)
		}
		if g.rng.IntN(2) == 0 {
			g.ws()
			g.w("else")
			g.block(depth)
		}
		g.ws()
		g.w("end")
	case 6:
		i := g.name()
		g.w(fmt.Sprintf("for %s = 1, %d do", i, g.rng.IntN(4)))
		g.loopBody(depth, i)
		g.w("end")
	case 7:
		v := g.name()
		g.w("for _, " + v + " in ipairs({")
		g.safe(1)
		g.w(", ")
		g.safe(1)
		g.w("}) do")
		g.loopBody(depth, v)
		g.w("end")
	case 8:
		g.w("do")
		g.block(depth)
		g.ws()
		g.w("end")
	case 9:
		// Admission takes no while or repeat (a loop that may not end):
		// a numeric for, backwards, instead.
		i := g.name()
		g.w(fmt.Sprintf("for %s = %d, -1, -1 do", i, g.rng.IntN(2)))
		g.loopBody(depth, i)
		g.w("end")
	case 10:
		v := g.name()
		g.w("for " + v + " in pairs({")
		g.safe(1)
		g.w("}) do")
		g.loopBody(depth, v)
		g.w("end")
	case 11:
		if g.loops > 0 && g.rng.IntN(3) == 0 {
			g.w("if ")
			g.safe(1)
			g.w(" then break end")
		} else {
			g.w("tostring(")
			g.safe(1)
			g.w(")")
		}
	case 12:
		g.w("tostring(2);(function(...) acc[#acc + 1] = select('#', ...) end)(")
		g.safe(1)
		g.w(")")
	default:
		g.w("acc[#acc + 1] = ")
		g.str(fmt.Sprintf("line %d", g.rng.IntN(100)))
	}
}

func (g *progGen) loopBody(depth int, v string) {
	var scope []string
	if v != "" {
		scope = append(scope, v)
	}
	g.scopes = append(g.scopes, scope)
	g.loops++
	for range g.rng.IntN(3) {
		g.stmt(depth - 1)
	}
	g.loops--
	g.scopes = g.scopes[:len(g.scopes)-1]
	g.ws()
}

// str writes s quoted one of Lua's ways.
func (g *progGen) str(s string) {
	switch g.rng.IntN(5) {
	case 0:
		g.w(`'` + s + `'`)
	case 1:
		g.w("[[" + s + "]]")
	case 2:
		g.w("[==[\r\n" + s + "]]]==]")
	case 3:
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, "\\%d", s[i])
		}
		g.w(`"` + b.String() + `\r\n\"\\"`)
	default:
		g.w(`"` + s + `"`)
	}
}

// safe writes an expression whose error, if any, is its value: the
// program goes on to the end.
func (g *progGen) safe(depth int) {
	g.w("select(2, pcall(function() return ")
	g.expr(depth)
	g.w(" end))")
}

var genOps = []string{"or", "and", "<", ">", "<=", ">=", "~=", "==", "..", "+", "-", "*", "/", "%", "^"}

func (g *progGen) expr(depth int) {
	k := g.rng.IntN(12)
	if depth <= 0 {
		k %= 5
	}
	switch k {
	case 0:
		g.w([]string{"0", "1", "2", "7", "0.5", "1e3", "0x1F", "3."}[g.rng.IntN(8)])
	case 1:
		g.str([]string{"2", "ab", "x y", ""}[g.rng.IntN(4)])
	case 2:
		g.w([]string{"true", "false", "nil", "ARGV[1]", "KEYS[1]", "#KEYS"}[g.rng.IntN(6)])
	case 3, 4:
		g.w(g.local())
	case 5:
		g.w([]string{"-", "not", "#"}[g.rng.IntN(3)])
		g.ws()
		g.expr(depth - 1)
	case 6:
		g.w("(")
		g.expr(depth - 1)
		g.w(")")
	case 7:
		g.w("show(")
		g.expr(depth - 1)
		g.w(")")
	case 8:
		g.w("{")
		g.expr(depth - 1)
		g.w(", k = ")
		g.expr(depth - 1)
		g.w("}")
	default:
		paren := g.rng.IntN(2) == 0
		if paren {
			g.w("(")
		}
		g.expr(depth - 1)
		g.ws()
		g.w(genOps[g.rng.IntN(len(genOps))])
		g.ws()
		g.expr(depth - 1)
		if paren {
			g.w(")")
		}
	}
}
