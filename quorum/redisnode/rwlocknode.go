package redisnode

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The read lock's scripts (rwlock.go), one atomic step each on a node.
var (
	rwTakeScript        = luaScript("", "rwlock_take")
	rwUndoScript        = luaScript("", "rwlock_undo")
	rwUnlockScript      = luaScript("", "rwlock_unlock")
	rwForceScript       = luaScript("", "rwlock_force")
	rwRenewScript       = luaScript(lateCheck, "rwlock_renew")
	rwPublishScript     = luaScript("", "rwlock_publish")
	rwRenewLockScript   = luaScript(lateCheck, "rwlock_renewlock")
	rwWriteUnlockScript = luaScript("", "rwlock_wunlock")
)

func (n *redisNode) TakeRead(ctx context.Context, l quorum.ReadLock, ttl time.Duration, nonce string) (quorum.ReadTake, error) {
	cmd, err := n.p.eval(ctx, rwTakeScript, []string{l.Key, l.TimeoutPrefix}, ttl.Milliseconds(), l.Name, l.WriteName, nonce)
	if err != nil {
		return quorum.ReadTake{}, err
	}
	vals, err := cmd.Int64Slice()
	if err != nil || len(vals) != 2 {
		return quorum.ReadTake{}, fmt.Errorf("read lock take replied %v, %v", vals, err)
	}
	if vals[0] == 1 {
		return quorum.ReadTake{Granted: true, Prior: int(vals[1]) - 1}, nil
	}
	return quorum.ReadTake{PTTL: time.Duration(vals[1]) * time.Millisecond}, nil
}

func (n *redisNode) UndoRead(ctx context.Context, l quorum.ReadLock, nonce string) error {
	_, err := n.p.evalBody(ctx, rwUndoScript, []string{l.Key, l.TimeoutPrefix}, l.Name, nonce)
	return err
}

func (n *redisNode) UnlockRead(ctx context.Context, u quorum.ReadUnlock) (quorum.ReadRelease, error) {
	return evalSlice(ctx, n.p, readReleaseResult, rwUnlockScript, []string{u.Key, u.Channel, u.TimeoutPrefix, u.KeyPrefix, u.Latch},
		u.Message, u.Name, u.Publish, u.LatchPX)
}

// readReleaseResult decodes rwlock_unlock.lua's reply.
func readReleaseResult(vals []any) (quorum.ReadRelease, error) {
	if len(vals) != 2 {
		return quorum.ReadRelease{}, fmt.Errorf("read lock unlock replied %v", vals)
	}
	kind, ok := vals[0].(int64)
	switch {
	case !ok:
	case kind == 0:
		return quorum.ReadRelease{Latched: true, Latch: latchValue(vals[1])}, nil
	case kind == 1 || kind == 2:
		free, _ := vals[1].(int64)
		return quorum.ReadRelease{Held: kind == 2, Free: free == 1}, nil
	}
	return quorum.ReadRelease{}, fmt.Errorf("read lock unlock replied %v", vals)
}

func (n *redisNode) UnlockWrite(ctx context.Context, u quorum.WriteUnlock) (quorum.WriteRelease, error) {
	return evalSlice(ctx, n.p, writeReleaseResult, rwWriteUnlockScript, []string{u.Key, u.Channel, u.Latch},
		u.Message, u.Lease, u.Name, u.Publish, u.LatchPX)
}

// latchValue is an unlock's answer where a latch stood in its way:
// Redisson answers tonumber(latch), nil when it is not a number.
func latchValue(v any) quorum.Value {
	s, _ := v.(string)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return quorum.Value{Kind: quorum.ValueInt, Int: n}
	}
	return quorum.Value{}
}

// writeReleaseResult decodes rwlock_wunlock.lua's reply.
func writeReleaseResult(vals []any) (quorum.WriteRelease, error) {
	if len(vals) == 2 {
		kind, _ := vals[0].(int64)
		flag, _ := vals[1].(int64)
		switch {
		case kind == 0:
			return quorum.WriteRelease{Latched: true, Latch: latchValue(vals[1])}, nil
		case kind >= 1 && kind <= 3:
			return quorum.WriteRelease{Outcome: uint8(kind), Flag: flag == 1}, nil
		}
	}
	return quorum.WriteRelease{}, fmt.Errorf("write lock unlock replied %v", vals)
}

func (n *redisNode) ForceUnlock(ctx context.Context, key, mode string) (int64, error) {
	cmd, err := n.p.eval(ctx, rwForceScript, []string{key}, mode)
	if err != nil {
		return 0, err
	}
	return cmd.Int64()
}

func (n *redisNode) RenewRead(ctx context.Context, keys, args []string, until int64) ([]int64, error) {
	return n.renew(ctx, rwRenewScript, keys, args, until)
}

func (n *redisNode) RenewLocks(ctx context.Context, keys, args []string, until int64) ([]int64, error) {
	return n.renew(ctx, rwRenewLockScript, keys, args, until)
}

// renew runs a watchdog renewal script: one 1 or 0 per lock. Its last
// ARGV is its deadline (lateCheck).
func (n *redisNode) renew(ctx context.Context, s *script, keys, args []string, until int64) ([]int64, error) {
	a := make([]any, len(args), len(args)+1)
	for i, s := range args {
		a[i] = s
	}
	a = append(a, untilArg(until))
	cmd, err := n.p.eval(ctx, s, keys, a...)
	if err != nil {
		return nil, err
	}
	return cmd.Int64Slice()
}

func (n *redisNode) Publish(ctx context.Context, cmd, channel, message string, until int64) error {
	_, err := n.lp.eval(ctx, rwPublishScript, []string{channel}, cmd, message, until)
	return err
}
