package quorum

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
)

// pipeOf is the pipeline of a go-redis node, nil for any other Node
// (a test's fake, or a wrapper of a node, whose methods must run). On
// pipelines a fan-out starts the lock operations on every node from the
// caller's goroutine and waits once, with no goroutine per node and one
// wake-up per fan-out.
func pipeOf(n Node) *pipeline {
	if rn, ok := n.(*redisNode); ok {
		return rn.p
	}
	return nil
}

// pipeCall is one lock operation as a pipeline runs it: its command, the
// script whose body to send instead where the node lacks it (cmd is then
// an EVALSHA of it), and how the reply becomes the node's answer. The
// same call goes to every node, encoded once.
type pipeCall[T any] struct {
	cmd []byte
	// s, keys and args make the EVAL form for a node that answered
	// NOSCRIPT; s is nil if cmd runs no script.
	s      *script
	keys   []string
	args   []any
	result func(v any, err error) (T, error)
}

// scriptCall is the EVALSHA of s with keys and args, its reply turned
// into the answer by result.
func scriptCall[T any](s *script, keys []string, args []any, result func(any, error) (T, error)) pipeCall[T] {
	return pipeCall[T]{cmd: appendScript(nil, "evalsha", s.sha, keys, args), s: s, keys: keys, args: args, result: result}
}

// body is c's EVAL form.
func (c pipeCall[T]) body() []byte { return appendScript(nil, "eval", c.s.src, c.keys, c.args) }

// noScript reports whether err, the reply to c, asks for its body.
func (c pipeCall[T]) noScript(err error) bool {
	return c.s != nil && err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// run sends c on p alone and waits for its answer.
func (c pipeCall[T]) run(ctx context.Context, p *pipeline) (T, error) {
	v, err := p.reply(ctx, c.cmd)
	if c.noScript(err) && ctx.Err() == nil {
		v, err = p.reply(ctx, c.body())
	}
	return c.result(v, err)
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
// the script (a restart, SCRIPT FLUSH).
func isNoScript(v any) bool {
	e, ok := v.(wire.Error)
	return ok && strings.HasPrefix(string(e), "NOSCRIPT")
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
func (f *fan) wait(pipes []*pipeline, body func() []byte) bool {
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
			f.start(&f.ctx, pipes, []int{i}, body(), true)
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

// fanOutCall is fanOut of c: on nodes that have a pipeline, c starts on
// every node at once from the caller's goroutine, which waits once for
// all; each is the same operation for other nodes (fakes), and runs as
// fanOut runs it. Each node gets the same deadline, breaker, observer
// and trace as under fanOut.
func fanOutCall[T any](ctx context.Context, e *Engine, c pipeCall[T], each func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	return fanOutCallOn(ctx, e, c, nil, each)
}

// fanOutCallOn is fanOutCall on the nodes i where ask[i] (every node if
// ask is nil); the others' results are errNotAsked, noted nowhere.
func fanOutCallOn[T any](ctx context.Context, e *Engine, c pipeCall[T], ask []bool, each func(ctx context.Context, i int, n Node) (T, error)) []result[T] {
	var mine [8]*pipeline
	pipes := mine[:0]
	for _, n := range e.nodes {
		p := pipeOf(n)
		if p == nil {
			return fanOutOn(ctx, e, e.cfg.NodeTimeout, e.monitored.Load(), e.cfg.Observer, ask, each)
		}
		pipes = append(pipes, p)
	}
	monitored, obs := e.monitored.Load(), e.cfg.Observer
	results := make([]result[T], len(e.nodes))
	tr := traceOf(ctx) // nil unless the proxy traces this command
	start := time.Now()
	f, _ := fans.Get().(*fan)
	if f == nil || len(f.ops) != len(e.nodes) {
		f = &fan{ready: make(chan struct{}, 1), lacking: make(chan *op, len(e.nodes)), ops: make([]op, len(e.nodes))}
	}
	f.scripted = c.s != nil
	f.timed = obs != nil || tr != nil
	// One deadline for every node, as fanOut's.
	f.ctx = fanCtx{Context: ctx, deadline: start.Add(e.cfg.NodeTimeout)}
	if d, ok := ctx.Deadline(); ok && d.Before(f.ctx.deadline) {
		f.ctx.deadline = d
	}
	nctx := &f.ctx
	var idxs [8]int
	idx := idxs[:0] // the nodes called
	for i, n := range e.nodes {
		if ask != nil && !ask[i] {
			results[i] = result[T]{err: errNotAsked}
			continue
		}
		if monitored && e.health[i].down.Load() {
			results[i] = result[T]{err: skipDown(i, n, obs, tr)}
			continue
		}
		idx = append(idx, i)
	}
	var replyArr [8]reply
	replies := replyArr[:0]
	if len(e.nodes) > len(replyArr) {
		replies = make([]reply, len(e.nodes))
	}
	replies = replies[:len(e.nodes)]
	all := true
	if len(idx) > 0 {
		var body []byte // built once, for the first node that lacks it
		f.launch(nctx, pipes, idx, c.cmd)
		all = f.wait(pipes, func() []byte {
			if body == nil {
				body = c.body()
			}
			return body
		})
		collect(f, idx, all, nctx, replies)
	}
	for _, i := range idx {
		n := e.nodes[i]
		v, err := c.result(replies[i].v, replies[i].err)
		if obs != nil || tr != nil {
			took := time.Since(start) // an op not finished
			if o := &f.ops[i]; (all || o.fin.Load()) && !o.at.IsZero() {
				took = o.at.Sub(start)
			}
			if obs != nil {
				obs.NodeDone(i, n.Addr(), took, err)
			}
			if tr != nil {
				tr.note(i, took, v, err)
			}
		}
		if monitored {
			e.noteResult(ctx, i, start, err)
		}
		if err != nil {
			err = &NodeError{Node: i, Addr: n.Addr(), Err: err}
		}
		results[i] = result[T]{v: v, err: err}
	}
	if all {
		// Every op finished and its fan was told: nothing touches f now.
		clear(f.ops)
		f.ctx = fanCtx{}
		fans.Put(f)
	}
	return results
}

// reply is one node's reply as pipeline.reply returns it.
type reply struct {
	v   any
	err error
}

// collect reads the replies of f's ops for the nodes in idx into out, as
// pipeline.reply returns them; an op not finished (all false: the wait
// ended at ctx's end) gets ctx's error.
func collect(f *fan, idx []int, all bool, ctx context.Context, out []reply) {
	for _, i := range idx {
		o := &f.ops[i]
		if !all && !o.fin.Load() {
			err := ctx.Err()
			if err == nil {
				// The wait ended at the deadline's timer: an unanswered
				// op is never a reply (a nil one would read as granted).
				err = context.DeadlineExceeded
			}
			out[i] = reply{err: err}
			continue
		}
		out[i] = reply{v: o.val, err: o.err}
		if o.err != nil {
			continue
		}
		switch e := o.val.(type) {
		case nil:
			out[i].err = redis.Nil
		case wire.Error:
			out[i] = reply{err: e}
		}
	}
}
