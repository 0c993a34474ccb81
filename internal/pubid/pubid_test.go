package pubid

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitStripsOnlyATag(t *testing.T) {
	tag := New()
	if tag == New() {
		t.Fatal("two tags are equal")
	}
	if tag[len(tag)-2:] != "\x00\x00" {
		t.Fatalf("New() = %q; want its last two bytes zero (the wrapper numbers a run's publishes there)", tag)
	}
	tests := []struct {
		name, payload, tag, rest string
		ok                       bool
	}{
		{"tagged", tag + "0", tag, "0", true},
		{"tagged, empty payload", tag, tag, "", true},
		{"a tagged payload that starts with a tag keeps it", tag + tag + "x", tag, tag + "x", true},
		{"untagged", "0", "", "0", false},
		{"the prefix alone", Prefix + "short", "", Prefix + "short", false},
		{"text", strings.Repeat("x", 40), "", strings.Repeat("x", 40), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, ok := Split(tt.payload)
			if got != tt.tag || rest != tt.rest || ok != tt.ok {
				t.Errorf("Split(%q) = %q, %q, %v; want %q, %q, %v", tt.payload, got, rest, ok, tt.tag, tt.rest, tt.ok)
			}
		})
	}
}

// No UTF-8 text starts with Prefix.
func TestPrefixIsNoText(t *testing.T) {
	if utf8.ValidString(Prefix) {
		t.Errorf("Prefix %q is valid UTF-8", Prefix)
	}
}
