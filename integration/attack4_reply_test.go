package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// SCRIPT FLUSH through the proxy deletes the wrapper's library on every
// master; other clients' scripts served by their effect that are in
// flight then, or whose library load races the next flush, get "ERR
// Function not found" from the masters, counted as failures: NOQUORUM
// with every master up. With one Redis, another client's SCRIPT FLUSH
// never fails an EVAL (it carries its body).
func TestAttack4ScriptFlushFailsOtherClientsScripts(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	const take = "local v = redis.call('get', KEYS[1]) if v == false then return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) end return v"
	const rel = "if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) return 'gone' end return 'kept'"
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[string]int{}
	for cl := range 8 {
		rc := dialRaw(t, p.Addr)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("f:%d:%d", cl, i)
				r := rc.do("EVAL", take, "1", k, "tok", "10000")
				if r == "+OK" {
					if r2 := rc.do("EVAL", rel, "1", k, "tok"); r2 != `"gone"` {
						r = "release: " + r2
					}
				} else {
					r = "take: " + r
				}
				if r != "+OK" {
					mu.Lock()
					bad[r]++
					mu.Unlock()
				}
			}
		})
	}
	fl := dialRaw(t, p.Addr)
	for range 60 {
		if r := fl.do("SCRIPT", "FLUSH"); r != "+OK" {
			t.Fatalf("SCRIPT FLUSH = %q", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for r, n := range bad {
		t.Errorf("%d of other clients' lock scripts, every master up, answered %s", n, r)
	}
}

// nestedReply is a script that reads its key, takes it if take, and
// returns 1 inside as many arrays as it has arguments after the token:
// one Redis 7.0 returns the nested arrays (1,000 deep is fine).
func nestedReply(key string, take bool, depth int) []string {
	body := "local x = redis.call('get', KEYS[1])"
	if take {
		body = "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000)"
	}
	body += " local t = 1 for i = 2, #ARGV do t = {t} end return t"
	args := []string{"EVAL", body, "1", key, "tok"}
	for range depth {
		args = append(args, "a")
	}
	return args
}

// A script's reply nested 65 arrays deep (admitted: a loop over ARGV)
// is "malformed" to the proxy (decodeValue's limit of 64): every master
// fails, NOQUORUM with all of them up, and a lock the script took stays
// on every master until its TTL while its client was told the masters
// could not be reached (another token gets nil: taken).
func TestAttack4DeepScriptReplyAsOneRedis(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	pc, rc := dialResp(t, p.Addr), dialResp(t, ref.Addr)
	args := nestedReply("k", true, 65)
	pv, err := pc.do(cmdOf(args...))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := rc.do(cmdOf(args...))
	if err != nil {
		t.Fatal(err)
	}
	if pv.String() != rv.String() {
		t.Errorf("EVAL taking k and returning 1 in 65 nested arrays = %.100s; one Redis answers %.100s…", pv, rv)
		if pv.isError() {
			if held := c.holding(t, "k", "tok"); len(held) > 0 {
				t.Errorf("and k is held with the caller's token on masters %v after that error", held)
			}
		}
	}
}

// Nested past the node reader's limit (1,024 levels in the wrapper's
// encoding, about 512 in the script's), the reply is a protocol error
// that ends the node connection, and every other client's command in
// flight on it fails: while one client sends such scripts, other
// clients' SET NX of free keys get NOQUORUM with every master up.
func TestAttack4DeepScriptReplyBreaksOtherClients(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := map[string]int{}
	for cl := range 16 {
		rc := dialRaw(t, p.Addr)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if r := rc.do("SET", fmt.Sprintf("free:%d:%d", cl, i), "tok", "NX", "PX", "10000"); r != "+OK" {
					mu.Lock()
					failed[r]++
					mu.Unlock()
				}
			}
		})
	}
	ev := dialResp(t, p.Addr)
	args := nestedReply("k", false, 600)
	for range 30 {
		ev.do(cmdOf(args...))
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	for r, n := range failed {
		t.Errorf("%d SET NX of free keys by other clients, every master up, answered %q", n, r)
	}
}

// A reply deeper than the proxy carries (past 256 arrays, or a cycle)
// after a take is refused, and the take is undone on every master: never
// "unavailable" with the lock left behind.
func TestEffectTooDeepReplyRefusedAndUndone(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	pc := dialResp(t, p.Addr)
	cyclic := []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) local t = {} t[1] = t return t", "1", "c", "tok"}
	for _, args := range [][]string{nestedReply("k", true, 300), cyclic} {
		v, err := pc.do(cmdOf(args...))
		if err != nil {
			t.Fatal(err)
		}
		if !v.isError() || !strings.Contains(v.String(), "ERR script refused: its reply nests more than 256 arrays") {
			t.Errorf("%.60s… = %.100s; want the refusal of a reply too deep", args[1], v)
		}
		if held := c.holding(t, args[3], "tok"); len(held) > 0 {
			t.Errorf("%.60s…: %s held with the caller's token on masters %v after the refusal", args[1], args[3], held)
		}
	}
}

// A reply that holds one table many times over ({t, t} nested 40 deep:
// 2^40 elements, under the depth bound) is refused after 100,000
// elements, and the take undone, rather than keep every master encoding
// it (one Redis would, for hours). Encoding 100,000 elements takes a
// master longer than the usual 1s node timeout on a loaded machine: this
// proxy waits 5s for a node.
func TestEffectExponentialReplyRefusedAndUndone(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: 20 * time.Second},
		quorum.Config{NodeTimeout: 5 * time.Second, MinTTL: 10 * time.Second, MaxTTL: time.Minute}, c.addrs...)
	pc := dialResp(t, p.Addr)
	args := []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) local t = {1} for i = 1, 40 do t = {t, t} end return t", "1", "x", "tok"}
	start := time.Now()
	v, err := pc.do(cmdOf(args...))
	if err != nil {
		t.Fatal(err)
	}
	if !v.isError() || !strings.Contains(v.String(), "ERR script refused: its reply has more than 100000 elements") {
		t.Errorf("a reply of 2^40 elements = %.100s; want the refusal of a reply too large", v)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	if held := c.holding(t, "x", "tok"); len(held) > 0 {
		t.Errorf("x held with the caller's token on masters %v after the refusal", held)
	}
	if v, err := pc.do(cmdOf("PING")); err != nil || v.String() != "+PONG" {
		t.Errorf("PING after = %v, %v", v, err)
	}
}

// A reply table's err and ok count only when they are strings, err
// first, as one Redis converts them (script_lua.c): never NOQUORUM for a
// table there ("table: 0x…" differs on every master).
func TestEffectReplyErrOkAsOneRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	for _, proto := range []string{"2", "3"} {
		pc, rc := dialResp(t, p.Addr), dialResp(t, ref.Addr)
		pc.do(cmdOf("HELLO", proto))
		rc.do(cmdOf("HELLO", proto))
		for _, ret := range []string{
			"{ok={}}", "{err={}}", "{1, {err={}}}", "{ok=1}", "{err=1}", "{err=true}",
			"{1, {ok=2}}", "{ok='a', err='b'}", "{1, {ok='a', err='b'}}", "{ok='fine'}",
			"{1, {double=0.1}}", "{double=-3}", "{map={a={1, 2}, b='x', c={double=2.5}}}",
			"{set={a=true, b=true, [3]=true}}", "{verbatim_string={format='markdown', string='y'}}",
		} {
			body := "local x = redis.call('get', KEYS[1]) return " + ret
			pv, err := pc.do(cmdOf("EVAL", body, "1", "k", "v"))
			if err != nil {
				t.Fatal(err)
			}
			rv, err := rc.do(cmdOf("EVAL", body, "1", "k", "v"))
			if err != nil {
				t.Fatal(err)
			}
			if pv.String() != rv.String() {
				t.Errorf("RESP%s: EVAL of a script returning %s = %s; one Redis answers %s", proto, ret, pv, rv)
			}
		}
		// One Redis 7.0 fails on it; the proxy answers one error.
		body := "local x = redis.call('get', KEYS[1]) error({err={}})"
		if pv, err := pc.do(cmdOf("EVAL", body, "1", "k")); err != nil || !strings.Contains(pv.String(), "ERR Error running script") {
			t.Errorf("RESP%s: EVAL of error({err={}}) = %s, %v; want an error running the script", proto, pv, err)
		}
	}
}

// A script served by its effect returns a table that one Redis 7.0
// converts by the type of its fields (script_lua.c): err, then ok, only
// when a string; double, big_number, map, set, verbatim_string as RESP3
// types (flattened in RESP2); anything else as an array. The proxy's
// wrapper takes any truthy err/ok (tostring of a number, a boolean, a
// table: "table: 0x…", which differs on every master, so the masters
// disagree and the reply is NOQUORUM with every master up), checks ok
// before err, and turns the typed tables into an empty array.
func TestAttack4ScriptReplyTablesAsOneRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	for _, proto := range []string{"2", "3"} {
		pc, rc := dialResp(t, p.Addr), dialResp(t, ref.Addr)
		pc.do(cmdOf("HELLO", proto))
		rc.do(cmdOf("HELLO", proto))
		for _, ret := range []string{
			"{ok={}}", "{err={}}", "{1, {err={}}}", // NOQUORUM with every master up
			"{ok=1}", "{err=1}", "{err=true}", "{1, {ok=2}}", // Redis: an array
			"{ok='a', err='b'}", // Redis: the error
			"{double=1.5}", "{big_number='123'}", "{map={a=1}}", "{set={'a'}}",
			"{verbatim_string={format='txt', string='x'}}",
		} {
			body := "local x = redis.call('get', KEYS[1]) return " + ret
			pv, err := pc.do(cmdOf("EVAL", body, "1", "k", "v"))
			if err != nil {
				t.Fatal(err)
			}
			rv, err := rc.do(cmdOf("EVAL", body, "1", "k", "v"))
			if err != nil {
				t.Fatal(err)
			}
			if pv.String() != rv.String() {
				t.Errorf("RESP%s: EVAL of a script returning %s = %s; one Redis answers %s", proto, ret, pv, rv)
			}
		}
	}
}
