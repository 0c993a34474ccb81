package script

import (
	"errors"
	"strings"
	"testing"
)

// The loops and calls lock scripts use are admitted; each has a bound on
// its runs known before it runs.
var loopsAdmitted = []struct{ name, body string }{
	{"ipairs(KEYS) (node-redlock, sesamecare)", "for i, key in ipairs(KEYS) do if redis.call('exists', key) == 1 then return 0 end end return #KEYS"},
	{"pairs(KEYS), ipairs(ARGV)", "for k, v in pairs(KEYS) do end for i, a in ipairs(ARGV) do end return 1"},
	{"numeric for over #KEYS, #ARGV - 1, backwards", "for i = 1, #KEYS do redis.call('pexpire', KEYS[i], ARGV[1]) end for i = #ARGV - 1, 1, -1 do end return 1"},
	{"numeric for with number bounds", "for i = 1, 10, 2 do end for i = 0, 1000 do end return 1"},
	{"a table constructor and a command's reply", "for _, v in ipairs({1, 2, 3}) do end for _, m in ipairs(redis.call('zrange', KEYS[1], 0, -1)) do end return 1"},
	{"a local function called, and given to pcall", "local function own(v) return v == ARGV[1] end if own(redis.call('get', KEYS[1])) then return pcall(own, 1) end return 0"},
	{"a function calling one defined before it", "local function a(x) return x end local function b(x) return a(x) .. a(x) end return b('1')"},
	{"a function literal called at once, and given to pcall", "(function() end)() return select(2, pcall(function() return 1 end))"},
	{"KEYS in arithmetic and comparisons", "return (KEYS == ARGV) and 1 or 0"},
	{"KEYS and ARGV read by table.concat and table.getn", "return table.concat(ARGV, ',') .. table.getn(KEYS)"},
	{"string methods on strings", "return ('x'):upper() .. tostring(1):rep(2) .. ('a' .. 'b'):sub(1, 1)"},
	{"a loop over KEYS in one of 100 runs", "for i = 1, 100 do for _, k in ipairs(KEYS) do end end return 1"},
	{"a loop over KEYS with a body of a few calls", "for _, k in ipairs(KEYS) do if redis.call('get', k) == ARGV[1] then redis.call('pexpire', k, ARGV[2]) end end return 1"},
}

var loopsRefused = []struct{ name, body, reason string }{
	{"while", "while true do end", "a while loop is not served"},
	{"repeat", "local i = 0 repeat i = i + 1 until i > 10", "a repeat loop is not served"},
	{"numeric for to an ARGV bound", "for i = 1, tonumber(ARGV[1]) do end", "bounds are not numbers, #KEYS or #ARGV"},
	{"numeric for to a local", "local n = 10 for i = 1, n do end", "bounds are not numbers"},
	{"numeric for with step 0", "for i = 1, 10, 0 do end", "bounds are not numbers"},
	{"numeric for of a billion runs", "for i = 1, 1e9 do end", "up to 1000000000 runs"},
	{"ipairs of a local table (the loop may grow it)", "local t = {1} for _, v in ipairs(t) do t[#t + 1] = v end", "over this iterator"},
	{"a custom iterator", "for x in next, {} do end", "over this iterator"},
	{"two loops over KEYS nested", "for _, a in ipairs(KEYS) do for _, b in ipairs(ARGV) do end end", "at most 1048576 are served"},
	{"a function with a loop called in a loop", "local function f() for _, k in ipairs(KEYS) do end end for _, a in ipairs(KEYS) do f() end", "at most 1048576 are served"},
	{"a long body in a long loop", "for i = 1, 100000 do local a = i + i + i + i + i + i + i + i + i + i end", "at most 1048576 are served"},
	{"functions doubling their work", "local function f0() end local function f1() f0() f0() end local function f2() for i = 1, 1000 do f1() end end local function f3() for i = 1, 1000 do f2() end end f3()", "at most 1048576 are served"},
	{"KEYS grown by table.insert", "for _, k in ipairs(KEYS) do table.insert(KEYS, k) end", "KEYS is used other than read"},
	{"KEYS aliased", "local k = KEYS return k", "KEYS is used other than read"},
	{"direct recursion", "local function f(n) f(n) f(n) end f(1)", "calls itself"},
	{"recursion through pcall", "local function f() pcall(f) pcall(f) end f()", "calls itself"},
	{"a function redefined to recurse", "local function f() end local function g() f() end function f() g() end g()", "redefines its function"},
	{"a function reassigned", "local function f() end local function g() f() end f = g g()", "reassigns its function"},
	{"calling a parameter (Y combinator)", "local function y(h) return h(h) end return y(y)", "a value it computes"},
	{"calling a table field", "local t = {f = function() end} t.f()", "function value it computes"},
	{"a method call on a table", "local t = {} t:f()", "method call on a value that may not be a string"},
	{"a local given to pcall", "local h = tostring return pcall(h, 1)", "a value it computes"},
	{"a computed comparator for table.sort", "local t, c = {}, nil table.sort(t, c)", "a value it computes"},
}

func TestAdmitTakesBoundedLoops(t *testing.T) {
	for _, tt := range loopsAdmitted {
		if _, err := Admit([]byte(tt.body)); err != nil {
			t.Errorf("%s: Admit = %v; want admitted", tt.name, err)
		}
	}
}

// A loop admission cannot bound, or recursion, would stop every master
// at once: refused before any node runs it.
func TestAdmitRefusesUnboundedLoopsAndRecursion(t *testing.T) {
	for _, tt := range loopsRefused {
		_, err := Admit([]byte(tt.body))
		var r *Refusal
		if !errors.As(err, &r) || !strings.Contains(r.Reason, tt.reason) {
			t.Errorf("%s: Admit = %v; want refused: %q", tt.name, err, tt.reason)
		}
	}
}
