package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readRawReply reads one reply of either protocol and returns its exact
// bytes.
func readRawReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return line, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return line, fmt.Errorf("bad reply line %q", line)
	}
	kind, rest := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':', '_', '#', ',', '(':
		return line, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(rest)
		if err != nil || n > 1<<24 {
			return line, fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return line, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return line, err
		}
		return line + string(buf), nil
	case '*', '%', '~', '>', '|':
		n, err := strconv.Atoi(rest)
		if err != nil || n > 1<<20 {
			return line, fmt.Errorf("bad count in %q", line)
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		out := line
		for range n {
			s, err := readRawReply(r)
			out += s
			if err != nil {
				return out, err
			}
		}
		return out, nil
	}
	return line, fmt.Errorf("unknown reply type in %q", line)
}

type rawPeer struct {
	c net.Conn
	r *bufio.Reader
}

func dialRawPeer(t testing.TB, addr string, proto int) *rawPeer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &rawPeer{c: c, r: bufio.NewReader(c)}
	if proto == 3 {
		if _, err := p.do("HELLO", "3"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func (p *rawPeer) do(args ...string) (string, error) {
	p.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := p.c.Write([]byte(encodeCommand(args...))); err != nil {
		return "", err
	}
	return readRawReply(p.r)
}
