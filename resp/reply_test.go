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
func (w *wire) WriteRaw(b []byte)        { w.Write(b) }

func TestReplyWriteProto(t *testing.T) {
	tests := []struct {
		name         string
		reply        Reply
		resp2, resp3 string
	}{
		{"ok", OK(), "+OK\r\n", "+OK\r\n"},
		{"status", Status("PONG"), "+PONG\r\n", "+PONG\r\n"},
		{"error", Error("NOQUORUM 1 of 3 nodes answered"), "-NOQUORUM 1 of 3 nodes answered\r\n", "-NOQUORUM 1 of 3 nodes answered\r\n"},
		{"error line breaks become spaces, one each, as in Redis", Error("ERR a\r\nb\nc"), "-ERR a  b c\r\n", "-ERR a  b c\r\n"},
		{"line breaks at the ends are trimmed", Error("ERR x\r\n"), "-ERR x\r\n", "-ERR x\r\n"},
		{"a script's status: line breaks spaces, nothing trimmed, cut at NUL", ScriptStatus("\na\r\n\x00b"), "+ a  \r\n", "+ a  \r\n"},
		{"a script's error: line breaks trimmed at the end only", ScriptError("\r\nERR x\n\x00y"), "-  ERR x\r\n", "-  ERR x\r\n"},
		{"int", Int(-3), ":-3\r\n", ":-3\r\n"},
		{"bulk", Bulk("tok"), "$3\r\ntok\r\n", "$3\r\ntok\r\n"},
		{"null", Null(), "$-1\r\n", "_\r\n"},
		{"array", Array(Int(1), Null()), "*2\r\n:1\r\n$-1\r\n", "*2\r\n:1\r\n_\r\n"},
		{"map is flat in RESP2", Map(Bulk("proto"), Int(3)), "*2\r\n$5\r\nproto\r\n:3\r\n", "%1\r\n$5\r\nproto\r\n:3\r\n"},
		{"push is an array in RESP2", Push(Bulk("message"), Null()), "*2\r\n$7\r\nmessage\r\n$-1\r\n", ">2\r\n$7\r\nmessage\r\n_\r\n"},
		{"verbatim", Verbatim("a:1\r\n"), "$5\r\na:1\r\n\r\n", "=9\r\ntxt:a:1\r\n\r\n"},
		{"null array", NullArray(), "*-1\r\n", "_\r\n"},
		{"zero reply is still one reply", Reply{}, "-ERR internal error: no reply\r\n", "-ERR internal error: no reply\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w2, w3 wire
			tt.reply.WriteProto(&w2, RESP2)
			tt.reply.WriteProto(&w3, RESP3)
			if got := w2.String(); got != tt.resp2 {
				t.Errorf("%v.WriteProto(RESP2) = %q; want %q", tt.reply, got, tt.resp2)
			}
			if got := w3.String(); got != tt.resp3 {
				t.Errorf("%v.WriteProto(RESP3) = %q; want %q", tt.reply, got, tt.resp3)
			}
		})
	}
}
