package integration

import (
	"bufio"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack9 R1: a script's big-number reply is written to a RESP3 client
// as it is: "(" + text + CRLF. One Redis maps CR and LF in it to spaces
// (script_lua.c: sdsmapchars), so it stays one reply; through the proxy a
// CRLF in it ends the reply early and the rest is read as the answer to
// the client's NEXT command. The text can be a key's value, that is a
// token another client chose: here client A holds "attack9:tok" with the
// token "1\r\n+OK", a client reads it as a big number, then tries SET NX
// on a lock B holds, and reads "+OK": it is told it holds B's lock.
func TestAttack9BigNumberReplyCannotForgeTheNextReply(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	a := dialResp(t, p.Addr)
	if v, err := a.do(cmdOf("SET", "attack9:tok", "1\r\n+OK", "NX", "PX", "10000")); err != nil || v.text != "OK" {
		t.Fatalf("A's SET NX: %v %v", v, err)
	}
	b := dialResp(t, p.Addr)
	if v, err := b.do(cmdOf("SET", "attack9:lock", "tokB", "NX", "PX", "10000")); err != nil || v.text != "OK" {
		t.Fatalf("B's SET NX: %v %v", v, err)
	}

	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(nc)
	send := func(args ...string) {
		w := "*" + strconv.Itoa(len(args)) + "\r\n"
		for _, a := range args {
			w += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
		}
		if _, err := nc.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	send("HELLO", "3")
	send("PING")
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "+PONG\r\n" { // HELLO's map read
			break
		}
	}
	send("EVAL", "return {big_number = redis.call('get', KEYS[1])}", "1", "attack9:tok")
	send("SET", "attack9:lock", "tokC", "NX", "PX", "10000")
	evalReply, _ := rd.ReadString('\n')
	setReply, _ := rd.ReadString('\n')
	if evalReply != "(1  +OK\r\n" {
		t.Errorf("EVAL of a big number holding CRLF answered %q; one Redis answers %q (CR and LF made spaces)", evalReply, "(1  +OK\r\n")
	}
	if setReply != "_\r\n" {
		t.Errorf("the next command, SET NX on a lock B holds, read %q; one Redis answers %q (taken): the client is told it holds B's lock", setReply, "_\r\n")
	}
	if held := c.holding(t, "attack9:lock", "tokB"); len(held) != 3 {
		t.Fatalf("B's lock is on masters %v, want all 3", held)
	}
}

// attack9 R2: a script's verbatim string keeps its format's first three
// bytes, as one Redis, but a format with a colon or of fewer than three
// bytes is answered otherwise: RESP2 gives the text after the FIRST colon
// ("b:hello" for format "a:b"; one Redis "hello"), RESP3 a format of two
// bytes unpadded ("=8 tx:hello", which a RESP3 reader takes as format
// "tx:" and text "ello"; one Redis pads it: "=9 tx :hello").
func TestAttack9VerbatimFormatAnsweredAsRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(nc)
	eval := func(script string) string {
		w := "*3\r\n$4\r\nEVAL\r\n$" + strconv.Itoa(len(script)) + "\r\n" + script + "\r\n$1\r\n0\r\n"
		if _, err := nc.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
		head, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		body, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return head + body
	}
	for _, c := range []struct{ script, want string }{
		{"return {verbatim_string={format='a:b',string='hello'}}", "$5\r\nhello\r\n"},
		{"return {verbatim_string={format='tx',string='hello'}}", "$5\r\nhello\r\n"},
	} {
		if got := eval(c.script); got != c.want {
			t.Errorf("RESP2 %s answered %q; one Redis (7.0.15) answers %q", c.script, got, c.want)
		}
	}
	if _, err := nc.Write([]byte("HELLO 3\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	for {
		l, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "+PONG\r\n" {
			break
		}
	}
	for _, c := range []struct{ script, want string }{
		{"return {verbatim_string={format='a:b',string='hello'}}", "=9\r\na:b:hello\r\n"},
		// Checked on redis-server 7.0: the format ends at a NUL, and an
		// empty one is three spaces.
		{"return {verbatim_string={format='a\\0b',string='hello'}}", "=9\r\na  :hello\r\n"},
		{"return {verbatim_string={format='',string='hello'}}", "=9\r\n   :hello\r\n"},
		{"return {verbatim_string={format='tx',string='hello'}}", "=9\r\ntx :hello\r\n"},
	} {
		if got := eval(c.script); got != c.want {
			t.Errorf("RESP3 %s answered %q; one Redis (7.0.15) answers %q", c.script, got, c.want)
		}
	}
}
