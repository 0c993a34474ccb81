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
