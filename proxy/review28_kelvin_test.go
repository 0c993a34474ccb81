package proxy

import (
	"strings"
	"testing"
)

// TestReview28SubcommandNamesLowerASCIIOnly: a subcommand's name is found
// as a command's is since 0b289d9 (A-Z lowered only, as Redis's
// strcasecmp): "CLIENT \u212AILL" (a Kelvin sign, which Unicode lowers to
// k) is an unknown subcommand in Redis, not CLIENT KILL.
func TestReview28SubcommandNamesLowerASCIIOnly(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	for _, args := range [][]string{
		{"CLIENT", "\u212AILL", "ID", "999999"},
		{"SCRIPT", "\u212AILL"},
		{"CLIENT", "TRAC\u212AINGINFO"},
	} {
		got := rc.do(t, args...)
		if !strings.HasPrefix(got, "-ERR unknown subcommand '"+args[1]+"'") {
			t.Errorf("%q = %q; want -ERR unknown subcommand '%s'…", args, got, args[1])
		}
	}
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING after them = %q", got)
	}
}
