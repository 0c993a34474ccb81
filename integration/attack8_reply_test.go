package integration

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack8 A2: the wrapper refuses a reply of "more than 100000 elements",
// but counts the reply's own array as one of them: a flat array of
// exactly 100,000 integers, which one Redis returns, is refused (1e3f836).
//
// A reply that long takes each master and the proxy a while to encode
// and read, more than the usual 1s node timeout under -race on a loaded
// machine: this proxy waits 5s for a node.
func TestAttack8ReplyOfExactly100000ElementsAnswered(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, proxy.Config{CommandTimeout: 20 * time.Second},
		quorum.Config{NodeTimeout: 5 * time.Second, MinTTL: 10 * time.Second, MaxTTL: time.Minute}, c.addrs...)
	nc, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	for _, n := range []int{99_999, 100_000} {
		script := fmt.Sprintf("redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) local t = {} for i = 1, %d do t[i] = i end return t", n)
		args := []string{"EVAL", script, "1", fmt.Sprint("k", n), "tok"}
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		nc.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := nc.Write([]byte(b.String())); err != nil {
			t.Fatal(err)
		}
		head, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("*%d\r\n", n); head != want {
			t.Errorf("a reply of %d elements begins %q; want %q, as one Redis answers", n, head, want)
			continue
		}
		for range n {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// attack8 A3: the refusal of a reply too large (or too deep) is skipped
// when the body returns the SET reply table the wrapper handed it (okr),
// changed: the tail then encodes it unguarded, the encoder gives up (nil)
// and the wrapper fails indexing it, on every master, after the run's
// writes, which Redis keeps: the take stays, the client gets an error.
func TestAttack8ChangedSetReplyTooLargeRefusedAndUndone(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	pc := dialResp(t, p.Addr)
	for name, body := range map[string]string{
		"exponential": "local t = {1} for i = 1, 40 do t = {t, t} end",
		"too deep":    "local t = {1} for i = 1, 1000 do t = {t} end",
	} {
		key := "x" + strings.ReplaceAll(name, " ", "")
		script := "local r = redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) r.ok = nil " + body + " r[1] = t return r"
		v, err := pc.do(cmdOf("EVAL", script, "1", key, "tok"))
		if err != nil {
			t.Fatal(err)
		}
		if !v.isError() || !strings.Contains(v.String(), "ERR script refused: its reply") {
			t.Errorf("%s: the SET reply table returned %s = %.200s; want the refusal of a reply too large", name, body, v)
		}
		if held := c.holding(t, key, "tok"); len(held) > 0 {
			t.Errorf("%s: %s held with the caller's token on masters %v after an error reply", name, key, held)
		}
		if v, err := pc.do(cmdOf("PING")); err != nil || v.String() != "+PONG" {
			t.Errorf("PING after = %v, %v", v, err)
		}
	}
}
