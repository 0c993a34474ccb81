package proxy

import (
	"errors"
	"strings"
	"testing"
)

// A command's name is its first argument in lower case, as strings.ToLower
// makes it; a name of the table costs no allocation.
func TestCommandNameLowersAsToLower(t *testing.T) {
	for _, in := range []string{"SET", "set", "EvalSha", "EXEC", "SUBSCRIBE", "nosuchcommand", "NOSUCH",
		"", "a-very-long-command-name-X", "PUNSUBSCRIBE"} {
		if got, want := commandName([]byte(in)), strings.ToLower(in); got != want {
			t.Errorf("commandName(%q) = %q; want %q", in, got, want)
		}
	}
	// A-Z only, as Redis compares names (strcasecmp): a Kelvin sign, which
	// Unicode lowers to k, leaves the name no command's (attack15), and a
	// byte that is no UTF-8 stays as it is.
	for _, in := range []string{"\u212Aeys", "\u212AEYS", "a-very-long-command-name-\u212A", "S\xffT"} {
		if got := commandName([]byte(in)); got == strings.ToLower(in) {
			t.Errorf("commandName(%q) = %q; want only A-Z lowered", in, got)
		}
	}
	for _, in := range []string{"SET", "evalsha", "Exec"} {
		b := []byte(in)
		if n := testing.AllocsPerRun(100, func() { commandName(b) }); n != 0 {
			t.Errorf("commandName(%q) allocated %v times; want 0", in, n)
		}
	}
}

// TestKelvinSignIsNoCommand: "\u212Aeys" is an unknown command, as in
// Redis; Unicode's lowering made it KEYS.
func TestKelvinSignIsNoCommand(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	if got := rc.do(t, "\u212Aeys", "*"); !strings.HasPrefix(got, "-ERR unknown command '\u212Aeys'") {
		t.Errorf("\\u212Aeys * = %q; want unknown command", got)
	}
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING after it = %q", got)
	}
}

// TestOptionsFoldASCIIOnly: options and subcommand arguments fold A-Z
// only, as Redis's: a dotless i or a long s is no option's letter.
func TestOptionsFoldASCIIOnly(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "k", "t", "\u0131FEQ", "t", "PX", "1000"}, "-ERR syntax error"},
		{[]string{"SCRIPT", "FLUSH", "\u017Fync"}, "-ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
	} {
		if got := rc.do(t, c.args...); !strings.HasPrefix(got, c.want) {
			t.Errorf("%q = %q; want %q", c.args, got, c.want)
		}
	}
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING after them = %q", got)
	}
}

// A catalogue script's call that runs by its effect (redislock's obtain
// with a token length of 0) keeps min_ttl, as the catalogue's operation
// does: the effect path bounds a TTL by max_ttl alone.
func TestCatalogueCallByEffectKeepsMinTTL(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	const obtain = "80a1b5f2cfccec3b7119ba7721d2127682b691a7" // bsm/redislock v0.9
	for _, prefix := range []string{"0", "3"} {
		got := rc.do(t, "EVALSHA", obtain, "1", "k", "tok", prefix, "50")
		if want := "-ERR invalid expire time in 'evalsha' command: 50ms is under min_ttl (100ms)"; !strings.HasPrefix(got, want) {
			t.Errorf("obtain with token length %s and 50ms = %q; want %q", prefix, got, want)
		}
	}
	if got := rc.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING after them = %q", got)
	}
}

// The checks every lock command's keys pass read the bytes in place.
func TestKeyChecksDoNotAllocate(t *testing.T) {
	keys := [][]byte{[]byte("lc:4-proxy5:64:1732714343000000000:12345"), []byte("another:lock:key:that:is:long:enough")}
	if n := testing.AllocsPerRun(100, func() {
		if reservedKeys(keys) != nil || redissonToken(keys[0]) {
			t.Fatal("an ordinary key refused")
		}
	}); n != 0 {
		t.Errorf("the key checks allocated %v times; want 0", n)
	}
	for _, k := range []string{"redlock-proxy:members", "redlock-proxy:fence", "redlock-proxy:fence:x"} {
		if err := reservedKeys([][]byte{[]byte(k)}); !errors.Is(err, errReservedKey) {
			t.Errorf("reservedKeys(%q) = %v; want the reserved key refusal", k, err)
		}
	}
	if !redissonToken([]byte(redissonTokenPrefix+"{x}")) || redissonToken([]byte("redisson_lock_token")) {
		t.Error("redissonToken misreads a token's prefix")
	}
}
