package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 R3 (1ebfea5's neighbours): a script's status and error
// replies, side by side with one redis-server 7.0. Redis maps CR and LF
// in a status ({ok=...}, redis.status_reply) to spaces and trims nothing;
// in an error it trims CR and LF at the end only (the leading "-" stops
// the trim at the front); both stop at a NUL (sdsnew of the C string).
// The proxy's resp.Status and resp.Error (oneLine) trim line breaks at
// both ends, and keep a NUL and what follows. Each script is run with no
// key, as a take and as a read of a key.
func TestAttack11ScriptStatusAndErrorTextAsRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	exprs := []string{
		`return {ok="\nb"}`,      // Redis "+ b"
		`return {ok="a\nb\n"}`,   // Redis "+a b "
		`return {ok="\r"}`,       // Redis "+ "
		`return {err="\r\nfoo"}`, // Redis "-  foo"
		`return {1, {ok="\nz"}}`, // nested: Redis "+ z"
		`return {ok="a\0b"}`,     // Redis "+a"
		`return {err="a\0b"}`,    // Redis "-a"
		`return redis.status_reply("a\0b")`,
	}
	for _, proto := range []int{2, 3} {
		rc := dialRawPeer(t, one.Addr, proto)
		pc := dialRawPeer(t, p.Addr, proto)
		for i, e := range exprs {
			for _, form := range []string{"nokey", "take", "read"} {
				key := fmt.Sprintf("attack11:r3:%d:%d:%s", proto, i, form)
				args := []string{"EVAL", e, "0"}
				switch form {
				case "take":
					args = []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) " + e, "1", key, "tok" + key}
				case "read":
					args = []string{"EVAL", "local v = redis.call('get', KEYS[1]) " + e, "1", key}
				}
				want, err := rc.do(args...)
				if err != nil {
					t.Fatalf("one Redis, %s: %v", e, err)
				}
				got, err := pc.do(args...)
				if err != nil {
					t.Fatalf("proxy, %s: %v", e, err)
				}
				if got != want {
					t.Errorf("RESP%d %s %s: proxy %q; one Redis (7.0) %q", proto, form, e, got, want)
				}
			}
		}
	}
}

// attack11 (held on main b190dd3; a net for changes to the wrapper's
// encoder): script replies of every Lua-to-RESP rule, side by side with
// one redis-server 7.0 byte for byte, RESP2 and RESP3, each run with no
// key, as a take (the fast path's one-string and array forms) and as a
// read.
func TestAttack11ScriptReplyTypesAsOneRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	exprs := []string{
		`return {err="foo\r\n"}`, `return {err=""}`, `return {err="\n"}`, `return {err="-"}`, `return {err=" "}`,
		`return {ok=""}`, `return {ok=" "}`, `return {ok="OK"}`, `return redis.status_reply("x\ny")`,
		`return redis.error_reply("x\n")`, `return redis.error_reply("My error")`, `return redis.error_reply("")`,
		`return {double=0/0}`, `return {double=-(0/0)}`, `return {double=1/0}`, `return {double=-1/0}`,
		`return {double=-0.0}`, `return {double=1e300}`, `return {double=1/3}`, `return {double=2^53+1}`,
		`return {double=-2^-1074}`, `return {double=1e-310}`, `return {double=123456789012345678}`,
		`return {big_number=""}`, `return {big_number="12\r\n34"}`, `return {big_number="1\0002"}`, `return {big_number="-"}`,
		`return {verbatim_string={format="a\r\n", string="x\r\ny"}}`,
		`return {verbatim_string={format="t\0x", string="a\0b"}}`,
		`return {verbatim_string={format="txt"}}`, `return {verbatim_string="x"}`,
		`return {map={a=1}}`, `return {map={[1.5]="x"}}`, `return {set={a=false}}`, `return {map={[true]={err="e"}}}`,
		`return {map={}}`, `return {set={}}`, `return {map={a={err="e1"}, b={ok="o1"}}}`,
		`return {set={[1]=true, [2]=true, [3]=true, x=1, [2.5]=0}}`,
		`return {map={[1]=1, [2]=2, [3]=3, [10]=10, x="y", [-1]=4}}`,
		`local t = {} for i = 1, 40 do t["k" .. i] = i end return {map = t}`,
		`local t = {} for i = 1, 40 do t[i * 7] = i end return {set = t}`,
		`return {1, {double=2.5}, {big_number="9"}, {verbatim_string={format="txt", string="v"}}, {map={k={set={z=true}}}}}`,
		`return {err="a", ok="b"}`, `return {ok="b", double=1}`, `return {double=1, map={a=1}}`,
		`return {map={a=1}, set={b=true}}`, `return {set={b=true}, 1, 2}`,
		`return {err=5}`, `return {ok=5}`, `return {double="1"}`, `return {big_number=5}`,
		`return 3.7`, `return -3.7`, `return 1e20`, `return -1e20`, `return 0/0`, `return 2^63`, `return -2^63`,
		`return 2^53`, `return 1e14`, `return 99999999999999`, `return -99999999999999`,
		`return {3.7, -0.0, 1e15, 1e14}`, `return {2^63, -2^63, 1e300, -(0/0)}`,
		`return {false, true, cjson.null}`, `return cjson.decode('{"err":"j"}')`, `return cjson.decode('[1,2,null,3]')`,
		`return cjson.decode('{"map":{"a":1.5}}')`, `return cjson.decode('{"double":1.25}')`,
		`return cjson.decode('{"verbatim_string":{"format":"mkd","string":"x"}}')`,
		`return tostring`, `return {tostring, 1}`, `return "a\r\nb"`, `return ""`,
		`return true`, `return false`, `return nil`, `return {{err=""}}`,
	}
	for _, proto := range []int{2, 3} {
		rc := dialRawPeer(t, one.Addr, proto)
		pc := dialRawPeer(t, p.Addr, proto)
		for i, e := range exprs {
			for _, form := range []string{"nokey", "take", "read"} {
				key := fmt.Sprintf("attack11:types:%d:%d:%s", proto, i, form)
				args := []string{"EVAL", e, "0"}
				switch form {
				case "take":
					args = []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) " + e, "1", key, "tok" + key}
				case "read":
					args = []string{"EVAL", "local v = redis.call('get', KEYS[1]) " + e, "1", key}
				}
				want, err := rc.do(args...)
				if err != nil {
					t.Fatalf("one Redis, %s: %v", e, err)
				}
				got, err := pc.do(args...)
				if err != nil {
					t.Fatalf("proxy, %s: %v", e, err)
				}
				if got != want {
					t.Errorf("RESP%d %s %s: proxy %q; one Redis (7.0) %q", proto, form, e, got, want)
				}
			}
		}
	}
}

// attack11 R4 (LOW, Redis fidelity): an error TABLE raised inside a
// script keeps its own text, as one Redis keeps it (the proxy lacks only
// Redis's " script: <sha>, on @user_script:N." suffix, documented).
// error({err = "boom2"}): Redis "-boom2 script: ...", so "-boom2"; the
// proxy answers "-ERR boom2", an error code the script did not raise.
func TestAttack11RaisedErrorTableKeepsItsText(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	rc := dialRawPeer(t, one.Addr, 2)
	pc := dialRawPeer(t, p.Addr, 2)
	for _, body := range []string{
		`error({err="boom2"})`,
		`error({err="lower case text"})`,
		`error({err="MYERR x"})`,
	} {
		want, err := rc.do("EVAL", body, "0")
		if err != nil {
			t.Fatalf("one Redis %s: %v", body, err)
		}
		if i := strings.Index(want, " script: "); i >= 0 {
			want = want[:i] + "\r\n"
		}
		got, err := pc.do("EVAL", body, "0")
		if err != nil {
			t.Fatalf("proxy %s: %v", body, err)
		}
		if got != want {
			t.Errorf("%s: proxy %q; one Redis (7.0, without its suffix) %q", body, got, want)
		}
	}
}
