package quorum

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// maxBatch caps the operations in one pipeline.
	maxBatch = 256
	// queueLen is how many operations may wait for the sender; a caller
	// that finds the queue full waits, within its deadline, for room.
	queueLen = 1024
)

// errClosed is a node's answer once Close has begun.
var errClosed = errors.New("node closed")

// pipeline sends one node's operations to it with at most one write in
// flight. A caller that finds the node idle sends its operation itself,
// at once; callers that find it busy queue up, and the pipeline's sender
// sends everything queued as one go-redis pipeline (one write) when the
// node is free again. Replies come back in order, one per operation. A
// caller waits only until its own deadline: an operation whose deadline
// passed before it was sent is not sent, and a late reply is dropped.
type pipeline struct {
	c    *redis.Client
	log  *slog.Logger // for what the node refuses of the proxy's setup
	addr string
	// conn is the one connection operations go out on, so that they skip
	// the pool (and its health check, a system call per command). Only
	// the slot's holder touches it; nil until first used, and again after
	// a failure may have left it with unread replies.
	conn *redis.Conn
	// stale asks the slot's next holder to drop conn: the node was marked
	// down, and conn may lead to a process that is gone.
	stale atomic.Bool
	queue chan *op
	// slot holds a token while nothing is in flight; whoever takes it
	// may write to the node.
	slot    chan struct{}
	taken   atomic.Bool   // the sender holds an operation it took
	quit    chan struct{} // closed by close
	running sync.WaitGroup
	once    sync.Once
	// noFunctions is set once the node refused FUNCTION LOAD or FCALL
	// (an ACL without them, a server without functions): scripts with a
	// library then run as scripts.
	noFunctions atomic.Bool
}

// op is one queued command and its caller's context. cmd holds the reply
// once done is closed.
type op struct {
	ctx  context.Context
	cmd  *redis.Cmd
	s    *script // for a script: its body, to resend on NOSCRIPT
	done chan struct{}
}

func newPipeline(c *redis.Client, log *slog.Logger) *pipeline {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &pipeline{
		c: c, log: log, addr: c.Options().Addr, queue: make(chan *op, queueLen),
		slot: make(chan struct{}, 1), quit: make(chan struct{}),
	}
	p.slot <- struct{}{}
	p.running.Go(p.send)
	return p
}

// close stops the sender and waits for the pipeline in flight, which ends
// by its operations' deadlines. Callers still waiting get errClosed.
func (p *pipeline) close() {
	p.once.Do(func() {
		close(p.quit)
		p.running.Wait()
		<-p.slot // wait out a caller sending on its own; none takes it again
		if p.conn != nil {
			p.conn.Close()
		}
	})
}

// connection returns the connection to send on. The slot must be held.
func (p *pipeline) connection() *redis.Conn {
	if p.stale.Swap(false) && p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
	if p.conn == nil {
		p.conn = p.c.Conn()
	}
	return p.conn
}

// check drops the connection after err, unless err is a reply (an error
// reply or nil): a timeout or I/O failure may leave replies unread on it.
// The slot must be held.
func (p *pipeline) check(err error) {
	if err == nil {
		return // no errors.As target to allocate
	}
	var reply redis.Error
	if !errors.As(err, &reply) && p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}

// do sends args as one command and returns it with its reply.
func (p *pipeline) do(ctx context.Context, args ...any) (*redis.Cmd, error) {
	return p.run(ctx, redis.NewCmd(ctx, args...), nil)
}

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
		return p.run(ctx, redis.NewCmd(ctx, cmdArgs...), s)
	}
	cmdArgs[0], cmdArgs[1] = evalshaArg, s.shaArg
	return p.run(ctx, redis.NewCmd(ctx, append(cmdArgs, keysArgs...)...), s)
}

// The command names as go-redis takes them, made once.
var fcallArg, evalshaArg any = "fcall", "evalsha"

func (p *pipeline) run(ctx context.Context, cmd *redis.Cmd, s *script) (*redis.Cmd, error) {
	select {
	case <-p.quit:
		return nil, errClosed
	default:
	}
	// An idle node: nothing to batch with, so no hand-off to the sender.
	if len(p.queue) == 0 && !p.taken.Load() {
		select {
		case <-p.slot:
			cmd = p.direct(ctx, cmd, s)
			p.slot <- struct{}{}
			return cmd, cmd.Err()
		default:
		}
	}
	o := &op{ctx: ctx, cmd: cmd, s: s, done: make(chan struct{})}
	select {
	case p.queue <- o: // a one-case select: no locks on the other channels
	default:
		select {
		case p.queue <- o:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-p.quit:
			return nil, errClosed
		}
	}
	select {
	case <-o.done:
		if err := ctx.Err(); err != nil {
			return nil, err // a late reply is not an answer
		}
		return o.cmd, o.cmd.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.quit:
		return nil, errClosed
	}
}

// direct sends cmd on its own, under ctx, and again (retry) if the node
// lacks the script or library.
func (p *pipeline) direct(ctx context.Context, cmd *redis.Cmd, s *script) *redis.Cmd {
	p.connection().Process(ctx, cmd)
	if needsBody(cmd, s) {
		cmd = withBody(ctx, cmd, s)
		p.connection().Process(ctx, cmd)
	}
	if needsLibrary(cmd) {
		cmd = p.retry(ctx, cmd, s)
	}
	p.check(cmd.Err())
	return cmd
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
	err := cmd.Err()
	if err == nil || cmd.Args()[0] != "fcall" {
		return false
	}
	return isReplyError(err, "ERR Function not found") || refusesFunctions(err) || overMaxmemory(err) ||
		redis.HasErrorPrefix(err, "RLPNOBODY")
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
		if !redis.HasErrorPrefix(cmd.Err(), "RLPNOBODY") {
			load := redis.NewCmd(ctx, "function", "load", s.lib)
			p.connection().Process(ctx, load)
			if err = load.Err(); err != nil && isReplyError(err, "ERR Library '"+s.fn+"' already exists") {
				err = nil
			}
			if err != nil && !refusesFunctions(err) && !overMaxmemory(err) && !isReplyError(err, "ERR") {
				return load // the node failed, not the library
			}
		}
		if err == nil {
			// The library is there; a node that loaded it new, or lacks
			// the chunk, gets the chunk with the call.
			cmd = redis.NewCmd(ctx, withChunk(args, s)...)
			p.connection().Process(ctx, cmd)
			if err = cmd.Err(); !redis.HasErrorPrefix(err, "RLPNOCOMPILE") {
				return cmd
			}
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
	p.connection().Process(ctx, cmd)
	if needsBody(cmd, s) {
		cmd = withBody(ctx, cmd, s)
		p.connection().Process(ctx, cmd)
	}
	return cmd
}

// send is the sender: it takes what is queued and sends it, until close.
func (p *pipeline) send() {
	batch := make([]*op, 0, maxBatch)
	for {
		select {
		case o := <-p.queue:
			p.taken.Store(true)
			batch = append(batch, o)
		case <-p.quit:
			return
		}
		select {
		case <-p.slot: // the write in flight has its reply
		case <-p.quit:
			return
		}
		// Let the callers that are ready to run queue their operations
		// first, while they keep coming: under load this makes the batch
		// several times larger.
		for range 4 {
			n := len(p.queue)
			runtime.Gosched()
			if len(p.queue) == n {
				break
			}
		}
	more:
		for len(batch) < maxBatch {
			select {
			case o := <-p.queue:
				batch = append(batch, o)
			default:
				break more
			}
		}
		p.exec(batch)
		p.taken.Store(false)
		p.slot <- struct{}{}
		for _, o := range batch {
			close(o.done)
		}
		clear(batch)
		batch = batch[:0]
	}
}

// exec sends the batch's live operations as one pipeline, under the
// latest of their deadlines, and then resends as EVAL the scripts the
// node did not have.
func (p *pipeline) exec(batch []*op) {
	pipe := p.connection().Pipeline()
	var latest time.Time
	bounded := true
	for _, o := range batch {
		if err := o.ctx.Err(); err != nil {
			o.cmd.SetErr(err) // its caller has given up: not sent
			continue
		}
		d, ok := o.ctx.Deadline()
		bounded = bounded && ok
		if d.After(latest) {
			latest = d
		}
		pipe.Process(o.ctx, o.cmd)
	}
	if pipe.Len() == 0 {
		return
	}
	var ctx context.Context = context.Background()
	if bounded {
		ctx = deadlineContext(latest)
	}
	cmds, _ := pipe.Exec(ctx) // each command holds its own reply or error
	p.checkAll(cmds)
	var again []*op
	for _, o := range batch {
		if needsBody(o.cmd, o.s) && o.ctx.Err() == nil {
			o.cmd = withBody(o.ctx, o.cmd, o.s)
			again = append(again, o)
		}
	}
	if len(again) > 0 {
		pipe = p.connection().Pipeline()
		for _, o := range again {
			pipe.Process(o.ctx, o.cmd)
		}
		cmds, _ = pipe.Exec(ctx)
		p.checkAll(cmds)
	}
	// A library the node lacks: loaded once, then each call again, one by
	// one (a node has a library missing only after a restart or a flush).
	for _, o := range batch {
		if o.s != nil && needsLibrary(o.cmd) && o.ctx.Err() == nil {
			o.cmd = p.retry(o.ctx, o.cmd, o.s)
			p.check(o.cmd.Err())
		}
	}
}

// checkAll is check over the commands a pipeline sent, as its Exec
// returns them (after Exec, the pipeline's Cmds is empty).
func (p *pipeline) checkAll(cmds []redis.Cmder) {
	for _, c := range cmds {
		p.check(c.Err())
	}
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

// deadlineContext is a context that is never cancelled and only carries a
// deadline, which go-redis sets on the connection (ContextTimeoutEnabled):
// a pipeline needs no timer of its own.
type deadlineContext time.Time

func (d deadlineContext) Deadline() (time.Time, bool) { return time.Time(d), true }
func (deadlineContext) Done() <-chan struct{}         { return nil }
func (deadlineContext) Err() error                    { return nil }
func (deadlineContext) Value(any) any                 { return nil }
