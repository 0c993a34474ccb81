package proxy

import (
	"strings"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/ascii"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// redacted stands for a token or a password in MONITOR and the slow log.
const redacted = "(redacted)"

// redactArgs returns a command's arguments as MONITOR and the slow log
// show them: tokens and passwords replaced by "(redacted)". A token
// releases a lock, so it is a credential like a password. An option that
// hides what follows it is matched by Unicode folding, wider than Redis's
// (ASCII): a refused spelling such as "ſet" still hides its value. One
// that keeps what follows (SETNAME) is matched as Redis matches it.
func redactArgs(name string, args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	hide := func(from, to int) {
		for i := max(from, 1); i < min(to, len(out)); i++ {
			out[i] = redacted
		}
	}
	switch name {
	case "auth":
		hide(1, len(out))
	case "hello":
		// Options parsed as Redis parses them: SETNAME's name may be
		// "auth".
		for i := 2; i < len(out); i++ {
			switch {
			case strings.EqualFold(out[i], "auth"):
				hide(i+1, i+3)
				i += 2
			case ascii.EqualFold(out[i], "setname"):
				i++
			}
		}
	case "config":
		// CONFIG SET name value ...: any value may be a password
		// (requirepass, masterauth); the proxy sets none of them.
		if len(out) > 1 && strings.EqualFold(out[1], "set") {
			for i := 3; i < len(out); i += 2 {
				hide(i, i+1)
			}
		}
	case "set":
		// SET key token [NX] [PX ms] [IFEQ token ...]: the token, and
		// the value a condition compares.
		hide(2, 3)
		for i := 3; i < len(out); i++ {
			switch strings.ToUpper(out[i]) {
			case "IFEQ", "IFNE", "IFDEQ", "IFDNE":
				hide(i+1, i+2)
			}
		}
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		// The body and the keys stay; ARGV carries the tokens.
		if len(args) > 2 {
			n, err := resp.Numkeys(args[2], len(args)-3)
			if err != nil {
				hide(3, len(out))
			} else {
				hide(3+n, len(out))
			}
		}
	default:
		// Any other lock command: its key stays, the rest may be a token.
		if cm, ok := commands[name]; ok && cm.class == acl.Lock && cm.keys == firstKey {
			hide(2, len(out))
		}
	}
	return out
}
