package integration

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack8 A2: the wrapper refuses a reply of "more than 100000 elements",
// but counts the reply's own array as one of them: a flat array of
// exactly 100,000 integers, which one Redis returns, is refused (1e3f836).
func TestAttack8ReplyOfExactly100000ElementsAnswered(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
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
