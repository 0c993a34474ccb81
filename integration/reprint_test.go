package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// goZeroLockWrittenHard is go-zero's acquire written with what Redis's Lua
// lexer and gopher-lua could read apart: comments (one long, holding
// "]]"), long-bracket strings, decimal escapes, \r\n and \r line ends, and
// an empty statement ";;" that gopher-lua skips while Redis's Lua 5.1
// refuses the whole script ("unexpected symbol near ';'").
const goZeroLockWrittenHard = "-- go-zero's acquire, written the hard way\r\n" +
	"--[==[ a long comment with ]] inside ]==]\r\n" +
	"local px = [[PX]] -- a long-bracket string\r\n" +
	"local ok = \"\\079\\075\" -- \"OK\" by decimal escapes\r\n" +
	"local note = 1;;\r" +
	"if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\r" +
	"  redis.call('SET', KEYS[1], ARGV[1], px, ARGV[2])\r" +
	"  return ok\r" +
	"else\r" +
	"  return redis.call(\"SET\", KEYS[1], ARGV[1], \"NX\", [==[PX]==], ARGV[2])\r" +
	"end"

// TestEffectScriptRunsAsAdmissionReadIt: the masters run the script as
// admission re-printed it, not the client's bytes. The body above does
// not even compile on a plain Redis, yet through the proxy it acquires,
// is refused when taken, re-enters with its bulk "OK" and leaves the
// lock on every master.
func TestEffectScriptRunsAsAdmissionReadIt(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	err := direct(t, c.addrs[0]).Eval(ctx, goZeroLockWrittenHard, []string{"plain"}, "tok", "2000").Err()
	if err == nil || !strings.Contains(err.Error(), "unexpected symbol near ';'") {
		t.Fatalf("EVAL on a plain redis-server: %v; want Lua 5.1's refusal of ;;", err)
	}
	cl := newClient(t, p.Addr, nil)
	key := "hard:lock"
	if v, err := cl.Eval(ctx, goZeroLockWrittenHard, []string{key}, "tok-a", "2000").Result(); v != "OK" || err != nil {
		t.Fatalf("acquire = %#v, %v; want OK", v, err)
	}
	c.wantHeldEverywhere(t, key, "tok-a", 2*time.Second)
	if v, err := cl.Eval(ctx, goZeroLockWrittenHard, []string{key}, "tok-b", "2000").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("contended acquire = %#v, %v; want nil", v, err)
	}
	// Re-entry: the bulk "OK" spelled "\079\075".
	if v, err := cl.Eval(ctx, goZeroLockWrittenHard, []string{key}, "tok-a", "2000").Result(); v != "OK" || err != nil {
		t.Fatalf("re-entrant acquire = %#v, %v; want the bulk OK", v, err)
	}
	c.wantHeldEverywhere(t, key, "tok-a", 2*time.Second)
	if n, err := cl.Eval(ctx, goZeroRelease, []string{key}, "tok-a").Int(); n != 1 || err != nil {
		t.Fatalf("release = %d, %v; want 1", n, err)
	}
	c.wantFreeEverywhere(t, key)
}

// TestScriptsRedisCannotCompileAreRefused: what gopher-lua parses but
// Redis's Lua 5.1 does not compile (break outside a loop, "..." outside
// a vararg function, a call in parentheses as a statement, a call's "("
// on a line of its own, a decimal escape over 255) is refused by
// admission, with its line, instead of failing on every master and
// looking like masters that cannot be reached (NOQUORUM).
func TestScriptsRedisCannotCompileAreRefused(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	plain := direct(t, c.addrs[0])
	cl := newClient(t, p.Addr, nil)
	for _, tt := range []struct{ body, want string }{
		{"if ARGV[1] then\n  break\nend\nreturn redis.call('get', KEYS[1])", "ERR unsupported script: break outside a loop (Lua 5.1 does not compile it) (line 2)"},
		{"local function f()\n  return ...\nend\nreturn f()", "ERR unsupported script: ... outside a vararg function (Lua 5.1 does not compile it) (line 2)"},
		{"local v = redis.call('get', KEYS[1]) if v then end\n(tostring(v))\nreturn v", "ERR unsupported script: a call in parentheses is not a statement in Lua 5.1 (line 2)"},
		// gopher-lua reads a call of v; Redis refuses the script.
		{"local v = redis.call('get', KEYS[1])\nreturn v .. '\\300'", `ERR unsupported script: escape sequence too large: Lua 5.1 takes \0 to \255 (line 2)`},
		{"local v = redis.call('get', KEYS[1])\n(tostring)(v)\nreturn v", `ERR unsupported script: ambiguous syntax (function call x new statement): Lua 5.1 refuses a call's "(" on a line of its own; end the statement before with ";" (line 2)`},
	} {
		if err := plain.Eval(ctx, tt.body, []string{"k"}, "x").Err(); err == nil || !strings.Contains(err.Error(), "Error compiling script") {
			t.Errorf("%q on a plain redis-server: %v; want a compile error", tt.body, err)
		}
		if err := cl.Eval(ctx, tt.body, []string{"k"}, "x").Err(); err == nil || err.Error() != tt.want {
			t.Errorf("%q through the proxy: %v; want %s", tt.body, err, tt.want)
		}
	}
}
