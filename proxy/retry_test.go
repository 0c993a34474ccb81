package proxy

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// retryEngine answers a command's first try split undecided after
// firstTook, and its retry with a grant whose validity, counted from the
// retry's own start, is validity.
type retryEngine struct {
	fakeEngine
	firstTook, validity time.Duration
	tries               atomic.Int64
	released            atomic.Int64
}

// splitErr is the first try's error: the nodes that answered split, one
// failed.
var splitErr = &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Granted: 1, Denied: 1, Failed: 1}, Unavailable: true}

// lease is the retry's grant, begun now.
func (e *retryEngine) lease() quorum.Lease {
	start := time.Now()
	return quorum.Lease{Validity: e.validity, Expires: start.Add(e.validity), Start: start, Granted: 2}
}

func (e *retryEngine) Acquire(context.Context, quorum.Lock, time.Duration) (quorum.Lease, error) {
	if e.tries.Add(1) == 1 {
		time.Sleep(e.firstTook)
		return quorum.Lease{}, splitErr
	}
	return e.lease(), nil
}

func (e *retryEngine) Release(context.Context, quorum.Lock) (quorum.Released, error) {
	e.released.Add(1)
	return quorum.Released{}, nil
}

func (e *retryEngine) UndoAcquire(context.Context, quorum.Lock, quorum.Lease) { e.released.Add(1) }

func (e *retryEngine) RunEffect(context.Context, *quorum.Effect, []string, []string) (quorum.EffectResult, error) {
	if e.tries.Add(1) == 1 {
		time.Sleep(e.firstTook)
		return quorum.EffectResult{Retry: true}, splitErr
	}
	return quorum.EffectResult{Op: quorum.EffectHold, Granted: true, Took: true, NewLock: true,
		Reply: quorum.Value{Kind: quorum.ValueInt, Int: 1}, Lease: e.lease()}, nil
}

func (e *retryEngine) UndoEffect(context.Context, quorum.EffectResult) { e.released.Add(1) }

// A grant that came only on a retry, after the first try took longer than
// its validity, is late: the client's validity counts from its send,
// before the first try. It is given back and denied, never OK (the fault
// suite saw such an OK arrive after the client's validity had ended).
func TestRetryCountsValidityFromTheFirstTry(t *testing.T) {
	for _, tt := range []struct {
		name string
		cmd  []string
	}{
		{"SET", []string{"SET", "k", "t", "NX", "PX", "5000"}},
		{"by its effect", []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'px', 5000); redis.call('set', KEYS[2], ARGV[1], 'px', 5000); return 1", "2", "k", "l", "t"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The retry starts 250ms after the first: its own validity,
			// 150ms, would still run at the reply; counted from the first
			// try it ran out 100ms before.
			e := &retryEngine{firstTook: 200 * time.Millisecond, validity: 150 * time.Millisecond}
			rc := dial(t, serveFake(t, e, Config{}))
			got := rc.do(t, tt.cmd...)
			if n := e.tries.Load(); n != 2 {
				t.Fatalf("%q: %d tries; want 2 (the test's engine is not reached as meant)", tt.cmd, n)
			}
			if got == "+OK\r\n" || got == ":1\r\n" {
				t.Errorf("%q after a retry whose grant ran out counted from the first try = %q; want it denied", tt.cmd, got)
			}
			if n := e.released.Load(); n != 1 {
				t.Errorf("%q: the late grant was given back %d times; want 1", tt.cmd, n)
			}
		})
	}
}
