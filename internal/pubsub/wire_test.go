package pubsub

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

func TestReadValue(t *testing.T) {
	tests := []struct {
		name, in string
		want     value
		err      error
	}{
		{"message", "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n",
			value{kind: '*', items: []value{{kind: '$', str: "message"}, {kind: '$', str: "ch"}, {kind: '$'}}}, nil},
		{"confirmation", "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n",
			value{kind: '*', items: []value{{kind: '$', str: "subscribe"}, {kind: '$', str: "a"}, {kind: ':', n: 1}}}, nil},
		{"null channel", "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n",
			value{kind: '*', items: []value{{kind: '$', str: "unsubscribe"}, {kind: '$', null: true}, {kind: ':'}}}, nil},
		{"status", "+PONG\r\n", value{kind: '+', str: "PONG"}, nil},
		{"error", "-NOAUTH Authentication required.\r\n", value{kind: '-', str: "NOAUTH Authentication required."}, nil},
		{"bulk over the limit", "$99999999\r\n", value{}, errProtocol},
		{"negative bulk", "$-2\r\n", value{}, errProtocol},
		{"array too long", "*9\r\n", value{}, errProtocol},
		{"nested too deep", "*1\r\n*1\r\n*1\r\n:1\r\n", value{}, errProtocol},
		{"no CR", "+OK\n", value{}, errProtocol},
		{"unknown type", "~1\r\n", value{}, errProtocol},
		{"bad integer", ":x\r\n", value{}, errProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readValue(bufio.NewReader(strings.NewReader(tt.in)), 0)
			if !errors.Is(err, tt.err) {
				t.Fatalf("readValue(%q) error = %v; want %v", tt.in, err, tt.err)
			}
			if err == nil && !equalValue(got, tt.want) {
				t.Errorf("readValue(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func equalValue(a, b value) bool {
	if a.kind != b.kind || a.str != b.str || a.n != b.n || a.null != b.null || len(a.items) != len(b.items) {
		return false
	}
	for i := range a.items {
		if !equalValue(a.items[i], b.items[i]) {
			return false
		}
	}
	return true
}

// FuzzReadValue checks that no input panics the reader or makes it read
// a bulk string over maxPayload.
func FuzzReadValue(f *testing.F) {
	f.Add([]byte("*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n"))
	f.Add([]byte("*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nch\r\n$0\r\n\r\n"))
	f.Add([]byte("*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"))
	f.Add([]byte("+PONG\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		v, err := readValue(bufio.NewReader(strings.NewReader(string(in))), 0)
		if err == nil && len(v.str) > maxPayload {
			t.Fatalf("read a %d-byte string", len(v.str))
		}
	})
}
