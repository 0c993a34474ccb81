package script

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/clientlua"
)

var admitTable = []struct {
	name, body string
	lits       []string // some of the literals it must report
}{
	{"go-zero lock", "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n    redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2])\n    return \"OK\"\nelse\n    return redis.call(\"SET\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[2])\nend\n", []string{"OK"}},
	{"Redisson lock", "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);", nil},
	{"Redisson unlock: publish command from ARGV", "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ", []string{"0", "1"}},
	{"node-redlock acquire over ipairs(KEYS)", "for i, key in ipairs(KEYS) do\n  if redis.call(\"exists\", key) == 1 then\n    return 0\n  end\nend\nfor i, key in ipairs(KEYS) do\n  redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\nend\nreturn #KEYS\n", nil},
	{"SELECT 0 from ARGV, then a release", "redis.pcall(\"SELECT\", ARGV[1])\nlocal count = 0\nfor i, key in ipairs(KEYS) do\n  if redis.call(\"get\", key) == ARGV[2] then\n    redis.pcall(\"del\", key)\n    count = count + 1\n  end\nend\nreturn count\n", nil},
	{"SELECT tonumber(ARGV[1]) (@sesamecare-oss/redlock)", "\n  -- Protected call to execute SELECT command if supported\n  redis.pcall(\"SELECT\", tonumber(ARGV[1]))\n\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[2], \"PX\", ARGV[3])\n  end\n  return #KEYS\n", nil},
	{"SELECT 0 literally", `redis.call("select", 0) return redis.call("get", KEYS[1])`, nil},
	{"Symfony save with TIME and a sorted set", clientlua.SymfonySave, []string{"__write__", "1000"}},
	{"Symfony TIME probe", "\n                local now = redis.call(\"TIME\")\n                redis.call(\"SET\", KEYS[1], \"1\", \"PX\", 1)\n\n\t            return 1\n            ", []string{"1"}},
	{"KEYS[i] in a numeric loop, unpack(KEYS)", `for i = 1, #KEYS do redis.call("pexpire", KEYS[i], ARGV[1]) end return redis.call("del", unpack(KEYS))`, nil},
	{"local functions and string methods", `local function own(v) return v == ARGV[1] end
local k = KEYS[1]
if own(redis.call("get", k)) then return ("x"):upper() end return 0`, nil},
	{"a local named like a forbidden global", `local os = 1 return os`, nil},
	{"a ( on a line of its own after a statement that cannot be called, a parameter list, a function name, a local without =",
		"local a, b\n(tostring)(1)\nlocal f = function(x)\n(tostring)(x) end\nlocal function g\n(y) return y end\nlocal c = 'x'\n(tostring)(2)\nfor i = 1, 2 do end\n(tostring)(3) tostring(4);\n(tostring)(5)", nil},
	{"numerals beside names, with a space or an operator between", "local a = 5 local b = a..1 .. 2 return 5 and b or 1e5+0x1F-.5", nil},
	{"escapes up to 255, and \\300 where it is no escape", "return '\\255\\0', \"\\\\300\", [[\\300]] -- \\300", nil},
	{"break in loops, ... in the chunk and in vararg functions", "for i = 1, 2 do break end for _, a in ipairs(ARGV) do break end for k in pairs({1, 2}) do break end for _, k in ipairs(KEYS) do if k then break end end\nlocal function f(...) return ... end return f(...), select('#', ...)", nil},
}

var refuseTable = []struct {
	name, body, reason string
	line               int
}{
	{"INCR", "local n = 0\nreturn redis.call('incr', KEYS[1])", "INCR is not a lock command", 2},
	{"LPUSH", `return redis.call("LPUSH", KEYS[1], ARGV[1])`, "LPUSH is not a lock command", 1},
	{"FLUSHALL via pcall", `return redis.pcall("flushall")`, "FLUSHALL is not a lock command", 1},
	{"a Kelvin sign is no k", "return redis.call('unlin\u212A', KEYS[1])", "UNLIN\u212A is not a lock command", 1},
	{"computed key name", `return redis.call("set", "lock:" .. ARGV[1], ARGV[2], "PX", 100)`, `a key argument ("lock:" .. ARGV[1]) is not KEYS[i]`, 1},
	{"literal key", `return redis.call("del", "other")`, `a key argument ("other") is not KEYS[i]`, 1},
	{"key from ARGV", `return redis.call("get", ARGV[1])`, `a key argument (ARGV[1]) is not KEYS[i]`, 1},
	{"a function parameter as a key", "local function f(k) return redis.call('get', k) end\nreturn f(KEYS[1])", `a key argument (k) is not KEYS[i]`, 1},
	{"a local that is not a key", "local k = ARGV[1]\nreturn redis.call('get', k)", `a key argument (k) is not KEYS[i]`, 2},
	{"a reassigned key variable", "local k = KEYS[1]\nk = ARGV[1]\nreturn redis.call('get', k)", `reassigns "k"`, 2},
	{"command name in a local", "local c = 'set'\nreturn redis.call(c, KEYS[1], 'v')", "computed at run time", 2},
	{"redis.call as a value", "local f = redis.call\nreturn f('flushall')", "redis.call is used as a value", 1},
	{"bare redis", "local r = redis\nreturn r.call('flushall')", "redis is used other than", 1},
	{"SELECT 1", `redis.call("SELECT", 1) return 1`, "SELECT of database 1", 1},
	{"SELECT computed", `redis.call("SELECT", tonumber(ARGV[1]) + 1) return 1`, "SELECT of a database computed at run time", 1},
	{"getfenv", `return getfenv(1)`, `the global "getfenv"`, 1},
	{"_G", `return _G.redis.call("flushall")`, `the global "_G"`, 1},
	{"loadstring", `return loadstring("return 1")()`, `the global "loadstring"`, 1},
	{"rawget", `return rawget(KEYS, 1)`, `the global "rawget"`, 1},
	{"setmetatable", `return setmetatable({}, {})`, `the global "setmetatable"`, 1},
	{"the wrapper's locals", `return __rlp_call("flushall")`, `the global "__rlp_call"`, 1},
	{"global assignment", "x = 1\nreturn x", `assigns the global "x"`, 1},
	{"global function", "function f() return 1 end\nreturn f()", `defines a global function "f"`, 1},
	{"changing a global table", `string.x = 1 return 1`, `changes the global table "string"`, 1},
	{"redis.setresp", `redis.setresp(3) return 1`, "redis.setresp is not available", 1},
	{"goto (Lua 5.2)", "goto done\n::done::\nreturn 1", "not Lua 5.1", 1},
	{"syntax error", `return redis.call("get", KEYS[1]`, "does not parse", 0},
	{"NUL byte", "return 1\x00", "NUL byte", 0},
	{"a call in parentheses as a statement (Lua 5.1 refuses it)", "local a = 1\n(tostring(a))", "not a statement", 2},
	{"a numeral gopher-lua lexes oddly", "local a = 3e)", `the number "3e)" is malformed`, 1},
	{"a number out of range", "return 1e400", "out of range", 1},
	{"a decimal escape over 255 (gopher-lua reads 300 mod 256)", "local a = 1\r\nreturn 'x', \"ab\\300\"", "escape sequence too large", 2},
	{"a decimal escape over 255 after lines of a long string", "local a = [[\n\r\n]] return '\\256'", "escape sequence too large", 3},
	{"a numeral run into a name (gopher-lua reads two tokens)", "local a = 1\nlocal b = 5type(a) return b", "malformed number", 2},
	{"a numeral run into a keyword", "return 5and 1", "malformed number", 1},
	{"a call's ( on a line of its own after a name", "local v = tostring\n(ARGV[1]):upper()", "ambiguous syntax", 2},
	{"a call's ( on a line of its own after a call", "local v = tostring(1)\n(ARGV[1]):upper()", "ambiguous syntax", 2},
	{"a call's ( on a line of its own after an index", "local v = ARGV[1]\n\n(tostring)(1)", "ambiguous syntax", 3},
	{"break outside a loop", "if ARGV[1] then\n  break\nend\nreturn 1", "break outside a loop", 2},
	{"break in a function in a loop", "for i = 1, 2 do\n  local f = function() break end\nend", "break outside a loop", 2},
	{"... outside a vararg function", "local function f()\n  return ...\nend\nreturn f()", "... outside a vararg function", 2},
	{"... of the enclosing function", "local f = function(...) return function() return ... end end", "... outside a vararg function", 1},
	{"a hexadecimal number out of range", "return 0x10000000000000000", "out of range", 1},
}

func TestAdmitServesLockScripts(t *testing.T) {
	for _, tt := range admitTable {
		a, err := Admit([]byte(tt.body))
		if err != nil {
			t.Errorf("%s: refused: %v", tt.name, err)
			continue
		}
		for _, l := range tt.lits {
			if !slices.Contains(a.Literals, l) {
				t.Errorf("%s: literals %q lack %q", tt.name, a.Literals, l)
			}
		}
	}
}

func TestAdmitRefusesWithReasonAndLine(t *testing.T) {
	for _, tt := range refuseTable {
		_, err := Admit([]byte(tt.body))
		var r *Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s: admitted; want refused: %s", tt.name, tt.reason)
			continue
		}
		if !strings.Contains(r.Reason, tt.reason) || r.Line != tt.line {
			t.Errorf("%s: refusal %q at line %d; want %q at line %d", tt.name, r.Reason, r.Line, tt.reason, tt.line)
		}
	}
}

// FuzzAdmit checks that Admit never panics; that whatever it admits
// stays admitted inside the wrapper's function body (the body plus a
// closing "end" must not be able to end the function early); and that its
// Source, what the masters run, is admitted with the same literals and
// prints as itself.
func FuzzAdmit(f *testing.F) {
	for _, tt := range admitTable {
		f.Add(tt.body)
	}
	for _, tt := range refuseTable {
		f.Add(tt.body)
	}
	for _, tt := range printTable {
		f.Add(tt.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		a, err := Admit([]byte(body))
		if err != nil {
			return
		}
		wantFixedPoint(t, body, a)
		wrapped := "local function f(...)\n" + body + "\nend\nreturn f()"
		var r *Refusal
		if _, err := Admit([]byte(wrapped)); err != nil && !(errors.As(err, &r) && r.Reason == tooManyLevels) { // the function is one level more
			t.Fatalf("admitTable %q, but not inside a function: %v", body, err)
		}
	})
}
