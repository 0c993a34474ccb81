package proxy

import (
	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// keySpec says where a command's keys are, for the users' key patterns.
type keySpec uint8

const (
	noKeys     keySpec = iota
	firstKey           // args[1]
	everyArg           // args[1:]
	scriptKeys         // EVAL, EVALSHA: numkeys keys after args[2]
	subKey             // args[2]: a subcommand's key (OBJECT ENCODING key)
)

// keysOf returns the keys args names under spec. Malformed arguments
// (a bad numkeys) name none: the handler refuses them.
func keysOf(spec keySpec, args [][]byte) [][]byte {
	switch spec {
	case firstKey:
		return args[1:2]
	case everyArg:
		return args[1:]
	case subKey:
		return args[2:3]
	case scriptKeys:
		n, err := resp.Numkeys(args[2], len(args)-3)
		if err != nil {
			return nil
		}
		return args[3 : 3+n]
	}
	return nil
}

// permit checks that u may run command name with args, in Redis's order
// (the command, then its keys). A nil u is a command allowed before AUTH.
func permit(u *acl.User, name string, cm command, args [][]byte) error {
	if u == nil {
		return nil
	}
	if !u.Can(cm.class) {
		return noPermission(name)
	}
	for _, k := range keysOf(cm.keys, args) {
		if !u.CanKey(k) {
			return errNoKeyPermission
		}
	}
	return nil
}

// noPermission is the refusal of a command, or of a subcommand named
// "container|sub", to a user not allowed to run it.
func noPermission(name string) error { return withArgs(errNoPermission, name) }
