package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tidwall/redcon"
)

type frameTest struct {
	name    string
	lim     Limits // zero: the defaults
	in      string
	wantN   int    // -1: all of in
	wantErr string // "": no error
}

// mbulk builds a multibulk command.
func mbulk(a ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(a))
	for _, s := range a {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
	}
	return b.String()
}

func mbulkRepeat(n int, s string) string {
	a := make([]string, n)
	for i := range a {
		a[i] = s
	}
	return mbulk(a...)
}

var frameTests = []frameTest{
	// Valid streams.
	{"multibulk ping", Limits{}, mbulk("PING"), -1, ""},
	{"pipelined multibulk", Limits{}, mbulk("PING") + mbulk("SET", "k", "t", "NX", "PX", "30000") + mbulk("GET", "k"), -1, ""},
	{"empty argument", Limits{}, mbulk("GET", ""), -1, ""},
	{"payload holds CRLF and stars", Limits{}, mbulk("SET", "\r\n*9\r\n$", "\x00\xff"), -1, ""},
	{"partial command", Limits{}, "*2\r\n$3\r\nGET\r\n$1\r", -1, ""},
	{"partial count", Limits{}, "*10", -1, ""},
	{"inline", Limits{}, "PING\r\nSET k t NX PX 30000\nGET k\r\n", -1, ""},
	{"inline quotes", Limits{}, "SET \"a b\" 'c\\'d' \"e\\\"\" \"\"\r\n", -1, ""},
	{"inline empty lines", Limits{}, "\r\n\n  \r\n", -1, ""},
	{"inline with inner CR", Limits{}, "PI\rNG x\r\r\n", -1, ""},
	{"inline then multibulk", Limits{}, "PING\r\n" + mbulk("PING"), -1, ""},
	{"partial inline ends in CR", Limits{}, "\"a\"\r", -1, ""},
	{"inline at MaxInline", Limits{}, strings.Repeat("a", 64<<10-2) + "\r\n", -1, ""},
	{"inline 31 spaces", Limits{}, strings.Repeat(" ", 31) + "\n", -1, ""},
	{"pre-auth 10 args", PreAuth, mbulkRepeat(10, "a"), -1, ""},
	{"pre-auth 16KiB bulk", PreAuth, mbulk("AUTH", strings.Repeat("p", 16<<10)), -1, ""},
	{"pre-auth inline 10 args", PreAuth, "a b c d e f g h i j\r\n", -1, ""},
	{"1024 args", Limits{}, mbulkRepeat(1024, ""), -1, ""},
	{"empty multibulks, which Redis ignores", Limits{}, "*0\r\n*-1\r\n*-9223372036854775807\r\n" + mbulk("PING") + "*0\r\n", -1, ""},
	{"512KiB bulk", Limits{}, mbulk("SET", strings.Repeat("v", 512<<10)), -1, ""},
	{"command at MaxCommand", Limits{MaxCommand: 14}, mbulk("PING"), -1, ""},
	{"inline at MaxCommand", Limits{MaxCommand: 6}, "PING\r\n", -1, ""},
	{"1MiB command", Limits{}, mbulk("SET", strings.Repeat("v", 512<<10), strings.Repeat("w", 512<<10-40)), -1, ""},

	// The inputs that crash or stall redcon.
	{"bulk length overflows", Limits{}, "*1\r\n$9223372036854775807\r\n", 10, "Protocol error: invalid bulk length"},
	{"huge count", Limits{}, "*100000000\r\n", 5, "Protocol error: invalid multibulk length"},

	// Multibulk violations.
	{"minus zero count", Limits{}, "*-0\r\n", 2, "Protocol error: invalid multibulk length"},
	{"count of zeros", Limits{}, "*00\r\n", 2, "Protocol error: invalid multibulk length"},
	{"lone minus count", Limits{}, "*-\r\n", 2, "Protocol error: invalid multibulk length"},
	{"count with plus", Limits{}, "*+1\r\n", 1, "Protocol error: invalid multibulk length"},
	{"count leading zero", Limits{}, "*01\r\n", 2, "Protocol error: invalid multibulk length"},
	{"empty count", Limits{}, "*\r\n", 1, "Protocol error: invalid multibulk length"},
	{"count without CR", Limits{}, "*1\n", 2, "Protocol error: invalid multibulk length"},
	{"count CR without LF", Limits{}, "*1\rx", 3, "Protocol error: invalid multibulk length"},
	{"count overflows", Limits{}, "*18446744073709551617\r\n", 4, "Protocol error: invalid multibulk length"},
	{"too many args", Limits{}, "*1025\r\n", 4, "Protocol error: invalid multibulk length"},
	{"negative bulk length", Limits{}, "*1\r\n$-1\r\n", 5, "Protocol error: invalid bulk length"},
	{"bulk length with plus", Limits{}, "*1\r\n$+4\r\nPING\r\n", 5, "Protocol error: invalid bulk length"},
	{"bulk length leading zero", Limits{}, "*1\r\n$04\r\nPING\r\n", 6, "Protocol error: invalid bulk length"},
	{"empty bulk length", Limits{}, "*1\r\n$\r\n\r\n", 5, "Protocol error: invalid bulk length"},
	{"bulk length not a number", Limits{}, "*1\r\n$4x\r\nPING\r\n", 6, "Protocol error: invalid bulk length"},
	{"bulk length without CR", Limits{}, "*1\r\n$4\nPING\r\n", 6, "Protocol error: invalid bulk length"},
	{"bulk length CR without LF", Limits{}, "*1\r\n$4\rPING\r\n", 7, "Protocol error: invalid bulk length"},
	{"too big bulk", Limits{}, "*1\r\n$524289\r\n", 10, "Protocol error: invalid bulk length"},
	{"payload too long", Limits{}, "*1\r\n$4\r\nPINGX\r\n", 12, "Protocol error: invalid bulk length"},
	{"payload LF without CR", Limits{}, "*1\r\n$4\r\nPING\n", 12, "Protocol error: invalid bulk length"},
	{"payload CR without LF", Limits{}, "*1\r\n$4\r\nPING\rx", 13, "Protocol error: invalid bulk length"},
	{"no dollar", Limits{}, "*1\r\n+PING\r\n", 4, "Protocol error: expected '$', got '+'"},
	{"no dollar but newline", Limits{}, "*2\r\n$1\r\na\r\n\r\n", 11, "Protocol error: expected '$', got ' '"},
	{"bad frame after good ones", Limits{}, "PING\r\n" + mbulk("PING") + "*1\r\n$-1\r\n", 25, "Protocol error: invalid bulk length"},

	// Whole-command limit: refused at the length that would pass it,
	// before the payload.
	{"command over MaxCommand", Limits{MaxCommand: 13}, mbulk("PING"), 7, "Protocol error: too big command"},
	{"inline over MaxCommand", Limits{MaxCommand: 5}, "PING\r\n", 5, "Protocol error: too big command"},
	{"three 512KiB args", Limits{}, mbulkRepeat(3, strings.Repeat("v", 512<<10)), 524311, "Protocol error: too big command"},
	{"1024 args of 512KiB", Limits{}, "*1024\r\n" + strings.Repeat("$524288\r\n"+strings.Repeat("v", 512<<10)+"\r\n", 2), 524314, "Protocol error: too big command"},
	{"headers over MaxCommand", Limits{MaxCommand: 40}, mbulkRepeat(10, ""), 38, "Protocol error: too big command"},

	// Pre-auth limits.
	{"pre-auth 11 args", PreAuth, mbulkRepeat(11, "a"), 2, "Protocol error: invalid multibulk length"},
	{"pre-auth 16KiB+1 bulk", PreAuth, mbulk("AUTH", strings.Repeat("p", 16<<10+1)), 19, "Protocol error: invalid bulk length"},
	{"pre-auth inline 11 args", PreAuth, "a b c d e f g h i j k\r\n", 20, "Protocol error: too many arguments in inline request"},
	{"pre-auth inline too big", PreAuth, strings.Repeat("a", 16<<10) + "\n", 16 << 10, "Protocol error: too big inline request"},

	// Inline violations.
	{"inline too big", Limits{}, strings.Repeat("a", 64<<10-1) + "\r\n", 64 << 10, "Protocol error: too big inline request"},
	{"inline without newline", Limits{}, strings.Repeat("a", 100<<10), 64 << 10, "Protocol error: too big inline request"},
	{"inline 32 spaces", Limits{}, strings.Repeat(" ", 32) + "\n", 31, "Protocol error: too many spaces and quotes in inline request"},
	{"inline line of spaces", Limits{}, strings.Repeat(" ", 64<<10-2) + "\r\n", 31, "Protocol error: too many spaces and quotes in inline request"},
	{"inline too many quoted args", Limits{}, strings.Repeat(`"" `, 11) + "\n", 31, "Protocol error: too many spaces and quotes in inline request"},
	{"unclosed quote", Limits{}, "GET \"k\r\n", 7, "Protocol error: unbalanced quotes in request"},
	{"unclosed single quote", Limits{}, "GET 'k\n", 6, "Protocol error: unbalanced quotes in request"},
	{"escaped closing quote", Limits{}, "GET \"k\\\"\r\n", 9, "Protocol error: unbalanced quotes in request"},
	{"quote inside word", Limits{}, "GET k\"\r\n", 5, "Protocol error: unbalanced quotes in request"},
	{"text after closing quote", Limits{}, "GET \"k\"x\r\n", 7, "Protocol error: unbalanced quotes in request"},
	{"quote after closing quote", Limits{}, "GET \"k\"'x'\r\n", 7, "Protocol error: unbalanced quotes in request"},
	{"CR after closing quote", Limits{}, "GET \"k\"\rx\n", 8, "Protocol error: unbalanced quotes in request"},
	{"CR CR after closing quote", Limits{}, "GET \"k\"\r\r\n", 8, "Protocol error: unbalanced quotes in request"},
}

// feedPieces runs in through f in pieces of the given sizes (the last one
// repeats) and returns the total accepted and the first error.
func feedPieces(f *Framer, in []byte, sizes ...int) (int, error) {
	total := 0
	for i := 0; len(in) > 0; i++ {
		k := min(sizes[min(i, len(sizes)-1)], len(in))
		n, err := f.Feed(in[:k])
		total += n
		if err != nil {
			return total, err
		}
		in = in[k:]
	}
	return total, nil
}

func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestFramerFeed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tt := range frameTests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			want := tt.wantN
			if want < 0 {
				want = len(in)
			}
			random := make([]int, 64)
			for i := range random {
				random[i] = 1 + rng.IntN(16)
			}
			for _, how := range []struct {
				name  string
				sizes []int
			}{
				{"whole", []int{len(in) + 1}},
				{"byte by byte", []int{1}},
				{"random chunks", random},
			} {
				f := NewFramer(tt.lim)
				n, err := feedPieces(f, in, how.sizes...)
				if n != want || errMsg(err) != tt.wantErr {
					t.Errorf("%s: Feed = %d, %q; want %d, %q", how.name, n, errMsg(err), want, tt.wantErr)
				}
				var perr *ProtocolError
				if err != nil && !errors.As(err, &perr) {
					t.Errorf("%s: Feed error %T is not a *ProtocolError", how.name, err)
				}
				if err == nil {
					continue
				}
				if n2, err2 := f.Feed([]byte(mbulk("PING"))); n2 != 0 || err2 != err {
					t.Errorf("%s: Feed after error = %d, %v; want 0, %v", how.name, n2, err2, err)
				}
			}
		})
	}
}

func TestFramerPending(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"nothing", "", 0},
		{"complete multibulk", mbulk("PING"), 0},
		{"inside payload", "*1\r\n$4\r\nPI", 10},
		{"after complete", mbulk("PING") + "*1\r\n$4\r\nPI", 10},
		{"complete inline", "PING\r\n", 0},
		{"partial inline", "PING\r\nPI", 2},
		{"inline CR", "PING\r", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(Limits{})
			if _, err := f.Feed([]byte(tt.in)); err != nil {
				t.Fatalf("Feed(%q): %v", tt.in, err)
			}
			if got := f.Pending(); got != tt.want {
				t.Errorf("Pending after %q = %d; want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestFramerFeedCommand(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int // n of each call; each but the last completes a command
		wantErr string
	}{
		{"one at a time", "PING\r\nGET k\r\n" + mbulk("PING"), []int{6, 7, 14, 0}, ""},
		{"lines without arguments go with the next command", "\r\n \nPING\r\n\n", []int{10, 1}, ""},
		{"partial command", mbulk("PING") + "*1\r\n$4\r\nPI", []int{14, 10}, ""},
		{"violation", "PING\r\n*00\r\n", []int{6, 2}, "Protocol error: invalid multibulk length"},
		{"an empty multibulk ends a call", "*0\r\n" + mbulk("PING"), []int{4}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(Limits{})
			in := []byte(tt.in)
			var got []int
			var err error
			for {
				n, done, e := f.FeedCommand(in)
				got, in, err = append(got, n), in[n:], e
				if !done {
					break
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || errMsg(err) != tt.wantErr {
				t.Errorf("FeedCommand calls = %v, %q; want %v, %q", got, errMsg(err), tt.want, tt.wantErr)
			}
		})
	}
}

func TestFramerSetLimits(t *testing.T) {
	big := mbulk("SET", "k", strings.Repeat("v", 20000))
	tests := []struct {
		name    string
		first   Limits
		before  string // fed under first
		then    Limits
		after   string // fed after SetLimits(then)
		wantN   int    // of after; -1: all
		wantErr string
	}{
		{"lifted after AUTH", PreAuth, mbulk("AUTH", "pw"), Limits{}, mbulkRepeat(11, "a") + big, -1, ""},
		{"still pre-auth", PreAuth, mbulk("AUTH", "pw"), PreAuth, mbulkRepeat(11, "a"), 2, "Protocol error: invalid multibulk length"},
		{"lowered applies to next command", Limits{}, mbulk("PING"), PreAuth, big, 25, "Protocol error: invalid bulk length"},
		// The command in progress keeps the limits it started with.
		{"mid command keeps old limits", Limits{}, "*3\r\n$3\r\nSET\r\n", PreAuth, big[len("*3\r\n$3\r\nSET\r\n"):] + mbulkRepeat(11, "a"), len(big) - 13 + 2, "Protocol error: invalid multibulk length"},
		{"mid inline keeps old limits", Limits{}, "a b c d e", PreAuth, " f g h i j k\r\n" + "a b c d e f g h i j k\r\n", 14 + 20, "Protocol error: too many arguments in inline request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFramer(tt.first)
			if n, err := f.Feed([]byte(tt.before)); err != nil {
				t.Fatalf("Feed(%q) = %d, %v; want %d, nil", tt.before, n, err, len(tt.before))
			}
			f.SetLimits(tt.then)
			want := tt.wantN
			if want < 0 {
				want = len(tt.after)
			}
			n, err := f.Feed([]byte(tt.after))
			if n != want || errMsg(err) != tt.wantErr {
				t.Errorf("Feed after SetLimits = %d, %q; want %d, %q", n, errMsg(err), want, tt.wantErr)
			}
		})
	}
}

// fuzzSmallLimits make the limit checks reachable for short fuzz inputs.
var fuzzSmallLimits = Limits{MaxArgs: 3, MaxBulk: 8, MaxInline: 24}

// withinDeadline runs fn and fails t if it takes longer than 2s, which no input
// here should come near.
func withinDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { // waited for below, or the test fails
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatalf("%s did not finish within 2s", what)
	}
}

// commandsAccepted counts the commands that redcon will hand to its handler for
// the accepted prefix in: complete multibulk commands, and complete inline
// lines with at least one argument.
func commandsAccepted(in []byte, lim Limits) int {
	f := NewFramer(lim)
	count := 0
	for i, c := range in {
		inline := f.state == stInline || (f.state == stCommand && c != '*')
		if _, err := f.Feed(in[i : i+1]); err != nil {
			break
		}
		if f.Pending() == 0 && !f.empty && (!inline || f.args > 0) {
			count++
		}
	}
	return count
}

// redconCommands runs redcon's own reader over r and returns how many
// commands it parsed, any panic, and the error that ended it.
func redconCommands(r io.Reader) (cmds int, panicked any, err error) {
	defer func() { panicked = recover() }()
	rd := redcon.NewReader(r)
	for {
		cs, err := rd.ReadCommands()
		if err != nil {
			return cmds, nil, err
		}
		cmds += len(cs)
	}
}

func FuzzFramer(f *testing.F) {
	for _, tt := range frameTests {
		if len(tt.in) < 4<<10 {
			f.Add([]byte(tt.in), false)
			f.Add([]byte(tt.in), true)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, small bool) {
		lim := Limits{}
		if small {
			lim = fuzzSmallLimits
		}
		var n, n1, n2, dones int
		var err, err1, err2 error
		var stripped []byte // the accepted bytes without empty multibulks
		withinDeadline(t, "Feed", func() {
			n, err = NewFramer(lim).Feed(in)
			n1, err1 = feedPieces(NewFramer(lim), in, 1)
			fr := NewFramer(lim)
			for n2 < len(in) {
				k, done, err := fr.FeedCommand(in[n2:])
				n2, err2 = n2+k, err
				switch {
				case err != nil || k == 0:
				case done:
					dones++
					stripped = append(stripped, in[n2-k:n2]...)
					continue
				case fr.Pending() > 0:
					stripped = append(stripped, in[n2-k:n2]...)
					continue
				default:
					continue // empty lines and multibulks, dropped as guardedConn does
				}
				break
			}
		})
		if n != n1 || errMsg(err) != errMsg(err1) {
			t.Fatalf("Feed = %d, %v but byte by byte = %d, %v", n, err, n1, err1)
		}
		if (err == nil) != (n == len(in)) || n > len(in) {
			t.Fatalf("Feed = %d, %v for %d bytes", n, err, len(in))
		}
		prefix := in[:n]
		want := commandsAccepted(prefix, lim)
		if n2 != n || errMsg(err2) != errMsg(err) || dones != want {
			t.Fatalf("FeedCommand until done = %d, %v, %d commands; want %d, %v, %d", n2, err2, dones, n, err, want)
		}
		check := func(how string, r io.Reader) {
			var got int
			var rerr error
			var p any
			withinDeadline(t, "redcon "+how, func() { got, p, rerr = redconCommands(r) })
			if p != nil {
				t.Fatalf("redcon %s panicked on accepted %q: %v", how, prefix, p)
			}
			if rerr != io.EOF || got != want {
				t.Fatalf("redcon %s on accepted %q = %d commands, %v; want %d, EOF", how, prefix, got, rerr, want)
			}
		}
		check("whole", bytes.NewReader(stripped))
		// redcon rescans a partial line on every read, so reading a long
		// prefix byte by byte would only slow the fuzzer down.
		if len(stripped) <= 1<<10 {
			check("byte by byte", iotest.OneByteReader(bytes.NewReader(stripped)))
		}
	})
}
