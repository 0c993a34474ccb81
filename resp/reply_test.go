package resp

import (
	"fmt"
	"strings"
	"testing"
)

// wire records what a Reply writes, in RESP2 bytes.
type wire struct{ strings.Builder }

func (w *wire) WriteString(s string)     { fmt.Fprintf(w, "+%s\r\n", s) }
func (w *wire) WriteError(s string)      { fmt.Fprintf(w, "-%s\r\n", s) }
func (w *wire) WriteInt64(n int64)       { fmt.Fprintf(w, ":%d\r\n", n) }
func (w *wire) WriteBulkString(s string) { fmt.Fprintf(w, "$%d\r\n%s\r\n", len(s), s) }
func (w *wire) WriteNull()               { w.Builder.WriteString("$-1\r\n") }
func (w *wire) WriteArray(n int)         { fmt.Fprintf(w, "*%d\r\n", n) }

func TestReplyWriteTo(t *testing.T) {
	tests := []struct {
		name  string
		reply Reply
		want  string
	}{
		{"ok", OK(), "+OK\r\n"},
		{"status", Status("PONG"), "+PONG\r\n"},
		{"error", Error("NOQUORUM 1 of 3 nodes answered"), "-NOQUORUM 1 of 3 nodes answered\r\n"},
		{"error line breaks become spaces", Error("ERR a\r\nb\nc"), "-ERR a b c\r\n"},
		{"int", Int(-3), ":-3\r\n"},
		{"bulk", Bulk("tok"), "$3\r\ntok\r\n"},
		{"null", Null(), "$-1\r\n"},
		{"array", Array(Int(1), Null()), "*2\r\n:1\r\n$-1\r\n"},
		{"null array", NullArray(), "*-1\r\n"},
		{"zero reply is still one reply", Reply{}, "-ERR internal error: no reply\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w wire
			tt.reply.WriteTo(&w)
			if got := w.String(); got != tt.want {
				t.Errorf("%v.WriteTo = %q; want %q", tt.reply, got, tt.want)
			}
		})
	}
}
