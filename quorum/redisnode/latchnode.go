package redisnode

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The latch's scripts (latch.go), one atomic step each on a node.
var (
	latchSetScript   = luaScript("", "latch_voted", "latch_set")
	latchUndoScript  = luaScript("", "latch_undo")
	latchDecrScript  = luaScript("", "latch_decr")
	latchClaimScript = luaScript("", "latch_voted", "latch_claim")
	latchDelScript   = luaScript("", "latch_voted", "latch_del")
	latchResetScript = luaScript("", "latch_voted", "latch_reset")
)

func (n *redisNode) latchRun(ctx context.Context, s *script, args ...any) (quorum.LatchAnswer, error) {
	return evalSlice(ctx, n.lp, latchAnswerResult, s, []string{quorum.CountersKey}, args...)
}

// latchAnswerResult decodes a latch script's {state, value[, nonce[,
// bare]]}.
func latchAnswerResult(vals []any) (quorum.LatchAnswer, error) {
	if len(vals) < 2 || len(vals) > 4 {
		return quorum.LatchAnswer{}, fmt.Errorf("latch script replied %v", vals)
	}
	state, ok := vals[0].(int64)
	if !ok {
		return quorum.LatchAnswer{}, fmt.Errorf("latch script replied %v", vals)
	}
	a := quorum.LatchAnswer{State: quorum.CounterState(state)}
	var bare int64
	for i, p := range []*int64{&a.Value, &a.Nonce, &bare}[:len(vals)-1] {
		switch x := vals[i+1].(type) {
		case int64:
			*p = x
		case string:
			v, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return quorum.LatchAnswer{}, fmt.Errorf("latch script replied %v: %w", vals, err)
			}
			*p = v
		default:
			return quorum.LatchAnswer{}, fmt.Errorf("latch script replied %v", vals)
		}
	}
	a.Bare = bare == 1
	return a, nil
}

func (n *redisNode) LatchSet(ctx context.Context, name string, count, nonce int64) (quorum.LatchAnswer, error) {
	return n.latchRun(ctx, latchSetScript, name, count, nonce)
}

func (n *redisNode) LatchUndo(ctx context.Context, name string, nonce int64, bare bool) error {
	found := "0"
	if bare {
		found = "1"
	}
	_, err := n.lp.evalBody(ctx, latchUndoScript, []string{quorum.CountersKey}, name, nonce, found)
	return err
}

func (n *redisNode) LatchReset(ctx context.Context, name string, count, nonce, old int64) error {
	_, err := n.lp.evalBody(ctx, latchResetScript, []string{quorum.CountersKey}, name, count, nonce, old)
	return err
}

func (n *redisNode) LatchDecrement(ctx context.Context, name string, nonce int64) (quorum.LatchDecremented, error) {
	cmd, err := n.lp.eval(ctx, latchDecrScript, []string{quorum.CountersKey}, name, nonce)
	if err != nil {
		return quorum.LatchDecremented{}, err
	}
	vals, err := cmd.Int64Slice()
	if err != nil || len(vals) != 3 {
		return quorum.LatchDecremented{}, fmt.Errorf("latch countDown replied %v, %v", vals, err)
	}
	return quorum.LatchDecremented{State: quorum.CounterState(vals[0]), Old: vals[1], New: vals[2]}, nil
}

func (n *redisNode) LatchClaim(ctx context.Context, name string, claim, nonce, ballot int64) (quorum.LatchAnswer, error) {
	return n.latchRun(ctx, latchClaimScript, name, claim, nonce, ballot)
}

func (n *redisNode) LatchDelete(ctx context.Context, name string) (quorum.LatchAnswer, error) {
	return n.latchRun(ctx, latchDelScript, name)
}
