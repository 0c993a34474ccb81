package proxy

import (
	"slices"
	"testing"
)

// argStrings copies each argument, empty ones too, in order.
func TestArgStrings(t *testing.T) {
	tests := []struct {
		name string
		in   []string
	}{
		{"none", []string{}},
		{"one", []string{"k"}},
		{"keys and arguments", []string{"k1", "k2", "tok", "10500"}},
		{"empty ones", []string{"", "k", "", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := make([][]byte, len(tt.in))
			for i, s := range tt.in {
				in[i] = []byte(s)
			}
			got := argStrings(in)
			for _, b := range in {
				clear(b) // the copies must not share the client's bytes
			}
			if !slices.Equal(got, tt.in) {
				t.Errorf("argStrings(%q) = %q; want %q", tt.in, got, tt.in)
			}
		})
	}
}
