package integration

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack16's net over the client reader and writer (perf17h's room): the
// same byte stream of commands, inline and RESP, with binary and large
// arguments, is cut into pieces of every size (one byte at a time,
// pieces held back mid-argument) and written to the proxy and to one
// redis-server; the replies must be the same bytes, over RESP2 and
// RESP3.
func TestAttack16StreamCutAnywhereGetsRedisBytes(t *testing.T) {
	one := startRedis(t).Addr
	_, p := setup(t, 3, proxy.Config{})
	binary := make([]byte, 0, 256*8)
	for range 8 {
		for b := range 256 {
			binary = append(binary, byte(b))
		}
	}
	stream := func(run string, big int) []byte {
		k, tok := "a16:stream:"+run, "tok\r\n\x00"+run
		var b bytes.Buffer
		b.WriteString("PING\r\n")
		b.WriteString("ECHO inline-" + run + "\r\n")
		b.WriteString(encodeCommand("SET", k, tok, "NX", "PX", "5000"))
		b.WriteString(encodeCommand("SET", k, "other", "NX", "PX", "5000"))
		b.WriteString(encodeCommand("GET", k))
		b.WriteString(encodeCommand("ECHO", string(binary)))
		b.WriteString(encodeCommand("ECHO", strings.Repeat("\r\n$*", big/4)))
		b.WriteString(encodeCommand("EVAL", distlockRelease, "1", k, "wrong"))
		b.WriteString(encodeCommand("EVAL", distlockRelease, "1", k, tok))
		b.WriteString(encodeCommand("GET", k))
		b.WriteString(encodeCommand("EXISTS", k))
		b.WriteString("\r\n") // an empty inline line: nothing to answer
		b.WriteString(encodeCommand("PING", "bye-"+run))
		return b.Bytes()
	}
	// The stream's last reply, after which the reader stops.
	last := func(run string) []byte { return []byte(fmt.Sprintf("bye-%s\r\n", run)) }
	cuts := []struct {
		name  string
		piece func(r *rand.Rand, left int) int
		pause bool
		big   int
		bad   bool // the stream ends in a protocol error
	}{
		{"whole", func(_ *rand.Rand, left int) int { return left }, false, 400 << 10, false}, // under max_bulk (512 KiB)
		{"1 byte", func(*rand.Rand, int) int { return 1 }, false, 4 << 10, false},
		{"3 bytes", func(*rand.Rand, int) int { return 3 }, false, 4 << 10, false},
		{"7 bytes held", func(*rand.Rand, int) int { return 7 }, true, 4 << 10, false},
		{"random", func(r *rand.Rand, _ int) int { return 1 + r.IntN(300) }, true, 256 << 10, false},
		{"2 bytes, a protocol error last", func(*rand.Rand, int) int { return 2 }, true, 4 << 10, true},
	}
	for _, resp3 := range []bool{false, true} {
		for ci, cut := range cuts {
			name := fmt.Sprintf("resp3=%v/%s", resp3, cut.name)
			t.Run(name, func(t *testing.T) {
				run := fmt.Sprintf("%v-%d", resp3, ci)
				var got [2][]byte
				for i, addr := range []string{one, p.Addr} {
					r := rand.New(rand.NewPCG(uint64(ci), 16))
					st, end := stream(run, cut.big), last(run)
					if cut.bad {
						st, end = append(st, "*2\r\n$4\r\nECHO\r\n$-7\r\n"...), []byte("invalid bulk length\r\n")
					}
					got[i] = attack16Replies(t, addr, resp3, st, end, cut.piece, cut.pause, r)
				}
				if !bytes.Equal(got[0], got[1]) {
					n := 0
					for n < len(got[0]) && n < len(got[1]) && got[0][n] == got[1][n] {
						n++
					}
					from := max(n-40, 0)
					t.Errorf("replies differ at byte %d of %d/%d:\nredis-server: %.120q\nproxy:        %.120q",
						n, len(got[0]), len(got[1]), got[0][from:], got[1][from:])
				}
			})
		}
	}
}

// attack16Replies writes stream to addr in pieces and returns every byte
// the server sent back, up to and including last. With resp3 it first
// sends HELLO 3 on its own and drops that reply (each server's differs).
func attack16Replies(t *testing.T, addr string, resp3 bool, stream, last []byte, piece func(*rand.Rand, int) int, pause bool, r *rand.Rand) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	if resp3 {
		c.Write([]byte(encodeCommand("HELLO", "3")))
		buf := make([]byte, 4096)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("HELLO 3 on %s: %v", addr, err)
		}
		// The whole map comes in one write from both servers; wait for a
		// straggler anyway.
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
	}
	done := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 64<<10)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		for !bytes.HasSuffix(all, last) {
			n, err := c.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				if err != io.EOF {
					all = append(all, fmt.Sprintf("<read: %v>", err)...)
				}
				break
			}
		}
		done <- all
	}()
	for at := 0; at < len(stream); {
		n := min(piece(r, len(stream)-at), len(stream)-at)
		if _, err := c.Write(stream[at : at+n]); err != nil {
			t.Fatalf("write to %s: %v", addr, err)
		}
		at += n
		if pause && r.IntN(40) == 0 {
			time.Sleep(5 * time.Millisecond) // the server reads a piece mid-argument
		}
	}
	return <-done
}
