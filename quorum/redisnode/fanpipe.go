package redisnode

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// plainCall is the command cmd, not a script, its reply turned into the
// answer by result.
func plainCall[T any](cmd []byte, result func(any, error) (T, error)) quorum.Call[T] {
	return quorum.Call[T]{Command: quorum.Command{Cmd: cmd}, Result: result}
}

// scriptCall is the EVALSHA of s with keys and args, its reply turned
// into the answer by result. The same call goes to every node, encoded
// once.
func scriptCall[T any](s *script, keys []string, args []any, result func(any, error) (T, error)) quorum.Call[T] {
	cmd := appendScript(nil, "evalsha", s.sha, keys, args)
	return quorum.Call[T]{Command: quorum.Command{Cmd: cmd, Src: s.src, Keys: keys, Args: args}, Result: result}
}

// body is c's EVAL form, for a node that answered NOSCRIPT.
func body(c *quorum.Command) []byte { return appendScript(nil, "eval", c.Src, c.Keys, c.Args) }

// noScript reports whether err, the reply to c, asks for its body.
func noScript(c *quorum.Command, err error) bool {
	return c.Src != "" && err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// runCall sends c on p alone and waits for its answer.
func runCall[T any](ctx context.Context, p *pipeline, c quorum.Call[T]) (T, error) {
	v, err := p.reply(ctx, c.Command.Cmd)
	if noScript(&c.Command, err) && ctx.Err() == nil {
		v, err = p.reply(ctx, body(&c.Command))
	}
	return c.Result(v, err)
}

// fan is the operations one fan-out has in flight, one per node, and
// how many are not finished yet.
type fan struct {
	left  atomic.Int32
	ready chan struct{} // gets one value once left reaches 0
	// lacking gets each op answered NOSCRIPT, not finished, whose node the
	// waiter sends the script's body; scripted says the call has one.
	lacking  chan *op
	scripted bool
	timed    bool // the reader notes when its ops' replies came (op.at)
	ctx      fanCtx
	timer    *time.Timer // ends the wait at ctx's deadline; stopped between uses
	ops      []op
	// perNode: each node's op goes out as cmds[i], its copy of a dated
	// command with its own deadline field (in buf), not as the one for
	// all.
	perNode bool
	cmds    [][]byte
	buf     []byte
}

// fanCtx is the context a fan's ops carry: the caller's, with the
// fan-out's deadline. Its Done is the caller's alone: the fan's wait, the
// only one to wait on it, has a timer for the deadline. It spares each
// fan-out a context.WithTimeout (a timer, a cancel func and a place in
// the parent's children).
type fanCtx struct {
	context.Context
	deadline time.Time
}

func (c *fanCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *fanCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

var fans sync.Pool

// finished counts o, one of f's ops, as finished, unless it asks for
// its script's body: then the waiter gets it on lacking, at most once.
func (f *fan) finished(o *op) {
	if f.scripted && !o.resent && isNoScript(o.val) {
		o.resent = true
		f.lacking <- o // room for every op: the reader never waits
		return
	}
	o.fin.Store(true)
	if f.left.Add(-1) == 0 {
		f.ready <- struct{}{}
	}
}

// isNoScript reports whether v, a reply, is NOSCRIPT: the node lacks
// the script (a restart, SCRIPT FLUSH), by noScript's rule (go-redis's
// HasErrorPrefix, which takes KVRocks' "ERR NOSCRIPT" too).
func isNoScript(v any) bool {
	e, ok := v.(wire.Error)
	return ok && redis.HasErrorPrefix(e, "NOSCRIPT")
}

// launch starts cmd on the pipelines of the nodes in idx, under ctx, and
// returns once each is written or queued behind a write under way.
func (f *fan) launch(ctx context.Context, pipes []*pipeline, idx []int, cmd []byte) {
	f.left.Store(int32(len(idx)))
	f.start(ctx, pipes, idx, cmd, false)
}

// start is launch without counting the ops: resent marks them as the
// script's body, sent in place of an op that got NOSCRIPT.
func (f *fan) start(ctx context.Context, pipes []*pipeline, idx []int, cmd []byte, resent bool) {
	var mine [8]*pipeline
	own := mine[:0] // the pipelines this caller writes
	for _, i := range idx {
		o := &f.ops[i]
		*o = op{ctx: ctx, cmd: cmd, fan: f, resent: resent}
		if f.perNode && !resent {
			o.cmd = f.cmds[i]
		}
		if pipes[i].enqueue(o) {
			own = append(own, pipes[i])
		}
	}
	gatherWrites(own...)
	for _, p := range own {
		if p.connected() {
			p.drain()
		} else {
			// A dial, and its set-up, can take until the deadline (a
			// node frozen, or gone): never before the other nodes' writes.
			go p.drain()
		}
	}
}

// wait waits until every op launched has finished, or f.ctx's deadline
// passes or its caller gives up; it reports whether all finished. An op
// answered NOSCRIPT meanwhile gets body() on its node at once, within
// the same deadline: a silent node never holds the others' back.
func (f *fan) wait(pipes []*pipeline, body func(i int) []byte) bool {
	d := time.Until(f.ctx.deadline)
	if f.timer == nil {
		f.timer = time.NewTimer(d)
	} else {
		f.timer.Reset(d)
	}
	var gaveUp <-chan struct{} // nil: nothing ends the caller's wait early
	if e, ok := f.ctx.Context.(endsAtDeadline); !ok || !e.EndsAtDeadline() {
		gaveUp = f.ctx.Done()
	}
	for {
		select {
		case <-f.ready:
			f.timer.Stop()
			return true
		case o := <-f.lacking:
			i := f.index(o)
			f.start(&f.ctx, pipes, []int{i}, body(i), true)
			continue
		case <-gaveUp:
		case <-f.timer.C:
		}
		return false
	}
}

// index is o's node: its place in f.ops.
func (f *fan) index(o *op) int {
	for i := range f.ops {
		if &f.ops[i] == o {
			return i
		}
	}
	panic("quorum: an op of no fan")
}

// endsAtDeadline is a context that nothing ends before its deadline
// while its caller waits (the proxy's command context): a fan's wait,
// with its timer at that deadline or before it, needs no Done channel of
// it, which the context would have to start a timer of its own for.
type endsAtDeadline interface {
	EndsAtDeadline() bool
}

// The go-redis node's batch path (Batch) is its pipeline.

func (n *redisNode) Batch() quorum.Batch { return n }
func (n *redisNode) Node() quorum.Node   { return n }

func (n *redisNode) AcquireCall(l quorum.Lock, ttl time.Duration, reveal bool) quorum.Call[quorum.Acquired] {
	return pipeAcquire(l, ttl, reveal)
}
func (n *redisNode) Reveals() bool { return n.reveals.Load() }
func (n *redisNode) ReleaseCall(l quorum.Lock) quorum.Call[[]quorum.Found] {
	return pipeRelease(l, noUntilArg)
}
func (n *redisNode) ExtendCall(l quorum.Lock, ttl time.Duration, mode quorum.ExtendMode, limit time.Duration) quorum.Call[time.Duration] {
	return pipeExtend(l, ttl, mode, limit, noUntilArg)
}
func (n *redisNode) FenceRoundCall(key, token, field string) quorum.Call[quorum.CounterEntry] {
	return pipeFenceRound(key, token, field)
}

// Fan starts c on the pipelines of the nodes in idx from the caller's
// goroutine and waits once, with one wake-up for the fan-out. A node
// that answers NOSCRIPT gets the script's body as soon as its reply
// comes, within the same deadline (fan.wait). A dated c goes to each node
// with its own deadline field, until[i], patched into a copy.
func (n *redisNode) Fan(ctx context.Context, deadline time.Time, batches []quorum.Batch, idx []int, c quorum.Command, until []int64, timed bool, replies []quorum.Reply) bool {
	var mine [8]*pipeline
	pipes := mine[:0]
	for _, b := range batches {
		pipes = append(pipes, b.(*redisNode).p)
	}
	f, _ := fans.Get().(*fan)
	if f == nil || len(f.ops) != len(pipes) {
		f = &fan{ready: make(chan struct{}, 1), lacking: make(chan *op, len(pipes)), ops: make([]op, len(pipes))}
	}
	f.scripted = c.Src != ""
	f.timed = timed
	f.ctx = fanCtx{Context: ctx, deadline: deadline}
	if !c.Dated || !slices.ContainsFunc(until, func(ms int64) bool { return ms != 0 }) {
		until = nil // the field as encoded: no limit
	}
	f.copies(c.Cmd, c.Tail, idx, until)
	nctx := &f.ctx
	var b []byte // built once, for the first node that lacks it
	f.launch(nctx, pipes, idx, c.Cmd)
	all := f.wait(pipes, func(i int) []byte {
		if b == nil {
			b = body(&c)
		}
		if until == nil {
			return b
		}
		own := slices.Clone(b) // rare: a node that lost the script
		putUntil(own, until[i])
		return own
	})
	collect(f, idx, all, nctx, replies)
	if all {
		// Every op finished and its fan was told: nothing touches f now.
		clear(f.ops)
		f.ctx = fanCtx{}
		fans.Put(f)
	}
	return all
}

// copies gives f's ops for the nodes in idx each a copy of cmd with its
// node's deadline field from until (the argument tail bytes of cmd
// follow), in f's buffer; with until nil, none.
func (f *fan) copies(cmd []byte, tail int, idx []int, until []int64) {
	f.perNode = until != nil
	if until == nil {
		return
	}
	n := len(cmd)
	f.buf = slices.Grow(f.buf[:0], n*len(idx))[:n*len(idx)]
	if cap(f.cmds) < len(f.ops) {
		f.cmds = make([][]byte, len(f.ops))
	}
	f.cmds = f.cmds[:len(f.ops)]
	for k, i := range idx {
		own := f.buf[k*n : (k+1)*n : (k+1)*n]
		copy(own, cmd)
		putUntil(own[:n-tail], until[i])
		f.cmds[i] = own
	}
}

// collect reads the replies of f's ops for the nodes in idx into out, as
// pipeline.reply returns them, with the time each came if f is timed; an
// op not finished (all false: the wait ended at ctx's end) gets ctx's
// error.
func collect(f *fan, idx []int, all bool, ctx context.Context, out []quorum.Reply) {
	for _, i := range idx {
		o := &f.ops[i]
		if !all && !o.fin.Load() {
			err := ctx.Err()
			if err == nil {
				// The wait ended at the deadline's timer: an unanswered
				// op is never a reply (a nil one would read as granted).
				err = context.DeadlineExceeded
			}
			out[i] = quorum.Reply{Err: err}
			continue
		}
		out[i] = quorum.Reply{V: o.val, Err: o.err}
		if f.timed {
			out[i].At = o.at
		}
		if o.err != nil {
			continue
		}
		switch e := o.val.(type) {
		case nil:
			out[i].Err = redis.Nil
		case wire.Error:
			out[i].V, out[i].Err = nil, e
		}
	}
}
