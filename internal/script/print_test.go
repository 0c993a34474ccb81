package script

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// printTable: what the masters run for a body, line for line.
var printTable = []struct {
	name, body, source string
}{
	{"comments and a long-bracket string go; lines stay (a string that spanned lines is printed on its last, where Lua 5.1 places what uses it)",
		"local a = 1 --[==[ x\n y ]==] local b = [[\nline\nz]]\nreturn redis.call(\"GET\", KEYS[1]) -- done",
		"local a = 1\nlocal b =\n\n\"line\\010z\"\nreturn redis.call(\"GET\", KEYS[1])"},
	{"\\r and \\r\\n line ends count as Lua counts them",
		"local a = 1\r\nlocal b = 2\rlocal c = 3\n\rreturn a + b + c",
		"local a = 1\nlocal b = 2\nlocal c = 3\nreturn a + b + c"},
	{"escapes: every byte outside printable ASCII, \" and \\ as \\ddd",
		`return "a\"b\\c\n\0651\t", 'it\'s', '\z\x41'`,
		`return "a\034b\092c\010A1\009", "it's", "zx41"`},
	{"numbers in decimal",
		"return 0x10 + 1e3 + .5 + 5. + 1E-7 + 007 + 123456789012",
		"return 16 + 1000 + 0.5 + 5 + 1e-07 + 7 + 123456789012"},
	{"parentheses where precedence needs them, not where it does not",
		"local x = ((1 + 2)) * 3 - -4 ^ 2 .. ('a' .. 'b') local y = not (x == 1) and #KEYS or ((x)) return (-2) ^ 2, 2 ^ 3 ^ 2, (2 ^ 3) ^ 2, (1 - 2) - 3, 1 - (2 - 3)",
		"local x = (1 + 2) * 3 - -4 ^ 2 .. \"a\" .. \"b\" local y = not (x == 1) and #KEYS or x return (-2) ^ 2, 2 ^ 3 ^ 2, (2 ^ 3) ^ 2, 1 - 2 - 3, 1 - (2 - 3)"},
	{"one result of a parenthesized call or vararg stays one",
		"local function g(...) return (...), ..., (tostring(1)) end return g(1, 2)",
		"local function g(...) return (...), ..., (tostring(1)) end return g(1, 2)"},
	{"local function and local f = function stay apart (Lua 5.1 scopes them apart)",
		"local function f(n) return n end local g = function(n) return n end return f(1), g(2)",
		"local function f(n) return n end local g = function(n) return n end return f(1), g(2)"},
	{"a statement that begins with ( follows a ;",
		"local s = 'x'\n('y'):upper() return s",
		"local s = \"x\";\n(\"y\"):upper() return s"},
	{"table fields, indexes and methods",
		"local t = {1, [2] = 3, x = 4; ['y z'] = 5, ['goto'] = 6, tostring(7)} return t.x, t['y z'], t['goto'], ('a'):rep(2), #t",
		"local t = {1, [2] = 3, x = 4, [\"y z\"] = 5, [\"goto\"] = 6, tostring(7)} return t.x, t[\"y z\"], t[\"goto\"], (\"a\"):rep(2), #t"},
	{"call sugar becomes a plain call",
		"return tostring'a', type{}",
		"return tostring(\"a\"), type({})"},
	{"elseif, else if, loops",
		"if ARGV[1] then return 1 elseif ARGV[2] then return 2 else if ARGV[3] then return 3 end end\nfor i = 1, 10, 2 do end for k, v in pairs(KEYS) do break end for i = #KEYS, 1, -1 do end do local q = 1 end",
		"if ARGV[1] then return 1 elseif ARGV[2] then return 2 else if ARGV[3] then return 3 end end\nfor i = 1, 10, 2 do end for k, v in pairs(KEYS) do break end for i = #KEYS, 1, -1 do end do local q = 1 end"},
	{"what gopher-lua reads where Lua 5.1 refuses is run as gopher-lua read it",
		"local a = 5;; return [[a [[ b]]",
		"local a = 5 return \"a [[ b\""},
	{"a unary operation in parentheses over lines prints back as itself",
		"return # --c\n(not --[==[ ]] ]==]\n0.5), (-\nKEYS[1]) ^ 2",
		"return #not\n\n0.5, (-\nKEYS[1]) ^ 2"},
	{"a multi-line call keeps its lines",
		"redis.call('SET',\n  KEYS[1],\n  ARGV[1],\n  'PX', ARGV[2])",
		"redis.call(\"SET\",\nKEYS[1],\nARGV[1],\n\"PX\", ARGV[2])"},
}

func TestAdmitSourceIsThePrintedTree(t *testing.T) {
	for _, tt := range printTable {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Admit([]byte(tt.body))
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if a.Source != tt.source {
				t.Errorf("Source = %q; want %q", a.Source, tt.source)
			}
			wantFixedPoint(t, tt.body, a)
		})
	}
}

// TestAdmitSourceIsAFixedPoint: every admitted body's Source is admitted
// with the same literals, and prints as itself.
func TestAdmitSourceIsAFixedPoint(t *testing.T) {
	for _, tt := range admitTable {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Admit([]byte(tt.body))
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			wantFixedPoint(t, tt.body, a)
		})
	}
}

func wantFixedPoint(t *testing.T, body string, a Admission) {
	t.Helper()
	again, err := Admit([]byte(a.Source))
	switch {
	case err != nil:
		t.Fatalf("Admit(%q) admitted; Admit of its Source %q: %v", body, a.Source, err)
	case again.Source != a.Source:
		t.Fatalf("Admit(%q).Source = %q, whose Source is %q", body, a.Source, again.Source)
	case !slices.Equal(again.Literals, a.Literals):
		t.Fatalf("Admit(%q).Literals = %q; its Source's are %q", body, a.Literals, again.Literals)
	}
}

// TestAdmitRandomExpressionsPrintBack: expressions over every operator,
// written with a parenthesis around each operation, print back (with only
// the parentheses Lua 5.1's priorities need) to the same tree, and the
// printed text is a fixed point. Redis's own reading of such expressions
// is compared in integration (TestReprintedPrecedenceIsLua51s).
func TestAdmitRandomExpressionsPrintBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	ops := []string{"or", "and", "<", ">", "<=", ">=", "~=", "==", "..", "+", "-", "*", "/", "%", "^"}
	leaves := []string{"1", "2.5", `"x"`, "true", "nil", "ARGV[1]", "#KEYS", "tostring(3)", "(tostring(4))"}
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := rng.IntN(10); {
		case depth == 0 || k < 2:
			return leaves[rng.IntN(len(leaves))]
		case k < 4:
			return "(" + []string{"- ", "not ", "#"}[rng.IntN(3)] + gen(depth-1) + ")"
		default:
			return "(" + gen(depth-1) + " " + ops[rng.IntN(len(ops))] + " " + gen(depth-1) + ")"
		}
	}
	for range 2000 {
		body := "return " + gen(6)
		a, err := Admit([]byte(body))
		if err != nil {
			t.Fatalf("Admit(%q): %v", body, err)
		}
		wantFixedPoint(t, body, a)
	}
}
