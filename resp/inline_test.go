package resp

import (
	"fmt"
	"strings"
	"testing"
)

func TestSplitInline(t *testing.T) {
	tests := []struct {
		line string
		want []string // nil: unbalanced quotes
	}{
		{"PING", []string{"PING"}},
		{"  SET  k\tt  ", []string{"SET", "k", "t"}},
		{"\t\v\f", []string{}},
		{`ECHO "a b"`, []string{"ECHO", "a b"}},
		{`ECHO "\x41\n\r\t\b\a\q\\\""`, []string{"ECHO", "A\n\r\t\b\aq\\\""}},
		{`ECHO "\x4g"`, []string{"ECHO", "x4g"}},
		{`ECHO 'a\nb\'c'`, []string{"ECHO", `a\nb'c`}},
		{`ECHO ""`, []string{"ECHO", ""}},
		{`ECHO a"b c"d`, nil}, // a quote closed by something other than a blank
		{`ECHO a"b c"`, []string{"ECHO", "ab c"}},
		{`ECHO "a"b`, nil},
		{`ECHO "a"` + "\t" + `b`, []string{"ECHO", "a", "b"}},
		{`ECHO "a`, nil},
		{`ECHO 'a`, nil},
		{`ECHO "a\"`, nil},
		{"ECHO a\x00b", []string{"ECHO", "a"}},
		{"ECHO \"a\x00b\"", nil},
	}
	for _, tt := range tests {
		got, ok := SplitInline([]byte(tt.line))
		want := fmt.Sprintf("%q", tt.want)
		if tt.want == nil {
			if ok {
				t.Errorf("SplitInline(%q) = %q; want unbalanced quotes", tt.line, got)
			}
			continue
		}
		if !ok || fmt.Sprintf("%q", bytesToStrings(got)) != want {
			t.Errorf("SplitInline(%q) = %q, %v; want %s", tt.line, got, ok, want)
		}
	}
}

func bytesToStrings(b [][]byte) []string {
	out := []string{}
	for _, a := range b {
		out = append(out, string(a))
	}
	return out
}

// FuzzSplitInline checks that a line of plain words splits as
// strings.Fields does, and that no line panics.
func FuzzSplitInline(f *testing.F) {
	for _, s := range []string{"PING", `ECHO "a b"`, `'x\'y'`, "\"\\x4", "a\tb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got, ok := SplitInline([]byte(line))
		if strings.ContainsAny(line, "\"'\x00\v\f") {
			return
		}
		want := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' })
		if !ok || fmt.Sprintf("%q", bytesToStrings(got)) != fmt.Sprintf("%q", want) {
			t.Fatalf("SplitInline(%q) = %q, %v; want %q", line, got, ok, want)
		}
	})
}
