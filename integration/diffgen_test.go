package integration

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/resp"
)

// diffGen makes a seeded random sequence of lock-relevant commands:
// mostly well-formed lock traffic on a few shared keys, mixed with every
// option order, casing and repetition, bad values, wrong arities,
// connection commands, inline commands, and binary and empty keys and
// tokens.
type diffGen struct {
	seed  uint64
	rng   *rand.Rand
	proto int
}

func newDiffGen(seed uint64, proto int) *diffGen {
	return &diffGen{seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), proto: proto}
}

var (
	diffKeys   = []string{"k1", "k2", "k3", "", "\x00\xffbin", "a b", "k\r\n"}
	diffTokens = []string{"t1", "t2", "tok-3", "", "\x00\r\n\xfe", "t1"}
	// TTLs that every server takes as a lock on the shared keys.
	goodPX = []string{"20000", "30000", "45000", "60000"}
	goodEX = []string{"20", "30", "60"}
	// Values each server refuses or the proxy refuses as outside
	// [min_ttl, max_ttl] (2s to 5m in this test).
	badTTL = []string{"+1000", "01000", "-0", "-5", "0", "abc", "1.5", " 100", "100 ", "",
		"9223372036854775807", "99999999999999999999", "50", "400000", "0x10", "1e4"}
	// Lock scripts' argument layouts: T token, L TTL in ms, O token length
	// (redislock's prefix), M redis-py's extend mode.
	scriptLayouts = map[string]string{
		"redsync touch": "TL", "redsync touch-or-setnx": "TL",
		"redislock obtain": "TOL", "redislock refresh": "TL",
		"redis-py extend": "TLM", "redis-py reacquire": "TL",
		"node-redlock v5 acquire": "TL", "node-redlock v5 extend": "TL",
		"node-redlock v4 acquire": "TL", "node-redlock v4 extend": "TL",
	}
)

func (g *diffGen) pick(s []string) string { return pickOf(g, s) }

func pickOf[T any](g *diffGen, s []T) T  { return s[g.rng.IntN(len(s))] }
func (g *diffGen) chance(p float64) bool { return g.rng.Float64() < p }

// casing returns s in a random mix of cases.
func (g *diffGen) casing(s string) string {
	switch g.rng.IntN(4) {
	case 0:
		return strings.ToLower(s)
	case 1:
		b := []byte(strings.ToLower(s))
		for i := range b {
			if g.chance(0.5) && b[i] >= 'a' && b[i] <= 'z' {
				b[i] -= 'a' - 'A'
			}
		}
		return string(b)
	}
	return s
}

func (g *diffGen) key() string {
	if g.chance(0.03) {
		// A key no other command uses: a refused write on it cannot matter.
		return "fresh-" + strconv.FormatUint(g.rng.Uint64(), 36)
	}
	return g.pick(diffKeys)
}

func (g *diffGen) next() diffCmd {
	switch w := g.rng.IntN(100); {
	case w < 30:
		return g.set()
	case w < 38:
		return cmdOf(g.casing("GET"), g.key())
	case w < 44:
		return cmdOf(g.casing("PTTL"), g.key())
	case w < 47:
		return cmdOf(g.casing("TTL"), g.key())
	case w < 53:
		args := []string{g.casing("EXISTS")}
		for range 1 + g.rng.IntN(3) {
			args = append(args, g.key())
		}
		if g.chance(0.5) {
			args = append(args, args[1]) // a key named twice
		}
		return cmdOf(args...)
	case w < 73:
		return g.script()
	case w < 78:
		return g.cas()
	case w < 82:
		return g.scriptAdmin()
	case w < 86:
		return g.wrongArity()
	case w < 93:
		return g.connection()
	case w < 96:
		return g.other()
	}
	return g.inline()
}

// set makes a SET: usually a lock with its options in any order and
// case, sometimes with repeated, conflicting, refused or bad options.
func (g *diffGen) set() diffCmd {
	key, tok := g.key(), g.pick(diffTokens)
	var opts [][]string
	expiry := func() []string {
		switch g.rng.IntN(10) {
		case 0:
			return []string{g.casing("EX"), g.pick(goodEX)}
		case 1:
			return []string{g.casing("EXAT"), strconv.FormatInt(time.Now().Unix()+30, 10)}
		case 2:
			return []string{g.casing("PXAT"), strconv.FormatInt(time.Now().UnixMilli()+45000, 10)}
		case 3:
			return []string{g.casing(g.pick([]string{"PX", "EX", "PXAT", "EXAT"})), g.pick(badTTL)}
		}
		return []string{g.casing("PX"), g.pick(goodPX)}
	}
	opts = append(opts, []string{g.casing("NX")}, expiry())
	switch g.rng.IntN(12) {
	case 0:
		opts = append(opts, expiry()) // repeated or conflicting expiry
	case 1:
		opts = opts[1:] // no NX
	case 2:
		opts = opts[:1] // no expiry
	case 3:
		opts = append(opts, []string{g.casing(g.pick([]string{"XX", "GET", "KEEPTTL", "NX"}))})
	case 4:
		opts = append(opts, []string{g.pick([]string{"FOO", "PX", "NXX", "E X"})}) // unknown, or a value missing
	case 5:
		opts = append(opts, []string{g.casing("PX"), g.pick(badTTL)}, []string{g.casing("PX"), g.pick(goodPX)})
	}
	g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{g.casing("SET"), key, tok}
	for _, o := range opts {
		args = append(args, o...)
	}
	return cmdOf(args...)
}

// script calls a catalogue lock script, by EVAL or EVALSHA, usually as
// its client does, sometimes with a bad numkeys or bad arguments.
func (g *diffGen) script() diffCmd {
	s := lockScripts[g.rng.IntN(len(lockScripts))]
	layout := scriptLayouts[s.name]
	if layout == "" {
		layout = "T"
	}
	nkeys := 1
	if strings.HasPrefix(s.name, "node-redlock") && g.chance(0.4) {
		nkeys = 2 + g.rng.IntN(2)
	}
	var keys []string
	for range nkeys {
		keys = append(keys, g.key())
	}
	var argv []string
	for _, a := range layout {
		switch a {
		case 'T':
			argv = append(argv, g.pick(diffTokens))
		case 'L':
			if g.chance(0.1) {
				argv = append(argv, g.pick(badTTL))
			} else {
				argv = append(argv, g.pick(goodPX))
			}
		case 'O':
			// redislock sends len(token); sometimes another length.
			if n := len(argv[0]); g.chance(0.8) {
				argv = append(argv, strconv.Itoa(n))
			} else {
				argv = append(argv, strconv.Itoa(g.rng.IntN(n+2)-1))
			}
		case 'M':
			argv = append(argv, g.pick([]string{"0", "1"}))
		}
	}
	numkeys := strconv.Itoa(len(keys))
	switch g.rng.IntN(20) {
	case 0:
		numkeys = g.pick([]string{"+1", "01", "-1", "x", "99", " 1", "0"})
	case 1:
		argv = argv[:g.rng.IntN(len(argv)+1)] // arguments missing
	case 2:
		argv = append(argv, "extra")
	}
	name, body := "EVALSHA", s.sha
	if g.chance(0.5) {
		name, body = "EVAL", s.body
	}
	args := append([]string{g.casing(name), body, numkeys}, keys...)
	return cmdOf(append(args, argv...)...)
}

func (g *diffGen) scriptAdmin() diffCmd {
	s := lockScripts[g.rng.IntN(len(lockScripts))]
	switch g.rng.IntN(8) {
	case 0, 1:
		return cmdOf(g.casing("SCRIPT"), g.casing("LOAD"), s.body)
	case 2:
		return cmdOf(g.casing("SCRIPT"), g.casing("EXISTS"), s.sha, strings.ToUpper(s.sha), "0123456789012345678901234567890123456789")
	case 3:
		return cmdOf(g.casing("SCRIPT"), g.casing("FLUSH"), g.pick([]string{"SYNC", "async", "bad"}))
	case 4:
		return cmdOf(g.casing("SCRIPT"), g.casing("FLUSH"))
	case 5:
		return cmdOf(g.casing("SCRIPT"), g.pick([]string{"KILL", "HELP", "nope"}))
	case 6:
		return cmdOf("EVALSHA", g.pick([]string{"abc", "0123456789012345678901234567890123456789", strings.ToUpper(s.sha)}), g.pick([]string{"1", "x", "+1"}), "k1", "t1")
	}
	return cmdOf(g.casing("SCRIPT"), "EXISTS")
}

// wrongArity sends a command with too few or too many arguments.
func (g *diffGen) wrongArity() diffCmd {
	return cmdOf(pickOf(g, [][]string{
		{"SET"}, {"SET", "k1"}, {"GET"}, {"GET", "k1", "k2"}, {"PTTL"}, {"TTL", "a", "b"},
		{"EXISTS"}, {"EVAL"}, {"EVAL", "return 1"}, {"EVALSHA", "abc"}, {"SCRIPT"},
		{"SCRIPT", "LOAD"}, {"SCRIPT", "LOAD", "a", "b"}, {"ECHO"}, {"ECHO", "a", "b"},
		{"PING", "a", "b"}, {"SELECT"}, {"SELECT", "0", "1"}, {"CLIENT"}, {"CLIENT", "GETNAME", "x"},
		{"CLIENT", "SETNAME"}, {"CLIENT", "ID", "1"}, {"AUTH"}, {"AUTH", "a", "b", "c"}, {"DEL"},
		{"CLUSTER"}, {"CLUSTER", "SLOTS", "1"}, {"CLUSTER", "KEYSLOT"}, {"READONLY", "x"},
	})...)
}

func (g *diffGen) connection() diffCmd {
	proto := strconv.Itoa(g.proto)
	return cmdOf(pickOf(g, [][]string{
		{"INFO"}, {"INFO", "server"}, {"PING"}, {"ping", "hello"}, {"PING", ""}, {"ECHO", "\x00bin\r\n"}, {"ECHO", ""},
		{"SELECT", "0"}, {"SELECT", "1"}, {"SELECT", "16"}, {"SELECT", "+0"}, {"SELECT", "-1"}, {"SELECT", "00"},
		{"CLIENT", "SETNAME", "app"}, {"CLIENT", "SETNAME", "a b"}, {"CLIENT", "SETNAME", "a\x01"}, {"CLIENT", "SETNAME", ""},
		{"CLIENT", "GETNAME"}, {"client", "getname"}, {"CLIENT", "ID"}, {"CLIENT", "SETINFO", "LIB-NAME", "x"},
		{"CLIENT", "TRACKING", "on"}, {"CLIENT", "NOPE"}, {"CLIENT", "INFO"}, {"CLIENT", "NO-EVICT", "on"},
		{"HELLO"}, {"HELLO", proto}, {"hello", proto, "setname", "via-hello"}, {"HELLO", proto, "SETNAME", "a b"},
		{"HELLO", proto, "AUTH", "default", "x"}, {"HELLO", proto, "AUTH", "someone", "x"}, {"HELLO", proto, "AUTH", "default"},
		{"HELLO", proto, "FOO"}, {"HELLO", "4"}, {"HELLO", "1"}, {"HELLO", "+" + proto}, {"HELLO", "0" + proto}, {"HELLO", "x"},
		{"AUTH", "pw"}, {"AUTH", "default", "pw"}, {"AUTH", "someone", "pw"},
		{"CLUSTER", "SLOTS"}, {"CLUSTER", "INFO"}, {"CLUSTER", "NODES"}, {"CLUSTER", "SHARDS"}, {"CLUSTER", "MYID"},
		{"CLUSTER", "HELP"}, {"CLUSTER", "KEYSLOT", "k1"}, {"cluster", "nope"}, {"READONLY"}, {"READWRITE"},
	})...)
}

// other sends commands outside the lock surface.
func (g *diffGen) other() diffCmd {
	return cmdOf(pickOf(g, [][]string{
		{"FOO", strings.Repeat("é", 100), "b"}, {"FOO", "a\x00b", strings.Repeat("x", 130)}, {strings.Repeat("Z", 140)},
		{"CLIENT", strings.Repeat("é", 80)}, {"SCRIPT", "a\x00b"}, {"CLUSTER", strings.Repeat("q", 200)},
		{"FOO", "k\r\n"}, {"FOO", "a\r\nb", "\n"}, {"CLIENT", "x\r\ny"}, {"HELLO", "2", "a\nb"},
		{"INCR", "fresh-incr"}, {"DEL", g.key()}, {"DEL", "k1", "k2"}, {"EXPIRE", "fresh-expire", "10"},
		{"KEYS", "*"}, {"COMMAND", "COUNT"}, {"FOO", "bar"}, {"UNLINK", "fresh-unlink"}, {"SETNX", "fresh-setnx", "t"},
		{"EVAL", "return 1", "0"}, {"EVAL", "return redis.call('get', KEYS[1])", "1", "k1"}, {"SCRIPT", "LOAD", "return 1"},
		{"EVAL", "return redis.call('get', 'k1')", "0"}, {"EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", g.key(), "t1"},
		{"EVAL", "return redis.call('incr', KEYS[1])", "1", "fresh-incr"}, {"EVAL", "return redis.call('pttl', KEYS[1])", "1", g.key()},
		{"EVAL", "return redis.call('del', KEYS[1])", "1", g.key()}, {"EVAL", "return {1, false, 'a', redis.call('exists', KEYS[1])}", "1", g.key()},
	})...)
}

// inline sends a command in the inline (telnet) form, sometimes after an
// empty multibulk, which Redis ignores.
func (g *diffGen) inline() diffCmd {
	lines := [][2]string{
		{"PING", "PING"}, {"ECHO \"a b\"", "ECHO"}, {"ECHO 'c d'", "ECHO"}, {"GET k1", "GET"},
		{"SET k2 t1 NX PX 30000", "SET"}, {"EXISTS k1 k1", "EXISTS"}, {"  PING  ", "PING"},
		{"ECHO \"\"", "ECHO"}, {"ECHO \"a\\\\b\"", "ECHO"}, {"ECHO \"q\\\"q\"", "ECHO"},
		{"ECHO \"\\x41\\n\"", "ECHO"}, {"ECHO 'a\\nb'", "ECHO"}, {"ECHO\ta", "ECHO"},
		{"ECHO \"\\x4g\"", "ECHO"}, {"ECHO 'a\\'b'", "ECHO"}, {"SET k1 t1 NX\tPX 30000", "SET"}, {"\tPING\t", "PING"},
	}
	l := lines[g.rng.IntN(len(lines))]
	c := diffCmd{inline: l[0], args: [][]byte{[]byte(l[1])}}
	if g.chance(0.3) {
		c.raw = g.pick([]string{"*0\r\n", "*-1\r\n"})
	}
	return c
}

// scriptByName returns the catalogue script called name.
func scriptByName(name string) catalogueScript {
	for _, s := range lockScripts {
		if s.name == name {
			return s
		}
	}
	panic("no catalogue script " + name)
}

// scriptBySHA returns the catalogue script with digest sha (either case).
func scriptBySHA(sha string) catalogueScript {
	for _, s := range lockScripts {
		if strings.EqualFold(s.sha, sha) {
			return s
		}
	}
	panic("no catalogue script " + sha)
}

// The compare-and-set commands' documented behaviour (Redis 8.4's
// DELEX, DIGEST and SET IFEQ|IFNE|IFDEQ|IFDNE, Valkey's DELIFEQ and SET
// IFEQ), as scripts the reference, Redis 7.0, runs in their place.
const (
	// DELEX key IFEQ v, DELIFEQ key v: 1 if deleted, else 0.
	refDelIfEq = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`
	// DELEX key IFNE v: 0 for a missing key.
	refDelIfNe = `local v = redis.call("get", KEYS[1]) if v and v ~= ARGV[1] then return redis.call("del", KEYS[1]) end return 0`
	// SET key ARGV[1] IFEQ ARGV[2] PX ARGV[3]: OK, or nil; with ARGV[4]
	// "get", the old value whatever the condition.
	refSetIfEq = `local v = redis.call("get", KEYS[1])
local ok = nil
if v == ARGV[2] then ok = redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end
if ARGV[4] == "get" then return v end
return ok`
	// SET key ARGV[1] IFNE ARGV[2] PX ARGV[3]: sets a missing key too.
	refSetIfNe = `if redis.call("get", KEYS[1]) ~= ARGV[2] then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end return nil`
)

// cas makes one of the compare-and-set commands with its reference form:
// mostly the release, extend and read a lock client sends, sometimes a
// form the proxy refuses (the refusals list names them).
func (g *diffGen) cas() diffCmd {
	key, tok := g.key(), g.pick(diffTokens)
	digest := resp.Digest(tok)
	if g.chance(0.3) {
		digest = strings.ToUpper(digest) // Redis compares digests in any case
	}
	ms := g.pick(goodPX)
	expiry := []string{g.casing("PX"), ms}
	if g.chance(0.3) {
		s := g.pick(goodEX)
		expiry, ms = []string{g.casing("EX"), s}, s+"000"
	}
	set := func(opts ...[]string) []string {
		g.rng.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
		args := []string{g.casing("SET"), key, tok}
		for _, o := range opts {
			args = append(args, o...)
		}
		return args
	}
	var c diffCmd
	switch g.rng.IntN(10) {
	case 0, 1:
		c = cmdOf(g.casing("DELIFEQ"), key, tok)
		c.ref = []string{"EVAL", refDelIfEq, "1", key, tok}
	case 2, 3:
		c = cmdOf(g.casing("DELEX"), key, g.casing("IFEQ"), tok)
		c.ref = []string{"EVAL", refDelIfEq, "1", key, tok}
	case 4:
		// The digest of a token matches that token's value only.
		c = cmdOf(g.casing("DELEX"), key, g.casing("IFDEQ"), digest)
		c.ref = []string{"EVAL", refDelIfEq, "1", key, tok}
	case 5:
		c = cmdOf(g.casing("DIGEST"), key)
		c.ref, c.refDigest = []string{"GET", key}, true
	case 6, 7:
		get := ""
		opts := [][]string{{g.casing("IFEQ"), tok}, expiry}
		if g.chance(0.3) {
			get = "get"
			opts = append(opts, []string{g.casing("GET")})
		}
		if g.chance(0.3) {
			opts[0] = []string{g.casing("IFDEQ"), digest}
		}
		c = cmdOf(set(opts...)...)
		c.ref = []string{"EVAL", refSetIfEq, "1", key, tok, tok, ms, get}
	case 8:
		c = cmdOf(g.casing("DELEX"), key, g.casing("IFNE"), tok) // refused
		c.ref = []string{"EVAL", refDelIfNe, "1", key, tok}
	default:
		other := g.pick(diffTokens)
		if g.chance(0.5) { // refused: IFNE, or IFEQ with a new token
			c = cmdOf(set([]string{g.casing("IFNE"), other}, expiry)...)
			c.ref = []string{"EVAL", refSetIfNe, "1", key, tok, other, ms}
		} else {
			c = cmdOf(set([]string{g.casing("IFEQ"), other}, expiry)...)
			c.ref = []string{"EVAL", refSetIfEq, "1", key, tok, other, ms, ""}
		}
	}
	return c
}
