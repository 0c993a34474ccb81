package wire

import (
	"errors"
	"testing"
)

// TestParseRefusesAHugeBulkLength: a bulk length near 2^63 (a broken or
// hostile node, a corrupted stream) is a protocol error or a reply not
// all there, never a panic: the reader runs in the proxy's node path,
// where a panic ends the process.
func TestParseRefusesAHugeBulkLength(t *testing.T) {
	for _, in := range []string{
		"$9223372036854775807\r\nab\r\n",
		"$9223372036854775806\r\nab\r\n",
		"*1\r\n$9223372036854775807\r\nab\r\n",
	} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Parse(%q) panicked: %v; want ErrProtocol or a partial reply", in, p)
				}
			}()
			if _, _, err := Parse([]byte(in)); err != nil && !errors.Is(err, ErrProtocol) {
				t.Errorf("Parse(%q) = %v; want ErrProtocol or a partial reply", in, err)
			}
		}()
	}
}
