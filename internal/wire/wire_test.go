package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

var parseTests = []struct {
	name string
	in   string
	want any
}{
	{"status", "+OK\r\n", "OK"},
	{"other status", "+QUEUED\r\n", "QUEUED"},
	{"empty status", "+\r\n", ""},
	{"error", "-ERR unknown command 'x'\r\n", Error("ERR unknown command 'x'")},
	{"integer", ":42\r\n", int64(42)},
	{"negative integer", ":-2\r\n", int64(-2)},
	{"smallest integer", ":-9223372036854775808\r\n", int64(-1 << 63)},
	{"bulk", "$5\r\nhello\r\n", "hello"},
	{"empty bulk", "$0\r\n\r\n", ""},
	{"bulk with CRLF inside", "$4\r\na\r\nb\r\n", "a\r\nb"},
	{"nil bulk", "$-1\r\n", nil},
	{"nil array", "*-1\r\n", nil},
	{"empty array", "*0\r\n", []any{}},
	{"nested", "*3\r\n:1\r\n*2\r\n$1\r\na\r\n$-1\r\n-NOSCRIPT x\r\n", []any{int64(1), []any{"a", nil}, Error("NOSCRIPT x")}},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in + "+next\r\n")
			v, n, err := Parse(in)
			if err != nil || n != len(tt.in) || !reflect.DeepEqual(v, tt.want) {
				t.Fatalf("Parse(%q) = %#v, %d, %v; want %#v, %d, nil", tt.in, v, n, err, tt.want, len(tt.in))
			}
			// Every part of it is incomplete, not an error.
			for i := range len(tt.in) {
				if v, n, err := Parse([]byte(tt.in[:i])); n != 0 || err != nil {
					t.Fatalf("Parse(%q) = %#v, %d, %v; want incomplete", tt.in[:i], v, n, err)
				}
			}
		})
	}
}

func TestParseRefusesWhatIsNotRESP2(t *testing.T) {
	for _, in := range []string{
		"OK\r\n", "\r\n", "+OK\rX", ":\r\n", ":1a\r\n", ":99999999999999999999\r\n", "$-2\r\n",
		"$x\r\n", "$3\r\nabcde\r\n", "*-2\r\n", "*x\r\n", "%1\r\n", "_\r\n", ":--1\r\n", ":-\r\n",
	} {
		if v, n, err := Parse([]byte(in)); !errors.Is(err, ErrProtocol) {
			t.Errorf("Parse(%q) = %#v, %d, %v; want %v", in, v, n, err, ErrProtocol)
		}
	}
}

// A deeply nested reply is refused, not a stack overflow.
func TestParseBoundsNesting(t *testing.T) {
	in := strings.Repeat("*1\r\n", maxDepth+1) + ":1\r\n"
	if _, _, err := Parse([]byte(in)); !errors.Is(err, ErrProtocol) {
		t.Errorf("Parse of %d nested arrays = %v; want %v", maxDepth+1, err, ErrProtocol)
	}
}

func TestAppendCommand(t *testing.T) {
	got := AppendCommand(nil, []any{"set", []byte("k"), 10, int64(-3), true, 1.5, time.Millisecond})
	want := "*7\r\n$3\r\nset\r\n$1\r\nk\r\n$2\r\n10\r\n$2\r\n-3\r\n$1\r\n1\r\n$3\r\n1.5\r\n$7\r\n1000000\r\n"
	if string(got) != want {
		t.Errorf("AppendCommand = %q; want %q", got, want)
	}
}

// oneByte reads one byte at a time: every reply arrives in parts.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(b []byte) (int, error) { return o.r.Read(b[:min(len(b), 1)]) }

// A reply read in parts, and one larger than the buffer, come out whole.
func TestReaderReadsRepliesInParts(t *testing.T) {
	var all bytes.Buffer
	var want []any
	for _, tt := range parseTests {
		all.WriteString(tt.in)
		want = append(want, tt.want)
	}
	big := strings.Repeat("x", 5000)
	all.WriteString("$5000\r\n" + big + "\r\n")
	want = append(want, big)
	for _, r := range []io.Reader{bytes.NewReader(all.Bytes()), oneByte{bytes.NewReader(all.Bytes())}} {
		rd := NewReader(r, 16)
		for i, w := range want {
			v, err := rd.Next()
			if err != nil || !reflect.DeepEqual(v, w) {
				t.Fatalf("reply %d = %#v, %v; want %#v", i, v, err, w)
			}
		}
		if v, err := rd.Next(); err != io.EOF {
			t.Fatalf("after the last reply: %#v, %v; want EOF", v, err)
		}
	}
}

// chunks reads at most n bytes at a time.
type chunks struct {
	r io.Reader
	n int
}

func (c chunks) Read(b []byte) (int, error) { return c.r.Read(b[:min(len(b), c.n)]) }

// A long reply that arrives in many reads is parsed once, not again from
// its start after every read: what it allocates is its own items, not
// their count times the reads.
func TestReaderParsesALongReplyOnce(t *testing.T) {
	const items = 2000
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(items+1) + "\r\n*2\r\n:1\r\n$-1\r\n")
	for range items {
		b.WriteString("$2\r\nab\r\n")
	}
	in := b.String()
	allocs := testing.AllocsPerRun(5, func() {
		rd := NewReader(chunks{strings.NewReader(in), 256}, 512)
		v, err := rd.Next()
		if got, ok := v.([]any); err != nil || !ok || len(got) != items+1 || got[items] != "ab" {
			t.Fatalf("Next = %d items, %v; want %d", len(got), err, items+1)
		}
	})
	// Each item's string and its place in an any, the arrays, the
	// reader and its buffers.
	if allocs > 2*items+40 {
		t.Errorf("reading a %d-item reply in 256-byte reads allocated %v times; want at most %d", items+1, allocs, 2*items+40)
	}
}

// replyCases are commands whose replies cover every RESP2 type; each is
// sent to a real redis-server by go-redis and by this package.
var replyCases = [][]any{
	{"set", "k", "v"},
	{"get", "k"},
	{"get", "missing"},
	{"set", "k", "v", "nx"},
	{"incr", "n"},
	{"rpush", "l", "a", "", "c\r\n"},
	{"lrange", "l", 0, -1},
	{"lrange", "missing", 0, -1},
	{"incr", "k"},
	{"nosuchcommand"},
	{"eval", "return {1, {2, false, 'x'}, redis.error_reply('MY err'), redis.status_reply('FINE')}", 0},
	{"eval", "return redis.call('get', KEYS[1])", 1, "missing"},
	{"evalsha", "0000000000000000000000000000000000000000", 0},
	{"echo", strings.Repeat("big", 40000)},
	{"ping"},
	{"exists", "k", "n", "missing"},
}

// The reader reads what redis-server sends as go-redis does.
func TestReaderMatchesGoRedisOnRealReplies(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { client.Close() })
	type answer struct {
		v   any
		err string
	}
	var want []answer
	for _, args := range replyCases {
		v, err := client.Do(t.Context(), args...).Result()
		a := answer{v: v}
		if err != nil {
			a = answer{err: err.Error()}
		}
		// go-redis gives a nested error reply as its own error type.
		if items, ok := v.([]any); ok {
			for i, it := range items {
				if e, ok := it.(error); ok {
					items[i] = Error(e.Error())
				}
			}
		}
		want = append(want, a)
	}
	if err := client.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var batch []byte // pipelined: every command in one write
	for _, args := range replyCases {
		batch = AppendCommand(batch, args)
	}
	if _, err := conn.Write(batch); err != nil {
		t.Fatal(err)
	}
	rd := NewReader(conn, 512)
	for i, args := range replyCases {
		v, err := rd.Next()
		if err != nil {
			t.Fatalf("%v: %v", args[0], err)
		}
		got := answer{v: v}
		switch v := v.(type) {
		case nil:
			got = answer{err: redis.Nil.Error()}
		case Error:
			got = answer{err: v.Error()}
			if re := redis.Error(nil); !errors.As(error(v), &re) {
				t.Errorf("%v: go-redis does not see %q as a reply", args[0], v)
			}
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("%v = %#v; go-redis read %#v", args[0], got, want[i])
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte("*2\r\n$3\r\nabc\r\n:7\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, n, err := Parse(in)
		if err != nil {
			return
		}
		if n < 0 || n > len(in) {
			t.Fatalf("Parse(%q) length %d", in, n)
		}
		if n == 0 {
			return
		}
		// A reply parses the same with anything after it, and its
		// parts are incomplete.
		v2, n2, err := Parse(append(in[:n:n], "+x\r\n"...))
		if err != nil || n2 != n || !reflect.DeepEqual(v, v2) {
			t.Fatalf("Parse(%q) = %#v, %d but with more after it %#v, %d, %v", in[:n], v, n, v2, n2, err)
		}
		if _, m, err := Parse(in[:n-1]); m != 0 || err != nil {
			t.Fatalf("Parse(%q), part of a reply, = %d, %v; want incomplete", in[:n-1], m, err)
		}
	})
}

// The Reader, given its input in reads of any size, returns what Parse
// finds in it all at once, reply after reply, and the same error; at the
// end, EOF for a reply cut short.
func FuzzReaderInParts(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in+tt.in), uint8(1))
	}
	f.Add([]byte("*3\r\n*2\r\n:1\r\n$2\r\nab\r\n*0\r\n+x\r\n:5\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, size uint8) {
		rd := NewReader(chunks{bytes.NewReader(in), int(size%16) + 1}, 16)
		rest := in
		for {
			want, n, perr := Parse(rest)
			got, err := rd.Next()
			switch {
			case perr != nil:
				if err != perr {
					t.Fatalf("Next after %q = %#v, %v; want %v", in[:len(in)-len(rest)], got, err, perr)
				}
				return
			case n == 0:
				// Parse looks no further than an array's count when too
				// few bytes follow it for its items; the Reader, having
				// scanned the items that came, may find bad bytes first.
				if err != io.EOF && err != ErrProtocol {
					t.Fatalf("Next on the incomplete %q = %#v, %v; want EOF", rest, got, err)
				}
				return
			case err != nil || !reflect.DeepEqual(got, want):
				t.Fatalf("Next on %q = %#v, %v; want %#v", rest, got, err, want)
			}
			rest = rest[n:]
		}
	})
}

// repeat reads the same bytes again and again.
type repeat struct {
	b   []byte
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.b[r.off:])
		n += c
		r.off = (r.off + c) % len(r.b)
	}
	return n, nil
}

// A short bulk reply equal to the one before it on the connection (a
// script's answer, call after call) is returned again without
// allocating; a different one is its own value.
func TestReaderReturnsARepeatedBulkReplyWithoutAllocating(t *testing.T) {
	const reply = "$15\r\ns1.0.1.10500:OK\r\n"
	rd := NewReader(&repeat{b: []byte(reply)}, 4096)
	if v, err := rd.Next(); err != nil || v != "s1.0.1.10500:OK" {
		t.Fatalf("Next = %#v, %v", v, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if v, err := rd.Next(); err != nil || v != "s1.0.1.10500:OK" {
			t.Fatalf("Next = %#v, %v", v, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a repeated bulk reply allocated %v times; want 0", allocs)
	}
	in := "$1\r\na\r\n$1\r\nb\r\n$1\r\nb\r\n$0\r\n\r\n$-1\r\n$1\r\nb\r\n+b\r\n"
	rd = NewReader(strings.NewReader(in), 512)
	for i, w := range []any{"a", "b", "b", "", nil, "b", "b"} {
		if v, err := rd.Next(); err != nil || v != w {
			t.Fatalf("reply %d = %#v, %v; want %#v", i, v, err, w)
		}
	}
}

// A short array of integers equal to the one before it (a release's
// codes, call after call) is returned again without allocating; any
// other reply after it is its own value, even one it begins like.
func TestReaderReturnsARepeatedIntegerArrayWithoutAllocating(t *testing.T) {
	const reply = "*1\r\n:1\r\n"
	rd := NewReader(&repeat{b: []byte(reply)}, 4096)
	if v, err := rd.Next(); err != nil || !reflect.DeepEqual(v, []any{int64(1)}) {
		t.Fatalf("Next = %#v, %v", v, err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		v, err := rd.Next()
		if items, _ := v.([]any); err != nil || len(items) != 1 || items[0] != int64(1) {
			t.Fatalf("Next = %#v, %v", v, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a repeated integer array allocated %v times; want 0", allocs)
	}
	in := "*1\r\n:1\r\n*1\r\n:1\r\n*1\r\n:10\r\n*2\r\n:1\r\n:2\r\n*2\r\n:1\r\n:2\r\n*1\r\n$1\r\n1\r\n*1\r\n$1\r\n1\r\n" +
		"*1\r\n:1\r\n*0\r\n*0\r\n*-1\r\n*1\r\n*1\r\n:1\r\n*1\r\n:1\r\n:1\r\n"
	rd = NewReader(strings.NewReader(in), 512)
	for i, w := range []any{[]any{int64(1)}, []any{int64(1)}, []any{int64(10)}, []any{int64(1), int64(2)},
		[]any{int64(1), int64(2)}, []any{"1"}, []any{"1"}, []any{int64(1)}, []any{}, []any{}, nil,
		[]any{[]any{int64(1)}}, []any{int64(1)}, int64(1)} {
		if v, err := rd.Next(); err != nil || !reflect.DeepEqual(v, w) {
			t.Fatalf("reply %d = %#v, %v; want %#v", i, v, err, w)
		}
	}
	// Arrays of strings are new each time: their callers may keep them.
	rd = NewReader(strings.NewReader("*1\r\n$1\r\na\r\n*1\r\n$1\r\na\r\n"), 512)
	a, _ := rd.Next()
	b, _ := rd.Next()
	if &a.([]any)[0] == &b.([]any)[0] {
		t.Errorf("two string arrays share their items")
	}
}
