package redisnode

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
	"github.com/redlock-proxy/redlock-proxy/internal/wire"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// eval runs s: by its function (FCALL) when it has a library and the
// node has functions, else by its SHA-1 (EVALSHA); and loads what the
// node does not have (retry).
func (p *pipeline) eval(ctx context.Context, s *script, keys []string, args ...any) (*redis.Cmd, error) {
	keysArgs := make([]any, 0, len(keys)+len(args))
	for _, k := range keys {
		keysArgs = append(keysArgs, k)
	}
	return p.evalKeyed(ctx, s, len(keys), append(keysArgs, args...))
}

// evalSlice runs s on p, as eval does, and decodes its array reply.
func evalSlice[T any](ctx context.Context, p *pipeline, decode func([]any) (T, error), s *script, keys []string, args ...any) (T, error) {
	cmd, err := p.eval(ctx, s, keys, args...)
	if err == nil {
		var vals []any
		if vals, err = cmd.Slice(); err == nil {
			return decode(vals)
		}
	}
	var zero T
	return zero, err
}

// evalBody runs s by its body (EVAL), never its digest or library: for
// a give-back, which must run on a node without s cached however late
// its replies come (a NOSCRIPT read past the deadline sends nothing).
func (p *pipeline) evalBody(ctx context.Context, s *script, keys []string, args ...any) (*redis.Cmd, error) {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "eval", s.src, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmd := redis.NewCmd(ctx, append(cmdArgs, args...)...)
	p.process(ctx, cmd)
	return cmd, cmd.Err()
}

// evalKeyed is eval of keysArgs, the first nkeys of them keys: callers
// that run one script on every node build it once.
func (p *pipeline) evalKeyed(ctx context.Context, s *script, nkeys int, keysArgs []any) (*redis.Cmd, error) {
	cmdArgs := make([]any, 3, 4+len(keysArgs))
	cmdArgs[2] = nkeys
	if s.fn != "" && !s.noLib.Load() && !p.noFunctions.Load() {
		cmdArgs[0], cmdArgs[1] = fcallArg, s.fnArg
		cmdArgs = append(cmdArgs, keysArgs...)
		if s.chunk != "" {
			cmdArgs = append(cmdArgs, s.chunkArg)
		}
		return p.script(ctx, redis.NewCmd(ctx, cmdArgs...), s)
	}
	cmdArgs[0], cmdArgs[1] = evalshaArg, s.shaArg
	return p.script(ctx, redis.NewCmd(ctx, append(cmdArgs, keysArgs...)...), s)
}

// appendScript appends the command verb (EVAL or EVALSHA) of script with
// keys and args.
func appendScript(b []byte, verb, script string, keys []string, args []any) []byte {
	if b == nil {
		size := 64 + len(script)
		for _, k := range keys {
			size += 16 + len(k)
		}
		for _, a := range args {
			if s, ok := a.(string); ok {
				size += len(s)
			}
			size += 16
		}
		b = make([]byte, 0, size)
	}
	b = wire.AppendArray(b, 3+len(keys)+len(args))
	b = wire.AppendBulk(b, verb)
	b = wire.AppendBulk(b, script)
	b = wire.AppendBulkInt(b, int64(len(keys)))
	for _, k := range keys {
		b = wire.AppendBulk(b, k)
	}
	for _, a := range args {
		b = wire.AppendArg(b, a)
	}
	return b
}

// The command names as go-redis takes them, made once.
var fcallArg, evalshaArg any = "fcall", "evalsha"

// script sends cmd, a call of s, and again (retry) if the node lacks the
// script or its library.
func (p *pipeline) script(ctx context.Context, cmd *redis.Cmd, s *script) (*redis.Cmd, error) {
	p.process(ctx, cmd)
	if needsBody(cmd, s) && ctx.Err() == nil {
		cmd = withBody(ctx, cmd, s)
		p.process(ctx, cmd)
	}
	if needsLibrary(cmd) && ctx.Err() == nil {
		cmd = p.retry(ctx, cmd, s)
	}
	return cmd, cmd.Err()
}

// needsBody reports whether cmd, an EVALSHA of s, failed because the
// node lacks the script.
func needsBody(cmd *redis.Cmd, s *script) bool {
	return s != nil && cmd.Err() != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT")
}

// withBody is cmd as EVAL of s's body, unsent.
func withBody(ctx context.Context, cmd *redis.Cmd, s *script) *redis.Cmd {
	args := cmd.Args()
	args[0], args[1] = "eval", s.src
	return redis.NewCmd(ctx, args...)
}

// needsLibrary reports whether an FCALL failed because the node lacks
// the library, refuses functions or is over maxmemory.
func needsLibrary(cmd *redis.Cmd) bool {
	return cmd.Args()[0] == "fcall" && fcallNeedsLibrary(cmd.Err())
}

// fcallNeedsLibrary reports whether err, an FCALL's, is needsLibrary's.
func fcallNeedsLibrary(err error) bool {
	return err != nil && (isReplyError(err, "ERR Function not found") || refusesFunctions(err) ||
		overMaxmemory(err) || redis.HasErrorPrefix(err, "RLPNOBODY"))
}

// overMaxmemory reports whether err is a node's OOM refusal. Over
// maxmemory a node refuses a whole FCALL (or FUNCTION LOAD) of a function
// without flags, where a script runs and only its writes that add memory
// fail: a release or an extend still works as a script, as on one Redis.
func overMaxmemory(err error) bool {
	return redis.HasErrorPrefix(err, "OOM")
}

// refusesFunctions reports whether err is a node's refusal of a function
// command: its ACL, or a server without them.
func refusesFunctions(err error) bool {
	return redis.HasErrorPrefix(err, "NOPERM") || isReplyError(err, "ERR unknown command") ||
		isReplyError(err, "ERR unknown subcommand")
}

// isReplyError reports whether err is a reply from the node that starts
// with prefix.
func isReplyError(err error, prefix string) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), prefix)
}

// refusedFunctions turns functions off for the node, saying so once.
func (p *pipeline) refusedFunctions(err error) {
	if p.noFunctions.Swap(true) {
		return
	}
	fix := "the server has no functions (Redis 7 has)"
	if redis.HasErrorPrefix(err, "NOPERM") {
		fix = "its ACL needs +fcall +function|load"
	}
	p.log.Warn("node refuses functions: scripts served by effect run there as scripts, which costs it more",
		"node", p.addr, "fix", fix, "err", err)
}

// flushRetries bounds how many times retry loads a library a flush
// deleted again before its call.
const flushRetries = 4

// retry runs a failed FCALL of s again: after loading its library, or,
// if the node will not load it or is over maxmemory, as a script
// (EVALSHA, then EVAL). The slot must be held.
func (p *pipeline) retry(ctx context.Context, cmd *redis.Cmd, s *script) *redis.Cmd {
	args := cmd.Args()
	switch {
	case overMaxmemory(cmd.Err()):
		// This call runs as a script; the next tries its function again.
	case refusesFunctions(cmd.Err()):
		p.refusedFunctions(cmd.Err())
	default:
		var err error
		// Another client's SCRIPT FLUSH (FlushEffects) may delete the
		// library again between its load and the call: loaded again, a
		// few times, while the call has time left.
		for try := 0; ; try++ {
			if !redis.HasErrorPrefix(cmd.Err(), "RLPNOBODY") {
				load := redis.NewCmd(ctx, "function", "load", s.lib)
				p.process(ctx, load)
				if err = load.Err(); err != nil && isReplyError(err, "ERR Library '"+s.fn+"' already exists") {
					err = nil
				}
				if err != nil && !refusesFunctions(err) && !overMaxmemory(err) && !isReplyError(err, "ERR") {
					return load // the node failed, not the library
				}
			}
			if err != nil {
				break
			}
			// The library is there; a node that loaded it new, or lacks
			// the chunk, gets the chunk with the call.
			cmd = redis.NewCmd(ctx, withChunk(args, s)...)
			p.process(ctx, cmd)
			err = cmd.Err()
			if try < flushRetries && ctx.Err() == nil && isReplyError(err, "ERR Function not found") {
				continue
			}
			if !redis.HasErrorPrefix(err, "RLPNOCOMPILE") {
				return cmd
			}
			break
		}
		switch {
		case refusesFunctions(err):
			p.refusedFunctions(err)
		case overMaxmemory(err):
		default:
			// The library does not load, or the chunk does not compile,
			// where the script may still run (or fail to compile with
			// Redis's own words): run it so.
			if !s.noLib.Swap(true) {
				p.log.Warn("a wrapped script's library does not load; it runs as a script on every node",
					"node", p.addr, "library", s.fn, "err", err)
			}
		}
	}
	if s.chunk != "" && args[0] == "fcall" {
		args = args[:len(args)-1] // the chunk's tag is the function's, not the script's
	}
	args[0], args[1] = "evalsha", s.sha
	cmd = redis.NewCmd(ctx, args...)
	p.process(ctx, cmd)
	if needsBody(cmd, s) {
		cmd = withBody(ctx, cmd, s)
		p.process(ctx, cmd)
	}
	return cmd
}

// script is a Lua script run on nodes, with its SHA-1; and, for one with
// a library form, the library and its one function's name, and the
// chunk, if any, that the function compiles and keeps (wrapperBodiesSrc):
// a call of fn ends with the chunk's SHA-1, or with the chunk and "+"
// and its SHA-1 where the node lacks it.
type script struct {
	src, sha string
	lib, fn  string
	chunk    string
	// shaArg, fnArg and chunkArg, loadArg are sha, fn and the chunk's
	// two tags as command arguments, made once.
	shaArg, fnArg, chunkArg, loadArg any
	// noLib is set once a node failed to load the library or compile the
	// chunk: it runs as a script everywhere.
	noLib atomic.Bool
}

func newScript(src string) *script {
	h := sha1.Sum([]byte(src))
	s := &script{src: src, sha: hex.EncodeToString(h[:])}
	s.shaArg = s.sha
	return s
}

// nodeLua holds the node's own scripts (the wrapper's are wrapperFS).
//
//go:embed lua/counter_*.lua lua/latch_*.lua lua/rwlock_*.lua lua/read_key.lua lua/undo_effect.lua
var nodeLua embed.FS

// engineNames fills in the names a node script shares with the engine,
// each as a Lua string: the counters' hash, the hold records' prefix
// and FENCE's field.
var engineNames = strings.NewReplacer(
	"__RLP_COUNTERS", lua.Quote(quorum.CountersKey),
	"__RLP_HOLDPREFIX", lua.Quote(quorum.HoldPrefix),
	"__RLP_FENCEFIELD", lua.Quote(quorum.FenceField))

// luaScript is the script of head (lateCheck, or none) and the named
// files of lua/ in order, with engineNames filled in.
func luaScript(head string, files ...string) *script {
	var b strings.Builder
	b.WriteString(head)
	for _, f := range files {
		src, err := nodeLua.ReadFile("lua/" + f + ".lua")
		if err != nil {
			panic(err) // no such file: the package fails to start, in every test
		}
		b.Write(src)
	}
	return newScript(engineNames.Replace(b.String()))
}

// withLibrary gives s a library form: lib, whose one function is fn,
// and the chunk it runs (none: fn is the script).
func (s *script) withLibrary(fn string, lib libraryForm) *script {
	s.fn, s.lib, s.fnArg, s.chunk = fn, lib.text, fn, lib.chunk
	if s.chunk != "" {
		h := sha1.Sum([]byte(s.chunk))
		sha := hex.EncodeToString(h[:])
		s.chunkArg, s.loadArg = sha, "+"+sha
	}
	return s
}

// withChunk is args, a call of s's function, with its last argument (the
// chunk's SHA-1) replaced by the chunk and its load tag.
func withChunk(args []any, s *script) []any {
	if s.chunk == "" {
		return args
	}
	out := make([]any, 0, len(args)+1)
	out = append(out, args[:len(args)-1]...)
	return append(out, s.chunk, s.loadArg)
}

// FlushEffects drops the wrapper's libraries (rlp_*) and the script
// cache (Engine.FlushEffects).
func (n *redisNode) FlushEffects(ctx context.Context) error {
	if !n.p.noFunctions.Load() {
		cmd, err := n.p.do(ctx, "function", "list", "libraryname", "rlp_*")
		if err != nil && !refusesFunctions(err) {
			return err
		}
		libs, _ := cmd.Slice()
		for _, l := range libs {
			name := libraryName(l)
			if !strings.HasPrefix(name, "rlp_") {
				continue
			}
			if _, err := n.p.do(ctx, "function", "delete", name); err != nil && !isReplyError(err, "ERR Library not found") {
				return err
			}
		}
	}
	_, err := n.p.do(ctx, "script", "flush")
	return err
}

// libraryName reads library_name from one entry of FUNCTION LIST (a
// flat array of names and values in RESP2, a map in RESP3).
func libraryName(v any) string {
	switch l := v.(type) {
	case []any:
		for i := 0; i+1 < len(l); i += 2 {
			if l[i] == "library_name" {
				s, _ := l[i+1].(string)
				return s
			}
		}
	case map[any]any:
		s, _ := l["library_name"].(string)
		return s
	}
	return ""
}
