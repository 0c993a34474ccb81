package resp

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1000", 1000, true},
		{"-5", -5, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false},
		{"+1", 0, false},
		{"01", 0, false},
		{"00", 0, false},
		{"-0", 0, false},
		{"-", 0, false},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
	}
	for _, tt := range tests {
		got, ok := ParseInt([]byte(tt.in))
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestNumkeys(t *testing.T) {
	tests := []struct {
		in   string
		rest int
		want int
		err  error
	}{
		{"1", 2, 1, nil},
		{"0", 0, 0, nil},
		{"+1", 2, 0, ErrNotInteger},
		{"01", 2, 0, ErrNotInteger},
		{"3", 2, 0, ErrNumkeysOver},
		{"-1", 2, 0, ErrNumkeysNegative},
	}
	for _, tt := range tests {
		got, err := Numkeys([]byte(tt.in), tt.rest)
		if got != tt.want || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("Numkeys(%q, %d) = %d, %v; want %d, %v", tt.in, tt.rest, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrArgument) {
			t.Errorf("Numkeys(%q, %d) error %v does not match ErrArgument", tt.in, tt.rest, err)
		}
	}
}

func TestValidClientName(t *testing.T) {
	for in, want := range map[string]bool{"app": true, "": true, "a-b_c:1": true, "a b": false, "a\nb": false, "a\x01": false, "é": false, "~!": true} {
		if got := ValidClientName([]byte(in)); got != want {
			t.Errorf("ValidClientName(%q) = %v; want %v", in, got, want)
		}
	}
}

// FuzzParseInt checks ParseInt against strconv with Redis's extra rules.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "+1", "01", "-0", "-9223372036854775808", "12 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParseInt([]byte(s))
		want, err := strconv.ParseInt(s, 10, 64)
		canonical := err == nil && strconv.FormatInt(want, 10) == s
		if ok != canonical || ok && got != want {
			t.Fatalf("ParseInt(%q) = %d, %v; strconv says %d, %v (canonical %v)", s, got, ok, want, err, canonical)
		}
	})
}
