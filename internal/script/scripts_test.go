package script

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/gopher-lua/parse"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
)

// catalogueDigests are the SHA-1s CLIENTS.md section 1 lists, checked
// there against what the clients send and what SCRIPT LOAD returns. The
// distlock one is sha1sum of the redis.io text.
var catalogueDigests = map[string]string{
	"redsync delete":          "e950836ed1e694540c503ef9972b8de518044d3b",
	"redsync touch":           "d75bb8b5bd13532ddedd17762e772346e39b321e",
	"redsync touchWithSetNX":  "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79",
	"redislock obtain":        "80a1b5f2cfccec3b7119ba7721d2127682b691a7",
	"redislock release":       "cf0e94b2e9ffc7e04395cf88f7583fc309985910",
	"redislock refresh":       "a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf",
	"redislock pttl":          "6484da7d58920897fdc22b7f9afd1a3d47524ea8",
	"redislock v0.10 obtain":  "eb0c00d98f6f33b4262419a509002884540f30be",
	"redislock v0.10 release": "9470c810040e272ee6c579d8d4331aaf6332a7b1",
	"redislock v0.10 refresh": "5a22d7e8431313862816d4416b5e46dd70fc340d",
	"redislock v0.10 pttl":    "66e1084c2d842a7e8c271925aae90219fac4e129",
	"redis-py release":        "c3f8721cbb97f72bc19e972846bd7aaf91901658",
	"redis-py extend":         "a4e8783852e6b949f9ef3a97212805108459a890",
	"redis-py reacquire":      "1cac51482acf5858da00f6d685d68f886cd6b6b2",
	"redlock v5 acquire":      "96da70f7716f27d278a5218544df37fd8b0a5e4c",
	"redlock v5 extend":       "aed6f382e410db8ba7926d4e5e9aab410bf2a78a",
	"redlock v5 release":      "e4612211c9f8f51c257e26e056b0a654b3187242",
	"redlock v4 lock":         "e5a322e2634ef59a516e8ea150cb085afafee684",
	"redlock v4 extend":       "ce46f80993d5dac20dd066eb301a4e37994bdbed",
	"redlock v4 unlock":       "0f0f23b9048b36752b5be114f357ba083449f908",
	"distlock release":        "647c65a442733a1aa440f99908d249d13b4d6c4a",
	"redisson lock":           "149c5a8bf18676fd99e9e6e24923bd64d9b62f94",
	"redisson unlock":         "6866459238a13a701d42f4971f12d9f3a50e2442",
	"redisson renew":          "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635",
	"redisson force unlock":   "605e338249a7a1d40df83b04f7658354f883b41b",
}

func allKnownScripts() []knownScript {
	return slices.Concat(knownScripts, digestOnlyScripts, redissonScripts)
}

func TestKnownScriptDigestsMatchCatalogue(t *testing.T) {
	if got, want := len(allKnownScripts()), len(catalogueDigests); got != want {
		t.Fatalf("len(knownScripts)+len(redissonScripts) = %d; want %d", got, want)
	}
	for _, k := range allKnownScripts() {
		t.Run(k.script.Name, func(t *testing.T) {
			want, ok := catalogueDigests[k.script.Name]
			if !ok {
				t.Fatalf("no catalogue digest for %q", k.script.Name)
			}
			if got := SHA1Hex([]byte(k.src)); got != want {
				t.Errorf("SHA1Hex(%s) = %s; want %s", k.script.Name, got, want)
			}
		})
	}
}

// TestKnownScriptFields spells out each catalogue entry, so that a change
// to the table has to be made twice.
func TestKnownScriptFields(t *testing.T) {
	release := Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}
	extend := Script{Op: OpExtend, TokenArg: 1, TTLArg: 2, Success: SuccessOne}
	multi := func(op Op, ttl int) Script {
		return Script{Op: op, MultiKey: true, TokenArg: 1, TTLArg: ttl, Success: SuccessKeyCount}
	}
	want := map[string]Script{
		"redsync delete":          {Op: OpRelease, TokenArg: 1, Success: SuccessOne, HasMissing: true, Missing: -1},
		"redsync touch":           extend,
		"redsync touchWithSetNX":  {Op: OpExtendOrAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOne},
		"redislock obtain":        {Op: OpAcquire, TokenArg: 1, PrefixArg: 2, TTLArg: 3, Success: SuccessOK, FailNil: true},
		"redislock release":       release,
		"redislock refresh":       extend,
		"redislock pttl":          {Op: OpPTTL, TokenArg: 1, Success: SuccessPTTL, Fail: -3},
		"redislock v0.10 obtain":  {Op: OpAcquire, MultiKey: true, TokenArg: 1, PrefixArg: 2, TTLArg: 3, Success: SuccessOK, FailNil: true},
		"redislock v0.10 release": {Op: OpRelease, MultiKey: true, TokenArg: 1, Success: SuccessOK, FailNil: true},
		"redislock v0.10 refresh": {Op: OpExtend, MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessOK, FailNil: true},
		"redislock v0.10 pttl":    {Op: OpPTTL, MultiKey: true, TokenArg: 1, Success: SuccessMinPTTL, FailNil: true},
		"redis-py release":        release,
		"redis-py extend":         {Op: OpExtend, TokenArg: 1, TTLArg: 2, ModeArg: 3, Success: SuccessOne},
		"redis-py reacquire":      extend,
		"redlock v5 acquire":      multi(OpAcquire, 2),
		"redlock v5 extend":       multi(OpExtend, 2),
		"redlock v5 release":      multi(OpRelease, 0),
		"redlock v4 lock":         multi(OpAcquire, 2),
		"redlock v4 extend":       multi(OpExtend, 2),
		"redlock v4 unlock":       multi(OpRelease, 0),
		"distlock release":        release,
	}
	for _, k := range slices.Concat(knownScripts, digestOnlyScripts) {
		w, ok := want[k.script.Name]
		if !ok {
			t.Errorf("knownScripts has %q; want one of the catalogue names", k.script.Name)
			continue
		}
		w.Name = k.script.Name
		if k.script != w {
			t.Errorf("knownScripts[%q] = %+v; want %+v", k.script.Name, k.script, w)
		}
	}
}

func TestClassifySHA(t *testing.T) {
	for _, k := range allKnownScripts() {
		sha := SHA1Hex([]byte(k.src))
		wantOK := k.script.Op != OpUnknown
		for _, s := range []string{sha, strings.ToUpper(sha)} {
			if got, ok := ClassifySHA(s); got != k.script || ok != wantOK {
				t.Errorf("ClassifySHA(%s) = %+v, %v; want %+v, %v", s, got, ok, k.script, wantOK)
			}
		}
	}
	for _, sha := range []string{
		"",
		"0000000000000000000000000000000000000000",
		"e950836ed1e694540c503ef9972b8de518044d3",   // 39 digits
		"e950836ed1e694540c503ef9972b8de518044d3b0", // 41 digits
		"e950836ed1e694540c503ef9972b8de518044d3g",
		" e950836ed1e694540c503ef9972b8de518044d3",
	} {
		if got, ok := ClassifySHA(sha); got != (Script{}) || ok {
			t.Errorf("ClassifySHA(%q) = %+v, %v; want {}, false", sha, got, ok)
		}
	}
}

func TestClassifySHADoesNotAllocate(t *testing.T) {
	sha := SHA1Hex([]byte(knownScripts[0].src))
	for _, s := range []string{sha, strings.ToUpper(sha)} {
		if n := testing.AllocsPerRun(100, func() { ClassifySHA(s) }); n != 0 {
			t.Errorf("ClassifySHA(%s) allocates %v times; want 0", s, n)
		}
	}
}

func TestClassifyScriptKnownBySHA(t *testing.T) {
	for _, k := range allKnownScripts() {
		got, ok := ClassifyScript([]byte(k.src))
		if wantOK := k.script.Op != OpUnknown; got != k.script || ok != wantOK {
			t.Errorf("ClassifyScript(%s) = %+v, %v; want %+v, %v", k.script.Name, got, ok, k.script, wantOK)
		}
	}
}

// TestDigestOnlyScriptsRespelledAreUnknown: a digest-only script changed
// by one space is no lock script the proxy knows (admission then refuses
// its MSETNX or MGET).
func TestDigestOnlyScriptsRespelledAreUnknown(t *testing.T) {
	for _, k := range digestOnlyScripts {
		if got, ok := ClassifyScript([]byte(k.src + " ")); ok || got != (Script{}) {
			t.Errorf("ClassifyScript(%s respelled) = %+v, %v; want {}, false", k.script.Name, got, ok)
		}
		if _, err := Admit([]byte(k.src)); err == nil {
			t.Errorf("Admit(%s) = nil; want it refused (its MSETNX or MGET is not a lock command)", k.script.Name)
		}
	}
}

// structural is how a script recognised by its shape is reported: as s,
// under the name of its operation.
func structural(s Script) Script {
	s.Name = s.Op.String() + " (structural)"
	return s
}

// TestKnownScriptsMatchTemplates checks that the templates alone, without
// the digest table, recognise every catalogue script as the table does,
// and refuse Redisson's.
func TestKnownScriptsMatchTemplates(t *testing.T) {
	for _, k := range allKnownScripts() {
		if slices.Contains(digestOnlyScripts, k) {
			continue
		}
		got, ok := classifyStructure([]byte(k.src))
		want, wantOK := structural(k.script), true
		if k.script.Op == OpUnknown {
			want, wantOK = Script{}, false
		}
		if got != want || ok != wantOK {
			t.Errorf("classifyStructure(%s) = %+v, %v; want %+v, %v", k.script.Name, got, ok, want, wantOK)
		}
	}
}

var canonicalizeTests = []struct {
	name, src string
	want      string // "" when canonicalize refuses src
}{
	{"else after a return is lifted", `if ARGV[1] then return 1 else return 0 end`, `if ARGV[1] then return 1 end return 0`},
	{"elseif chain", `if ARGV[1] then return 1 elseif ARGV[2] then return 2 else return 3 end`,
		`if ARGV[1] then return 1 end if ARGV[2] then return 2 end return 3`},
	{"else kept when the then part falls through", `if ARGV[1] then redis.call("ping") else return 0 end`,
		`if ARGV[1] then redis.call("ping") else return 0 end return`},
	{"else with a local kept when something follows",
		`if ARGV[1] then return 1 else local x = 1 end redis.call("ping")`,
		`if ARGV[1] then return 1 else local x=1 end redis.call("ping") return`},
	{"else with a local lifted at the end", `if ARGV[1] then return 1 else local x = 1 return x end`,
		`if ARGV[1] then return 1 end local x=1 return x`},
	{"constant operand on the right", `return ARGV[1] == redis.call("get", KEYS[1])`, `return (redis.call("get",KEYS[1])==ARGV[1])`},
	{"literal after KEYS and ARGV", `return 1 ~= ARGV[1]`, `return (ARGV[1]~=1)`},
	{"calls in a fixed order", `return string.sub(ARGV[1],1,2) == redis.call("getrange",KEYS[1],0,1)`,
		`return (redis.call("getrange",KEYS[1],0,1)==string.sub(ARGV[1],1,2))`},
	{"greater than flipped", `return 0 > ARGV[1] or 1 >= ARGV[2]`, `return ((ARGV[1]<0) or (ARGV[2]<=1))`},
	{"two return values", `return ARGV[1], 1`, ``},
	{"not of a comparison folded", `return not (KEYS[1] == ARGV[1])`, `return (KEYS[1]~=ARGV[1])`},
	{"not of anything else kept", `return not ARGV[1]`, `return (not ARGV[1])`},
	{"set options ordered", `redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2], "NX")`,
		`redis.call("set",KEYS[1],ARGV[1],"nx","px",ARGV[2]) return`},
	{"set with a repeated option left alone", `redis.call("SET", KEYS[1], ARGV[1], "NX", "NX")`,
		`redis.call("set",KEYS[1],ARGV[1],"NX","NX") return`},
	{"aliases inlined", `local k = KEYS[1] local t = ARGV[1] return redis.call("get", k) == t`,
		`return (redis.call("get",KEYS[1])==ARGV[1])`},
	{"assigned alias kept", `local n = ARGV[2] n = n + 1 return n`, `local n=ARGV[2] n=(n+1) return n`},
	{"pcall and case", `return redis.pcall("GET", KEYS[1])`, `return redis.call("get",KEYS[1])`},
	{"parentheses dropped", `return ((ARGV[1]))`, `return ARGV[1]`},
	{"sibling loops may reuse names", `for i, k in ipairs(KEYS) do end for i, k in ipairs(KEYS) do end`,
		`for i,k in ipairs(KEYS) do end for i,k in ipairs(KEYS) do end return`},
	{"nested loops may not", `for i, k in ipairs(KEYS) do for i, j in ipairs(KEYS) do end end`, ``},
	{"shadowing", `local v = 1 local v = 2 return v`, ``},
	{"unknown global", `return os.time()`, ``},
	{"global assignment", `x = 1`, ``},
	{"local named like a global", `local redis = 1`, ``},
	{"parenthesised assignment", `local x = 1 (x) = 2`, ``},
	{"method call", `return ARGV[1]:upper()`, ``},
	{"field by its name in brackets", `return redis["pcall"]("GET", KEYS[1])`, `return redis.call("get",KEYS[1])`},
	{"index by a string that is no name", `return ARGV["a b"]`, `return ARGV["a b"]`},
	{"two names in one local", `local a, b = 1, 2 return a`, ``},
	{"two targets in one assignment", `local a = 1 local b = 2 a, b = b, a return a`, ``},
	{"numeric for", `for i = 1, 2 do end`, ``},
	{"vararg", `return ...`, ``},
	{"do block", `do return 1 end`, ``},
	{"else if is elseif", `if ARGV[1] then return 1 else if ARGV[2] then return 2 end end return 3`,
		`if ARGV[1] then return 1 end if ARGV[2] then return 2 end return 3`},
	{"refused by the front end (a numeral run into a name)", `return 5type`, ``},
}

func TestCanonicalize(t *testing.T) {
	for _, tt := range canonicalizeTests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if tree, ok := parseScript([]byte(tt.src), false); ok {
				got = dumpLua(tree)
			}
			if got != tt.want {
				t.Errorf("canonicalize(%q) = %q; want %q", tt.src, got, tt.want)
			}
		})
	}
}

// dumpLua writes a tree as Lua, with every operation in parentheses.
func dumpLua(n *luaNode) string {
	kids := make([]string, len(n.kids))
	for i, k := range n.kids {
		kids[i] = dumpLua(k)
	}
	switch n.kind {
	case nName, nHole, nNum:
		return n.text
	case nNil:
		return "nil"
	case nTrue:
		return "true"
	case nFalse:
		return "false"
	case nStr:
		return lua.Quote(n.text)
	case nIndex:
		return kids[0] + "[" + kids[1] + "]"
	case nField:
		return kids[0] + "." + n.text
	case nCall:
		return kids[0] + "(" + strings.Join(kids[1:], ",") + ")"
	case nBinary:
		if n.text == "and" || n.text == "or" {
			return "(" + kids[0] + " " + n.text + " " + kids[1] + ")"
		}
		return "(" + kids[0] + n.text + kids[1] + ")"
	case nUnary:
		if n.text == "not" {
			return "(not " + kids[0] + ")"
		}
		return "(" + n.text + kids[0] + ")"
	case nLocal:
		if len(kids) == 1 {
			return "local " + kids[0]
		}
		return "local " + kids[0] + "=" + kids[1]
	case nAssign:
		return kids[0] + "=" + kids[1]
	case nIf:
		s := "if " + kids[0] + " then " + kids[1]
		if len(kids) == 3 {
			s += " else " + kids[2]
		}
		return strings.ReplaceAll(s+" end", "  ", " ")
	case nForIn:
		return strings.ReplaceAll("for "+kids[0]+","+kids[1]+" in "+kids[2]+" do "+kids[3]+" end", "  ", " ")
	case nReturn:
		return strings.TrimSpace("return " + strings.Join(kids, ""))
	}
	return strings.Join(kids, " ") // a block
}

// spelling says how respell writes out a script's tokens.
type spelling struct {
	name     string
	sep      string // between tokens (before "(" always one space)
	quote    byte   // around strings
	upperCmd bool   // redis.call("GET", ...)
	pcall    bool   // redis.pcall
	parenIf  bool   // if (cond) then
	prefix   string
	suffix   string
}

var spellings = []spelling{
	{name: "one line", sep: " ", quote: '"'},
	{name: "single quotes", sep: " ", quote: '\''},
	{name: "upper-case commands", sep: " ", quote: '"', upperCmd: true},
	{name: "pcall", sep: " ", quote: '"', pcall: true},
	{name: "re-indented", sep: "\n\t  ", quote: '"'},
	{name: "comments", sep: " --[==[ note ]==] ", quote: '"', prefix: "-- lock script\n--[[ by\nhand ]]\n", suffix: " -- done\n"},
	{name: "parenthesised conditions", sep: " ", quote: '"', parenIf: true},
	{name: "trailing semicolon", sep: "  ", quote: '"', suffix: ";"},
	{name: "everything", sep: "\r\n    --x\n ", quote: '\'', upperCmd: true, pcall: true, parenIf: true,
		prefix: "--[[\n]]", suffix: ";\n"},
}

// testToken is one token of a script, as gopher-lua's scanner reads it.
type testToken struct {
	str  bool   // a string literal; text is its value
	text string // as written, or the string's value
}

// scanForTest splits src into tokens with gopher-lua's scanner.
func scanForTest(t *testing.T, src string) []testToken {
	t.Helper()
	sc := parse.NewScanner(strings.NewReader(src), "script")
	lx := &parse.Lexer{}
	var toks []testToken
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			t.Fatalf("scan %q: %v", src, err)
		}
		if tok.Type == parse.EOF {
			return toks
		}
		text := tok.Str
		if text == "" && tok.Type < 128 {
			text = string(rune(tok.Type)) // "." has no Str
		}
		toks = append(toks, testToken{str: tok.Type == parse.TString, text: text})
		lx.PrevTokenType = tok.Type
	}
}

// respell writes src's tokens out again as sp says.
func respell(t *testing.T, src string, sp spelling) string {
	t.Helper()
	toks := scanForTest(t, src)
	is := func(i int, text string) bool { return i >= 0 && !toks[i].str && toks[i].text == text }
	var b strings.Builder
	b.WriteString(sp.prefix)
	inCond := false
	for i, tk := range toks {
		redisCall := is(i-1, ".") && is(i-2, "redis") && (tk.text == "call" || tk.text == "pcall")
		switch {
		case i == 0:
		case is(i, "("):
			b.WriteString(" ")
		default:
			b.WriteString(sp.sep)
		}
		text := tk.text
		switch {
		case tk.str:
			if sp.upperCmd && is(i-1, "(") && is(i-4, "redis") {
				text = strings.ToUpper(text)
			}
			text = quoteWith(text, sp.quote)
		case redisCall && sp.pcall:
			text = "pcall"
		case is(i, "then") && inCond:
			b.WriteString(")")
			inCond = false
		}
		b.WriteString(text)
		if sp.parenIf && (is(i, "if") || is(i, "elseif")) {
			b.WriteString(" (")
			inCond = true
		}
	}
	b.WriteString(sp.suffix)
	return b.String()
}

// quoteWith quotes s for Lua 5.1 with the quote character q.
func quoteWith(s string, q byte) string {
	var b strings.Builder
	b.WriteByte(q)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == q || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03d", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// TestClassifyScriptVariants derives variants of every catalogue script
// mechanically; each must be recognised by shape as the original is.
func TestClassifyScriptVariants(t *testing.T) {
	for _, k := range knownScripts {
		want := structural(k.script)
		adm, err := Admit([]byte(k.src))
		if err != nil {
			t.Fatalf("Admit(%s): %v", k.script.Name, err)
		}
		variants := map[string]string{"reprint": adm.Source}
		for _, sp := range spellings {
			variants[sp.name] = respell(t, k.src, sp)
		}
		for name, body := range variants {
			t.Run(k.script.Name+"/"+name, func(t *testing.T) {
				if body == k.src {
					t.Skip("the same bytes: known by digest")
				}
				if got, ok := ClassifyScript([]byte(body)); got != want || !ok {
					t.Errorf("ClassifyScript(%q) = %+v, %v; want %+v, true", body, got, ok, want)
				}
			})
		}
	}
}

// handWritten are lock scripts written by hand, as applications do.
var handWritten = []struct {
	name string
	body string
	want Script
}{
	{"distlock one-liner with single quotes",
		`if redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"local, upper case, no else",
		`local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"acquire by SET NX PX",
		`if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 else return 0 end`,
		Script{Op: OpAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOne}},
	{"acquire with options reordered, +OK or nil",
		`if redis.call("SET", KEYS[1], ARGV[1], "px", ARGV[2], "nx") then return redis.status_reply("OK") end`,
		Script{Op: OpAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOK, FailNil: true}},
	{"acquire returning SET's reply",
		`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`,
		Script{Op: OpAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOK, FailNil: true}},
	{"acquire by SETNX then PEXPIRE",
		"if redis.call('setnx', KEYS[1], ARGV[1]) == 1 then\n  redis.call('pexpire', KEYS[1], ARGV[2])\n  return 1\nelse\n  return 0\nend",
		Script{Op: OpAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOne}},
	{"acquire negated",
		`if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return -1 end return 1`,
		Script{Op: OpAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOne, Fail: -1}},
	{"comparison written backwards",
		`if ARGV[1] == redis.call("get", KEYS[1]) then return redis.call("del", KEYS[1]) end return 0`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"early return on ~=",
		`if redis.call("get", KEYS[1]) ~= ARGV[1] then return 0 end return redis.call("del", KEYS[1])`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"not (a == b)",
		`if not (redis.call("get", KEYS[1]) == ARGV[1]) then return 0 else redis.call("del", KEYS[1]) return 1 end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"v == false or v ~= token",
		`local v = redis.call("get", KEYS[1]); if v == false or v ~= ARGV[1] then return 0; end; redis.call("del", KEYS[1]); return 1;`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"locals naming KEYS[1] and ARGV[1]",
		"local key = KEYS[1]\nlocal token = ARGV[1]\nif redis.call('get', key) == token then\n  return redis.call('pexpire', key, ARGV[2])\nend\nreturn 0",
		Script{Op: OpExtend, TokenArg: 1, TTLArg: 2, Success: SuccessOne}},
	{"token in ARGV[2], TTL in ARGV[1]",
		`if redis.call("get",KEYS[1]) == ARGV[2] then return redis.call("pexpire",KEYS[1],ARGV[1]) else return 0 end`,
		Script{Op: OpExtend, TokenArg: 2, TTLArg: 1, Success: SuccessOne}},
	{"extend by SET PX",
		`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) else return 0 end`,
		Script{Op: OpExtend, TokenArg: 1, TTLArg: 2, Success: SuccessOK}},
	{"three-way, missing checked first",
		`local v = redis.call("get", KEYS[1]) if not v then return -1 elseif v == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne, HasMissing: true, Missing: -1}},
	{"nil when not held",
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne, FailNil: true}},
	{"false when not held",
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return false end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne, FailNil: true}},
	{"pttl with pcall and another sentinel",
		`if redis.pcall("GET", KEYS[1]) == ARGV[1] then return redis.pcall("PTTL", KEYS[1]) end return -2`,
		Script{Op: OpPTTL, TokenArg: 1, Success: SuccessPTTL, Fail: -2}},
	{"semicolons and parentheses",
		`if (redis.call("get", KEYS[1]) == ARGV[1]) then redis.call("del", KEYS[1]); return 1; end; return 0;`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"touch or SET NX, with a local",
		`local v = redis.call("get", KEYS[1]) if v == ARGV[1] then redis.call("pexpire", KEYS[1], ARGV[2]) return 1 elseif redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end return 0`,
		Script{Op: OpExtendOrAcquire, TokenArg: 1, TTLArg: 2, Success: SuccessOne}},
	{"redis-py extend with 0 > expiration",
		"local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end local expiration = redis.call('pttl', KEYS[1]) if 0 > expiration then return 0 end local newttl = ARGV[2] if ARGV[3] == '0' then newttl = ARGV[2] + expiration end redis.call('pexpire', KEYS[1], newttl) return 1",
		Script{Op: OpExtend, TokenArg: 1, TTLArg: 2, ModeArg: 3, Success: SuccessOne}},
	{"redlock release, renamed",
		`local n = 0 for _, k in ipairs(KEYS) do if redis.call("GET", k) == ARGV[1] then redis.call("DEL", k) n = n + 1 end end return n`,
		Script{Op: OpRelease, MultiKey: true, TokenArg: 1, Success: SuccessKeyCount}},
	{"command name in a long string",
		`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call([[del]],KEYS[1]) else return 0 end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"field read by its name in brackets",
		`if redis["call"]("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`,
		Script{Op: OpRelease, TokenArg: 1, Success: SuccessOne}},
	{"redlock extend by PEXPIRE",
		`for _, k in ipairs(KEYS) do if redis.call("get", k) ~= ARGV[1] then return 0 end end for _, k in ipairs(KEYS) do redis.call("pexpire", k, ARGV[2]) end return #KEYS`,
		Script{Op: OpExtend, MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessKeyCount}},
}

func TestClassifyScriptHandWritten(t *testing.T) {
	for _, tt := range handWritten {
		t.Run(tt.name, func(t *testing.T) {
			want := structural(tt.want)
			if got, ok := ClassifyScript([]byte(tt.body)); got != want || !ok {
				t.Errorf("ClassifyScript(%q) = %+v, %v; want %+v, true", tt.body, got, ok, want)
			}
		})
	}
}

// refused are scripts the proxy must not run as a lock operation.
var refused = []struct{ name, body string }{
	{"empty", ``},
	{"return 1", `return 1`},
	{"flushall", `redis.call("flushall")`},
	{"guarded flushall", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("flushall") end return 0`},
	{"checks KEYS[1], deletes KEYS[2]", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[2]) else return 0 end`},
	{"checks KEYS[2], deletes KEYS[1]", `if redis.call("get",KEYS[2]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"deletes two keys", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1],KEYS[2]) else return 0 end`},
	{"publishes", `if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("publish","ch",ARGV[1]) return redis.call("del",KEYS[1]) else return 0 end`},
	{"deletes when the token differs", `if redis.call("get",KEYS[1]) ~= ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"~= without the early return",
		`local v = redis.call("get",KEYS[1]) if v ~= ARGV[1] then redis.call("incr","n") end redis.call("del",KEYS[1]) return 1`},
	{"returns 0 on a match", `if redis.call("get",KEYS[1]) == ARGV[1] then return 0 end return redis.call("del",KEYS[1])`},
	{"hash field", `if redis.call("hget",KEYS[1],"owner") == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"hash lock", `if redis.call("hexists", KEYS[1], ARGV[2]) == 1 then redis.call("hincrby", KEYS[1], ARGV[2], 1) return 1 end return 0`},
	{"eval", `return redis.call("eval", ARGV[1], 0)`},
	{"loadstring", `return loadstring(ARGV[1])()`},
	{"key name from ARGV", `if redis.call("get",ARGV[2]) == ARGV[1] then return redis.call("del",ARGV[2]) else return 0 end`},
	{"command from ARGV", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call(ARGV[2],KEYS[1]) else return 0 end`},
	{"loop over KEYS in a single-key script",
		`for _, k in ipairs(KEYS) do redis.call("del", k) end if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) end return 0`},
	{"multi-key acquire in one loop (not all or nothing)",
		`for i, key in ipairs(KEYS) do if redis.call("exists", key) == 1 then return 0 end redis.call("set", key, ARGV[1], "PX", ARGV[2]) end return #KEYS`},
	{"multi-key release counting every key",
		`local c = 0 for i, k in ipairs(KEYS) do if redis.call("get", k) == ARGV[1] then redis.call("del", k) end c = c + 1 end return c`},
	{"missing compared with nil (never true in Redis)",
		`local v = redis.call("get",KEYS[1]) if v == ARGV[1] then return redis.call("del",KEYS[1]) elseif v == nil then return -1 else return 0 end`},
	{"missing and held alike", `local v = redis.call("get",KEYS[1]) if v == ARGV[1] then return redis.call("del",KEYS[1]) elseif v == false then return 0 else return 0 end`},
	{"three-way extend", `local v = redis.call("get",KEYS[1]) if v == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) elseif v == false then return -1 else return 0 end`},
	{"failure reads as success", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 1 end`},
	{"TTL is the token", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[1]) else return 0 end`},
	{"extend writes another value", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("set",KEYS[1],ARGV[2],"PX",ARGV[3]) else return 0 end`},
	{"TTL in seconds", `if redis.call("set",KEYS[1],ARGV[1],"NX","EX",ARGV[2]) then return 1 else return 0 end`},
	{"EXPIRE in seconds", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("expire",KEYS[1],ARGV[2]) else return 0 end`},
	{"SET XX is no acquire", `if redis.call("set",KEYS[1],ARGV[1],"XX","PX",ARGV[2]) then return 1 else return 0 end`},
	{"SET without NX is no acquire", `return redis.call("set",KEYS[1],ARGV[1],"PX",ARGV[2])`},
	{"SET with GET", `if redis.call("set",KEYS[1],ARGV[1],"NX","GET","PX",ARGV[2]) then return 1 else return 0 end`},
	{"local KEYS", `local KEYS = ARGV if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"shadowed local", `local v = redis.call("get",KEYS[1]) local v = ARGV[1] if v == ARGV[1] then return redis.call("del",KEYS[1]) end return 0`},
	{"global assignment", `x = 1 if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"unknown global", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return tonumber(os.time()) end`},
	{"escape Lua 5.1 reads differently", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("\x64el",KEYS[1]) else return 0 end`},
	{"missing end", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0`},
	{"ambiguous call across lines", "local v = redis.call\n(\"get\",KEYS[1]) if v == ARGV[1] then return redis.call(\"del\",KEYS[1]) end return 0"},
	{"parenthesised call as a statement (a Lua syntax error)",
		`if redis.call("get",KEYS[1]) == ARGV[1] then (redis.call("del",KEYS[1])) return 1 end return 0`},
	{"dead code after the if", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end redis.call("flushall")`},
	{"shebang flags", "#!lua flags=no-writes\nif redis.call('get',KEYS[1]) == ARGV[1] then return redis.call('del',KEYS[1]) else return 0 end"},
	{"redis-py extend with two failure values",
		"local token = redis.call('get', KEYS[1]) if not token or token ~= ARGV[1] then return 0 end local expiration = redis.call('pttl', KEYS[1]) if expiration < 0 then return -1 end local newttl = ARGV[2] if ARGV[3] == '0' then newttl = ARGV[2] + expiration end redis.call('pexpire', KEYS[1], newttl) return 1"},
	{"ARGV index past the limit", `if redis.call("get",KEYS[1]) == ARGV[65] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"fail is not a literal", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) end return #KEYS`},
	{"while loop", `while true do end`},
	{"function", `local function f() return 1 end return f()`},
	{"table", `local t = {} return redis.call("del", KEYS[1])`},
}

func TestClassifyScriptRefuses(t *testing.T) {
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if got, ok := ClassifyScript([]byte(tt.body)); got != (Script{}) || ok {
				t.Errorf("ClassifyScript(%q) = %+v, %v; want {}, false", tt.body, got, ok)
			}
		})
	}
}

func TestTemplatesCompile(t *testing.T) {
	// 9 actions in 6 guards, 2 of them in 6 three-way guards, 3 in 2
	// touch-or-SETNX guards, and 11 whole shapes.
	if got, want := len(luaTemplates), 9*6+2*6+3*2+11; got != want {
		t.Errorf("len(luaTemplates) = %d; want %d", got, want)
	}
}

func FuzzClassifyScript(f *testing.F) {
	for _, k := range allKnownScripts() {
		f.Add([]byte(k.src))
	}
	for _, tt := range handWritten {
		f.Add([]byte(tt.body))
	}
	for _, tt := range refused {
		f.Add([]byte(tt.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, ok := ClassifyScript(body)
		switch {
		case ok && (got.Op == OpUnknown || got.TokenArg < 1):
			t.Fatalf("ClassifyScript(%q) = %+v, true; want an operation and a token", body, got)
		case !ok && got.Op != OpUnknown:
			t.Fatalf("ClassifyScript(%q) = %+v, false; want OpUnknown", body, got)
		}
		if _, known := scriptsBySHA[sha1.Sum(body)]; known {
			if want, wantOK := ClassifySHA(SHA1Hex(body)); got != want || ok != wantOK {
				t.Fatalf("ClassifyScript(%q) = %+v, %v but ClassifySHA = %+v, %v", body, got, ok, want, wantOK)
			}
		}
		if !ok {
			return
		}
		// Admission's reprint keeps what a script does.
		adm, err := Admit(body)
		if err != nil {
			return
		}
		again, ok := ClassifyScript([]byte(adm.Source))
		again.Name = got.Name
		if again != got || !ok {
			t.Fatalf("ClassifyScript(reprint of %q) = %+v, %v; want %+v, true", body, again, ok, got)
		}
	})
}

func BenchmarkClassifySHA(b *testing.B) {
	sha := SHA1Hex([]byte(knownScripts[0].src))
	b.ReportAllocs()
	for b.Loop() {
		ClassifySHA(sha)
	}
}

func BenchmarkClassifyScript(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"known", knownScripts[0].src},
		{"structural", handWritten[0].body},
		{"refused", refused[len(refused)-1].body},
	} {
		b.Run(bc.name, func(b *testing.B) {
			body := []byte(bc.body)
			b.ReportAllocs()
			for b.Loop() {
				ClassifyScript(body)
			}
		})
	}
}
