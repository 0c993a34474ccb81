package quorum

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
)

// The wrapper runs a client's script on one node with its effect watched.
// Its Lua lives in lua/wrapper_*.lua, assembled here by one set of
// placeholders (wrapperParts) into a script around one body and one
// library for every body (TestWrapperFormsParse parses each form).
// A guarded redis table refuses any command outside the allow-list, any
// key argument that is not one of KEYS, and SELECT of a database other
// than 0. Each write to a key is judged, atomically with the body, in one
// of two ways:
//
//   - the fast path proves it is a lock owner's from what the run already
//     knows (the body's own GET of the key, or the fast path's earlier
//     writes) and the write's own reply: SET k v NX PX t with v own and
//     t <= max_ttl took a free key when it answers OK; SET k v PX t on a
//     key seen free or holding an own value, PEXPIRE/EXPIRE and DEL/UNLINK
//     on a key seen holding an own value, are an owner's take, extend or
//     release. No snapshot is taken; one PEXPIRETIME keeps, before an own
//     value's first change, what a rollback would need.
//   - any other write (hashes, sorted sets, a write to a key the run has
//     not read, SET without PX, ...) first puts its key on the slow path:
//     the key is snapshot before the write (type, expiry, value, hash
//     fields or sorted-set members), again after the run, and the change
//     between the two is judged.
//
// A run that did what a lock owner may not do is rolled back, every key to
// what it held before the run, in the same run. The wrapper returns
// {"refused", reason}, or the body's reply (a tag: "s" status, "b" bulk,
// "i" int, "n" nil, "e" error, "E" a Lua error the body raised, "a"
// array; and a value) beside what the run did to each distinct key, in
// KEYS order: one string
//
//	tag numbers ":" value
//
// when every key was proved (each key one number, joined by ","), or
// else a flat array
//
//	{tag, value, key info, ...}
//
// where an array's value is its items, each {tag, value}, a proved key
// is its number and any other key is
//
//	-1 - changed, own hold's pttl after, others, n, n own holders before, m, m own holders after,
//	p, p markers added (each its entry and value: an undo removes them)
//
// (wrapperTailSrc says how a number packs the same). A holder is a
// string's value, a hash's field or a sorted set's member (whose score is
// its expiry in ms, as Symfony writes it): the hold table (lua/wrapper_fns.lua).
// It is own when it is one of the call's ARGV or KEYS, never for being a
// constant of the script, and is sent as its place among them. PUBLISH
// and SPUBLISH are held back until the run is judged, and sent only if it
// is not refused. A run that releases or extends a hold deletes or moves
// the hold's fencing record (fence.go) as the engine's release and extend
// do. The body's locals cannot reach the wrapper's: script
// admission refuses every name that is not the body's own local or an
// allowed global.
// wrapperStateSrc declares what a run knows. Its values are set by
// wrapperInitSrc at the start of each run.
//
//go:embed lua/wrapper_state.lua
var wrapperStateSrc string

// wrapperInitSrc starts a run (__RLP_REDIS: the real redis table;
// __RLP_FIRSTRUN: what the form does on its first run only).
//
//go:embed lua/wrapper_init.lua
var wrapperInitSrc string

// wrapperFnsSrc are the wrapper's functions.
//
//go:embed lua/wrapper_fns.lua
var wrapperFnsSrc string

// wrapperRedisSrc is the guarded redis table's own members: call and
// pcall; any other member is the real table's.
//
//go:embed lua/wrapper_redis.lua
var wrapperRedisSrc string

// wrapperGuard is the body of the guarded redis.call and redis.pcall
// (__RLP_PC the real one, __RLP_REFUSE what a refusal does): the same
// code twice, since one more call level with the arguments costs a run.
//
//go:embed lua/wrapper_guard.lua
var wrapperGuard string

var wrapperTail = strings.NewReplacer("__RLP_FASTKEY", wrapperFastKey,
	"__RLP_MAXDEPTH", strconv.Itoa(maxReplyDepth)).Replace(wrapperTailSrc)

// maxReplyDepth is how deep a script's reply served by its effect may
// nest arrays: the wrapper refuses a deeper one (or a cycle), and undoes
// its run, as its encoding doubles each level and a node connection
// reads 1,024 (internal/wire): past that, the connection would fail and
// every other call on it with it.
const maxReplyDepth = 256

var wrapperRedis = strings.NewReplacer(
	"__RLP_GUARD_CALL", strings.NewReplacer(
		"__RLP_PC", "__rlp_call",
		"__RLP_REFUSE", `error({err = "ERR script refused: " .. __rlp_refused})`,
	).Replace(wrapperGuard),
	"__RLP_GUARD_PCALL", strings.NewReplacer(
		"__RLP_PC", "__rlp_pcall",
		"__RLP_REFUSE", `do return {err = "ERR script refused: " .. __rlp_refused} end`,
	).Replace(wrapperGuard),
).Replace(wrapperRedisSrc)

// The two forms of a wrapped script, around the same parts. As a script
// (EVAL) every run builds the wrapper's functions anew. As a library
// (FUNCTION LOAD once, then FCALL) they are built once, when a node loads
// it, and a run only sets the state they share.
var (
	evalHead = wrapperStateSrc + "__rlp_lits = __RLP_LITERALS\n" +
		strings.NewReplacer("__RLP_REDIS", "redis", "__RLP_FIRSTRUN", "").Replace(wrapperInitSrc) +
		wrapperFnsSrc + "local __rlp_real = redis\nlocal redis = setmetatable({\n" + wrapperRedis +
		"}, {__index = __rlp_real})\nlocal function __rlp_body(__RLP_BODYPARAMS)\n"
	evalTail = "\nend\n" + wrapperTail

	// The library is one for every body: it reads the real redis table
	// when it runs (__rlp_G), as the one it is loaded with has no call.
	// Functions have no redis.replicate_commands, a no-op for scripts
	// since Redis 7.0.
	libSrc = "#!lua name=__RLP_NAME\nlocal __rlp_reg = redis.register_function\n" +
		"local function __rlp_G() return redis end\nlocal KEYS, ARGV\n" +
		wrapperStateSrc + wrapperFnsSrc + "local redis = {\n" + wrapperRedis +
		"  replicate_commands = function() return true end,\n}\n" + wrapperBodiesSrc +
		"__rlp_reg(\"__RLP_NAME\", function(__rlp_k, __rlp_a)\n" +
		"local __rlp_n = #__rlp_a\nlocal __rlp_tag = __rlp_a[__rlp_n]\n" +
		"if __rlp_tag ~= __rlp_curtag then\n  local __rlp_e = __rlp_bodies[__rlp_tag]\n" +
		"  if __rlp_e then __rlp_curtag = __rlp_tag\n  else\n" +
		"    __rlp_e, __rlp_curtag = __rlp_find(__rlp_a), false\n    if __rlp_e.err then return __rlp_e end\n  end\n" +
		"  __rlp_body, __rlp_set, __rlp_lits = __rlp_e.body, __rlp_e.set, __rlp_e.lits\nend\n" +
		"__rlp_a[__rlp_n] = nil\nKEYS, ARGV = __rlp_k, __rlp_a\n__rlp_set(__rlp_k, __rlp_a)\n" +
		strings.NewReplacer("__RLP_REDIS", "__rlp_G()", "__RLP_FIRSTRUN", "setmetatable(redis, {__index = __rlp_G()})").Replace(wrapperInitSrc) +
		wrapperTail + "end)\n"
)

// wrapperBodiesSrc keeps the bodies the library has compiled, by the
// SHA-1 of their chunk (bodyChunk), as a node's Lua state keeps them
// between calls. A call's last argument is the chunk's SHA-1; or, when
// the node lacks it (first use, a flush, a restart, an eviction), "+"
// and the SHA-1 after the chunk itself, which it compiles and keeps. At
// most __RLP_MAXBODIES chunks, __RLP_MAXBODYBYTES bytes of text in all,
// are kept: a new one drops others to make room. __rlp_find takes the
// call's own arguments off ARGV and returns the body's entry, or the
// error reply to answer; the library's function looks a known body up
// itself, and keeps the one it runs in body, set and lits (curtag: its
// SHA-1 once it was looked up; the next call of the same body looks up
// nothing).
//
//go:embed lua/wrapper_bodies.lua
var wrapperBodiesSrc string

// wrapperFastKey is what the fast path proved of one key (st): changed
// (ch), how long its own holder has left (hold) and that holder's place
// among the own tokens before (bi) and after (ai), 0 for none: what it
// held before its first change and holds now, or an own value it only
// read, before and after.
//
//go:embed lua/wrapper_fastkey.lua
var wrapperFastKey string

// wrapperTailSrc runs the body and answers.
//
//go:embed lua/wrapper_tail.lua
var wrapperTailSrc string

// undoEffectScript gives back one key a run took new (keyUndo): a
// string holding one of the run's own holders is deleted; of a hash or
// sorted set, each own holder is removed, then, if one was there, each
// marker the run added that still has the value it gave it (the key goes
// with its last entry). It returns how many own holders it removed.
var undoEffectScript = newScript(undoEffectSrc)

//go:embed lua/undo_effect.lua
var undoEffectSrc string

// wrapped is a body in the wrapper, in both forms: a script, and a call
// of the library's one function fn that runs the body's chunk. evalHead
// counts the lines before the body's first in the script; the chunk
// starts on the body's first line.
type wrapped struct {
	eval, fn string
	lib      libraryForm
	evalHead int
}

// libraryForm is what a node needs to run a body by a function: the
// library (one for every body the engine wraps) and the body's chunk,
// which the library compiles once and keeps (wrapperBodiesSrc).
type libraryForm struct {
	text, chunk string
}

// The library's bound on the bodies it keeps compiled, per node: the
// number of chunks and their text's bytes in all. A body's compiled
// functions cost the node's Lua a few times its text.
const (
	maxLibraryBodies    = 256
	maxLibraryBodyBytes = 1 << 20
)

// wrapBody builds the wrapper around body for the given literals (the
// constants the body may write as markers, never as tokens) and max_ttl.
func wrapBody(body string, literals []string, maxTTL time.Duration) wrapped {
	var lits strings.Builder
	lits.WriteString("{")
	for _, l := range literals {
		lits.WriteString(lua.Quote(l))
		lits.WriteString(", ")
	}
	lits.WriteString("}")
	// A body that never reads "..." runs in a function without it: Lua
	// 5.1 gives a vararg function that does not read it a local "arg"
	// table, built on every call and counted against the 200 locals of
	// the body, which Redis's main chunk does not have.
	params := "..."
	if !strings.Contains(body, "...") {
		params = ""
	}
	head := wrapperParts(maxTTL, params, lits.String())
	eh := head.Replace(evalHead)
	fn, lib := wrapperLibrary(maxTTL)
	// The chunk: on the body's first line, locals for what the library
	// gives the body (its KEYS and ARGV, set before each run, and the
	// guarded redis), then the body as a function; after it, the setter
	// and the literals.
	chunk := "local KEYS, ARGV, redis = nil, nil, ... return function(" + params + ") " + body +
		"\nend, function(k, a) KEYS, ARGV = k, a end, " + lits.String() + "\n"
	return wrapped{
		eval: eh + body + head.Replace(evalTail), fn: fn, lib: libraryForm{text: lib, chunk: chunk},
		evalHead: strings.Count(eh, "\n"),
	}
}

// wrapperLibrary is the library every body runs in, for this max_ttl, and
// its function's name. It is named by what it holds:
// proxies that wrap alike share it, and any other library keeps its own
// name.
func wrapperLibrary(maxTTL time.Duration) (fn, lib string) {
	lib = wrapperParts(maxTTL, "", "{}").Replace(libSrc)
	sum := sha1.Sum([]byte(lib))
	fn = "rlp_" + hex.EncodeToString(sum[:])
	return fn, strings.ReplaceAll(lib, "__RLP_NAME", fn)
}

// wrapperParts fills the wrapper's placeholders: the allow-list, max_ttl
// and the bounds, and a body's parameters and literals (the script form
// only).
func wrapperParts(maxTTL time.Duration, params, lits string) *strings.Replacer {
	// The allow-list as a chain of comparisons, the common names first,
	// each in lower and upper case (any other case is lowered, then
	// compared again).
	var kinds strings.Builder
	for i, name := range commandOrder() {
		if i > 0 {
			kinds.WriteString("else")
		}
		c, _ := lua.Lookup(name)
		fmt.Fprintf(&kinds, "if c == %s or c == %s then c, kind = %s, %d\n        ",
			lua.Quote(name), lua.Quote(strings.ToUpper(name)), lua.Quote(name), commandKind(name, c))
	}
	kinds.WriteString("end")
	return strings.NewReplacer(
		"__RLP_BODYPARAMS", params,
		"__RLP_LITERALS", lits,
		"__RLP_MAXBYTES", strconv.Itoa(maxSnapshotBytes),
		"__RLP_MAXENTRIES", strconv.Itoa(maxSnapshotEntries),
		"__RLP_MAXBODIES", strconv.Itoa(maxLibraryBodies),
		"__RLP_MAXBODYBYTES", strconv.Itoa(maxLibraryBodyBytes),
		"__RLP_KINDCHAIN", kinds.String(),
		"__RLP_MAXTTL", strconv.FormatInt(maxTTL.Milliseconds(), 10),
		"__RLP_HOLDPREFIX", lua.Quote(holdPrefix),
	)
}

// A write the wrapper cannot prove is a lock owner's snapshots its key
// first (the slow path): a key larger than these (a string's bytes, a
// hash's fields or a sorted set's members) is refused before the write
// runs, rather than read whole into the node's Lua on every run.
const (
	maxSnapshotBytes   = 64 << 10
	maxSnapshotEntries = 10000
)

// commandKind is a command's kind as the wrapper's kind function returns
// it: 0 no key, 1 or 2 reads its first or every argument's key, 3 or 4
// writes them, 5 SELECT.
func commandKind(name string, c lua.Command) int {
	switch {
	case name == "select":
		return 5
	case c.Keys == lua.NoKeys:
		return 0
	case c.ReadOnly:
		return int(c.Keys) // 1 or 2
	}
	return int(c.Keys) + 2 // 3 or 4
}

// commandOrder is the allow-list with the names lock scripts use most
// first (SET before GET, whose common spellings the guard answers before
// the chain), then the others in order.
func commandOrder() []string {
	first := []string{"set", "get", "pexpire", "del", "exists", "hexists", "hincrby", "pttl", "unlink", "expire"}
	var out []string
	for _, name := range first {
		if _, ok := lua.Lookup(name); ok {
			out = append(out, name)
		}
	}
	for name := range lua.Commands() {
		if !slices.Contains(first, name) {
			out = append(out, name)
		}
	}
	return out
}
