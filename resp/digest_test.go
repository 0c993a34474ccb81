package resp

import (
	"errors"
	"strings"
	"testing"
)

// The reference digests are Redis's own: its DIGEST page's example and
// the leading-zeros case of its test suite.
func TestDigest(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		// redis.io/commands/digest: SET key1 "Hello world"; DIGEST key1.
		{"redis.io example", "Hello world", "b6acb9d84a38ff74"},
		// redis/redis tests/unit/type/string.tcl:1597-1602 ("DIGEST always
		// returns exactly 16 hex characters with leading zeros").
		{"leading zeros kept", "v8lf0c11xh8ymlqztfd3eeq16kfn4sspw7fqmnuuq3k3t75em5wdizgcdw7uc26nnf961u2jkfzkjytls2kwlj7626sd", "00006c38adf31777"},
		// Dragonfly's DIGEST page, which follows Redis's.
		{"short", "test", "9ec9f7918d7dfc40"},
		{"hello", "hello", "9555e8555c62dcfd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Digest(tt.value); got != tt.want {
				t.Errorf("Digest(%q) = %s; want %s", tt.value, got, tt.want)
			}
		})
	}
}

func TestDigestMatches(t *testing.T) {
	tests := []struct {
		name, digest string
		want         bool
		err          error
	}{
		{"same", "b6acb9d84a38ff74", true, nil},
		// redis/redis tests/unit/type/string.tcl:1629 (upper-case accepted).
		{"upper case", "B6ACB9D84A38FF74", true, nil},
		{"other", "b6acb9d84a38ff75", false, nil},
		{"not hex never matches", "zzzzzzzzzzzzzzzz", false, nil},
		// tests/unit/type/string.tcl:1604-1627: 15, 17 and 0 characters.
		{"short", "6acb9d84a38ff74", false, ErrDigestLength},
		{"long", "0b6acb9d84a38ff74", false, ErrDigestLength},
		{"empty", "", false, ErrDigestLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DigestMatches([]byte(tt.digest), "Hello world")
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("DigestMatches(%q, \"Hello world\") = %v, %v; want %v, %v", tt.digest, got, err, tt.want, tt.err)
			}
		})
	}
}

func FuzzDigestMatches(f *testing.F) {
	f.Add("Hello world", "b6acb9d84a38ff74")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, value, digest string) {
		d := Digest(value)
		if len(d) != 16 {
			t.Fatalf("Digest(%q) = %q; want 16 hex digits", value, d)
		}
		for _, same := range []string{d, strings.ToUpper(d)} {
			if ok, err := DigestMatches([]byte(same), value); !ok || err != nil {
				t.Fatalf("DigestMatches(%q, %q) = %v, %v; want true", same, value, ok, err)
			}
		}
		ok, err := DigestMatches([]byte(digest), value)
		if ok != strings.EqualFold(digest, d) || (err != nil) != (len(digest) != 16) {
			t.Fatalf("DigestMatches(%q, %q) = %v, %v; Digest is %s", digest, value, ok, err, d)
		}
	})
}
