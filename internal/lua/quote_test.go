package lua

import (
	"strings"
	"testing"

	glua "github.com/yuin/gopher-lua"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `""`},
		{"del", `"del"`},
		{`a"b\c`, `"a\034b\092c"`},
		{"nl\n1", `"nl\0101"`}, // three digits, so the 1 stays a 1
		{"\x00\x7f\xff", `"\000\127\255"`},
		{"it's", `"it's"`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %s; want %s", tt.in, got, tt.want)
		}
	}
}

// FuzzQuote checks that Lua reads every quoted string back as itself,
// and that the literal is printable ASCII on one line.
func FuzzQuote(f *testing.F) {
	f.Add("")
	f.Add("a\"b\\c\n\r\t\x00\xff]]--[[")
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		for i := 0; i < len(q); i++ {
			if q[i] < 0x20 || q[i] >= 0x7f {
				t.Fatalf("Quote(%q) = %q; has byte %#x", s, q, q[i])
			}
		}
		L := glua.NewState(glua.Options{SkipOpenLibs: true})
		defer L.Close()
		if err := L.DoString("v = " + q); err != nil {
			t.Fatalf("Lua reads Quote(%q) = %s: %v", s, q, err)
		}
		if got := L.GetGlobal("v"); got.Type() != glua.LTString || got.String() != s {
			t.Fatalf("Lua reads Quote(%q) = %s as %q; want %q", s, q, got.String(), s)
		}
		if strings.Contains(q[1:len(q)-1], `"`) {
			t.Fatalf("Quote(%q) = %s; has an unescaped quote", s, q)
		}
	})
}
