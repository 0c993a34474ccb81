package acl

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

var matchTests = []struct {
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

func TestMatch(t *testing.T) {
	for _, tt := range matchTests {
		t.Run(tt.pattern+" "+tt.s, func(t *testing.T) {
			if got := Match(tt.pattern, []byte(tt.s)); got != tt.want {
				t.Errorf("Match(%q, %q) = %v; want %v", tt.pattern, tt.s, got, tt.want)
			}
		})
	}
}

// redisMatch is an oracle for Match written apart from it: it turns the
// pattern into a Go regular expression by the rules of Redis's
// stringmatchlen (util.c), read afresh, bytes as Latin-1 runes, so that
// a bug in Match's set parsing or its give-up shortcut shows as a
// difference. It shares no code with Match.
func redisMatch(t testing.TB, p string, s []byte) bool {
	t.Helper()
	if len(s) == 0 {
		// stringmatchlen's loop never starts: only "" matches "".
		return p == ""
	}
	var re strings.Builder
	re.WriteString(`(?s)\A`)
	byteRe := func(b byte) string { return fmt.Sprintf(`\x{%02x}`, b) }
	for i := 0; i < len(p); {
		switch c := p[i]; {
		case c == '*':
			re.WriteString(`.*`)
			i++
		case c == '?':
			re.WriteString(`.`)
			i++
		case c == '\\' && i+1 < len(p):
			re.WriteString(byteRe(p[i+1]))
			i += 2
		case c == '[':
			var in [256]bool
			j := i + 1
			not := j < len(p) && p[j] == '^'
			if not {
				j++
			}
			for j < len(p) {
				if p[j] == '\\' && len(p)-j >= 2 {
					in[p[j+1]] = true
					j += 2
					continue
				}
				if p[j] == ']' {
					j++
					break
				}
				if len(p)-j >= 3 && p[j+1] == '-' {
					lo, hi := min(p[j], p[j+2]), max(p[j], p[j+2])
					for b := int(lo); b <= int(hi); b++ {
						in[b] = true
					}
					j += 3
					continue
				}
				in[p[j]] = true
				j++
			}
			var class strings.Builder
			for b := range 256 {
				if in[b] != not {
					class.WriteString(byteRe(byte(b)))
				}
			}
			if class.Len() == 0 {
				re.WriteString(`[^\x00-\x{10FFFF}]`) // matches nothing
			} else {
				re.WriteString("[" + class.String() + "]")
			}
			i = j
		default:
			re.WriteString(byteRe(c))
			i++
		}
	}
	re.WriteString(`\z`)
	rx, err := regexp.Compile(re.String())
	if err != nil {
		t.Fatalf("regexp for %q: %v", p, err)
	}
	runes := make([]rune, len(s))
	for i, b := range s {
		runes[i] = rune(b)
	}
	return rx.MatchString(string(runes))
}

// TestRedisMatchOracle checks the oracle itself against TestMatch's table.
func TestRedisMatchOracle(t *testing.T) {
	for _, tt := range matchTests {
		if got := redisMatch(t, tt.pattern, []byte(tt.s)); got != tt.want {
			t.Errorf("redisMatch(%q, %q) = %v; want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

func FuzzMatch(f *testing.F) {
	for _, tt := range matchTests {
		f.Add(tt.pattern, tt.s)
	}
	f.Add("k[^0-9]?*\\", "kx12\\")
	f.Add("[a-]x", "]x")
	f.Add("[\\", "\\")
	f.Add("[^]", "x")
	f.Add("[]]", "]")
	f.Add("[a-\\]]", "b]")
	f.Add("[\xff-\x80]", "\x90")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 64 || len(s) > 64 {
			return
		}
		if got, want := Match(p, []byte(s)), redisMatch(t, p, []byte(s)); got != want {
			t.Fatalf("Match(%q, %q) = %v; want %v", p, s, got, want)
		}
	})
}
