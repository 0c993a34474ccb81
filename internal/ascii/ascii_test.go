package ascii

import "testing"

func TestFoldsASCIIOnly(t *testing.T) {
	for _, c := range []struct {
		in, lower, upper string
	}{
		{"KeepTTL", "keepttl", "KEEPTTL"},
		{"\u212Aeys", "\u212Aeys", "\u212AEYS"}, // a Kelvin sign stays
		{"\u0131feq", "\u0131feq", "\u0131FEQ"}, // a dotless i stays
		{"\u017Fync", "\u017Fync", "\u017FYNC"}, // a long s stays
		{"", "", ""},
		{"a\x00Z\xff", "a\x00z\xff", "A\x00Z\xff"},
	} {
		if got := Lower(c.in); got != c.lower {
			t.Errorf("Lower(%q) = %q, want %q", c.in, got, c.lower)
		}
		if got := Lower([]byte(c.in)); got != c.lower {
			t.Errorf("Lower([]byte(%q)) = %q, want %q", c.in, got, c.lower)
		}
		if got := Upper(c.in); got != c.upper {
			t.Errorf("Upper(%q) = %q, want %q", c.in, got, c.upper)
		}
	}
}

func TestEqualFold(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"sync", "SYNC", true},
		{"Publish", "publish", true},
		{"\u017Fync", "sync", false},
		{"\u212Aeys", "keys", false},
		{"sync", "syn", false},
		{"", "", true},
	} {
		if got := EqualFold(c.a, []byte(c.b)); got != c.want {
			t.Errorf("EqualFold(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
