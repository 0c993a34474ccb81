package redisnode

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The wrapper runs a client's script on one node with its effect watched.
// Its Lua lives in lua/wrapper_*.lua, assembled by one template
// (lua/wrapper.tmpl, wrapperLua) into a script around one body and one
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
// wrapperLua is the wrapper's Lua, one template over lua/wrapper*.lua
// (delimiters ${ }, which Lua never writes): wrapper.tmpl assembles the
// two forms of a wrapped script around the same parts. As a script
// (EVAL, eval_head + body + eval_tail) every run builds the wrapper's
// functions anew. As a library (lib: FUNCTION LOAD once, then FCALL) they
// are built once, when a node loads it, and a run only sets the state
// they share; the library reads the real redis table when it runs
// (__rlp_G), as the one it is loaded with has no call, and has no
// redis.replicate_commands, a no-op for scripts since Redis 7.0.
// TestWrapperFormsParse parses each form.
//
// The parts: wrapper_state.lua declares what a run knows, set by
// wrapper_init.lua at the start of each run; wrapper_fns.lua are the
// wrapper's functions; wrapper_redis.lua is the guarded redis table's own
// members, call and pcall (any other member is the real table's), each
// the body of wrapper_guard.lua (PC the real one, Refuse what a refusal
// does: the same code twice, since one more call level with the
// arguments costs a run); wrapper_bodies.lua keeps the bodies the library
// has compiled; wrapper_tail.lua runs the body and answers, with
// wrapper_fastkey.lua for each key the fast path proved.
//
//go:embed lua/wrapper.tmpl lua/wrapper_*.lua
var wrapperFS embed.FS

var wrapperLua = template.Must(template.New("wrapper").Delims("${", "}").Option("missingkey=error").
	ParseFS(wrapperFS, "lua/wrapper.tmpl", "lua/wrapper_*.lua"))

// wrapperData fills the template: the allow-list, max_ttl and the
// bounds, for both forms; a body's parameters and literals (the script
// form), the library's function name (the library).
type wrapperData struct {
	Lib                     bool
	Params, Lits, Name      string
	MaxTTL                  int64
	MaxBytes, MaxEntries    int
	MaxBodies, MaxBodyBytes int
	MaxDepth                int
	KindChain, HoldPrefix   string
	PC, Refuse              string // in wrapper_guard.lua: set by Call and PCall
}

// Call and PCall are d for the guarded redis.call and redis.pcall.
func (d wrapperData) Call() wrapperData {
	d.PC, d.Refuse = "__rlp_call", `error({err = "ERR script refused: " .. __rlp_refused})`
	return d
}

func (d wrapperData) PCall() wrapperData {
	d.PC, d.Refuse = "__rlp_pcall", `do return {err = "ERR script refused: " .. __rlp_refused} end`
	return d
}

// newWrapperData is the template's data for max_ttl.
func newWrapperData(maxTTL time.Duration) wrapperData {
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
	return wrapperData{
		MaxTTL:   maxTTL.Milliseconds(),
		MaxBytes: maxSnapshotBytes, MaxEntries: maxSnapshotEntries,
		MaxBodies: maxLibraryBodies, MaxBodyBytes: maxLibraryBodyBytes,
		MaxDepth:  maxReplyDepth,
		KindChain: kinds.String(), HoldPrefix: lua.Quote(quorum.HoldPrefix),
	}
}

// render executes one of wrapper.tmpl's forms.
func (d wrapperData) render(form string) string {
	var b strings.Builder
	if err := wrapperLua.ExecuteTemplate(&b, form, d); err != nil {
		panic(fmt.Sprintf("quorum: the wrapper's template: %v", err)) // TestWrapperFormsParse runs every form
	}
	return b.String()
}

// maxReplyDepth is how deep a script's reply served by its effect may
// nest arrays: the wrapper refuses a deeper one (or a cycle), and undoes
// its run, as its encoding doubles each level and a node connection
// reads 1,024 (internal/wire): past that, the connection would fail and
// every other call on it with it.
const maxReplyDepth = 256

// undoEffectScript gives back one key a run took new (keyUndo): a
// string holding one of the run's own holders is deleted; of a hash or
// sorted set, each own holder is removed, then, if one was there, each
// marker the run added that still has the value it gave it (the key goes
// with its last entry). It returns how many own holders it removed. Its
// last ARGV is its deadline (lateCheck).
var undoEffectScript = luaScript(lateCheck, "undo_effect")

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
	d := newWrapperData(maxTTL)
	d.Params, d.Lits = params, lits.String()
	eh := d.render("eval_head")
	fn, lib := wrapperLibrary(maxTTL)
	// The chunk: on the body's first line, locals for what the library
	// gives the body (its KEYS and ARGV, set before each run, and the
	// guarded redis), then the body as a function; after it, the setter
	// and the literals.
	chunk := "local KEYS, ARGV, redis = nil, nil, ... return function(" + params + ") " + body +
		"\nend, function(k, a) KEYS, ARGV = k, a end, " + lits.String() + "\n"
	return wrapped{
		eval: eh + body + d.render("eval_tail"), fn: fn, lib: libraryForm{text: lib, chunk: chunk},
		evalHead: strings.Count(eh, "\n"),
	}
}

// wrapperLibrary is the library every body runs in, for this max_ttl, and
// its function's name. It is named by what it holds (the SHA-1 of the
// library with a placeholder for the name): proxies that wrap alike share
// it, and any other library keeps its own name.
func wrapperLibrary(maxTTL time.Duration) (fn, lib string) {
	if l, ok := libraries.Load(maxTTL); ok {
		return l.([2]string)[0], l.([2]string)[1]
	}
	d := newWrapperData(maxTTL)
	d.Lib, d.Name = true, "__RLP_NAME"
	sum := sha1.Sum([]byte(d.render("lib")))
	d.Name = "rlp_" + hex.EncodeToString(sum[:])
	lib = d.render("lib")
	libraries.Store(maxTTL, [2]string{d.Name, lib})
	return d.Name, lib
}

// libraries are the wrapper's libraries rendered, by max_ttl: an engine
// has one, and a test a few.
var libraries sync.Map

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
