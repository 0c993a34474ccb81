package acl

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", false}, // as stringmatchlen; a user's "*" pattern alone means every key, "" included
		{"*", "anything:at:all", true},
		{"orders:*", "orders:1", true},
		{"orders:*", "orders:", true},
		{"orders:*", "order:1", false},
		{"orders:*", "xorders:1", false},
		{"*:lock", "a/b:lock", true}, // * crosses every byte, / included (unlike path.Match)
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a**", "a", true},
		{"a*", "a", true},
		{"?", "", false},
		{"?", "x", true},
		{"??", "x", false},
		{"k[0-9]", "k7", true},
		{"k[9-0]", "k7", true}, // a reversed range is swapped, as in Redis
		{"k[0-9]", "kx", false},
		{"k[^0-9]", "kx", true},
		{"k[^0-9]", "k1", false},
		{"k[abc]", "kb", true},
		{"k[abc]", "kd", false},
		{"k[a\\]]", "k]", true},
		{"k[]", "k]", false}, // an empty set matches nothing
		{"k[a", "ka", true},  // unterminated: the set runs to the end
		{"k[a", "kb", false},
		{"k[a-", "k-", true},
		{"a\\*b", "a*b", true},
		{"a\\*b", "axb", false},
		{"a\\", "a\\", true}, // a trailing backslash is itself
		{"", "", true},
		{"", "x", false},
		{"x", "", false},
		{"*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.s, func(t *testing.T) {
			if got := Match(tt.pattern, []byte(tt.s)); got != tt.want {
				t.Errorf("Match(%q, %q) = %v; want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

// naiveMatch is Match without the give-up shortcut: exponential, but
// plainly right, so the fuzz target can check the shortcut against it.
func naiveMatch(p string, s []byte) bool {
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			if strings.TrimLeft(p, "*") == "" {
				return true
			}
			for i := 0; i < len(s); i++ {
				if naiveMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
		case '[':
			var ok bool
			ok, p = matchSet(p, s[0])
			if !ok {
				return false
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
		if len(s) == 0 {
			p = strings.TrimLeft(p, "*")
		}
	}
	return len(p) == 0 && len(s) == 0
}

func FuzzMatch(f *testing.F) {
	f.Add("orders:*", "orders:1")
	f.Add("k[^0-9]?*\\", "kx12\\")
	f.Add("*a*b", "aaab")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 24 || len(s) > 24 {
			return // naiveMatch is exponential
		}
		if got, want := Match(p, []byte(s)), naiveMatch(p, []byte(s)); got != want {
			t.Fatalf("Match(%q, %q) = %v; want %v", p, s, got, want)
		}
	})
}
