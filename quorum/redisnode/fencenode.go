package redisnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The counters' scripts (fence.go), one atomic step each on a node. The
// three that ask whether a key holds a token begin with the one rule.
var (
	counterReadScript  = luaScript("", "counter_holds", "counter_read")
	counterFenceScript = luaScript("", "counter_holds", "counter_fence")
	counterWriteScript = luaScript(lateCheck, "counter_holds", "counter_write")
	counterMarkScript  = luaScript("", "counter_mark")
	counterSeedScript  = luaScript("", "counter_seed")
	counterNameScript  = luaScript("", "counter_name")
)

// counterKeys are a counter script's KEYS: the hash, and for a FENCE the
// lock key and its hold record.
func counterKeys(key string) []string {
	if key == "" {
		return []string{quorum.CountersKey}
	}
	return []string{quorum.CountersKey, key, quorum.HoldPrefix + key}
}

func (n *redisNode) ReadCounter(ctx context.Context, key, token, field string) (quorum.CounterEntry, error) {
	return evalSlice(ctx, n.p, readCounterResult, counterReadScript, counterKeys(key), field, token)
}

// readCounterResult decodes counter_read.lua's reply.
func readCounterResult(vals []any) (quorum.CounterEntry, error) { return counterEntryResult(vals, 9) }

func (n *redisNode) FenceRound(ctx context.Context, key, token, field string) (quorum.CounterEntry, error) {
	return runCall(ctx, n.p, pipeFenceRound(key, token, field))
}

// pipeFenceRound is FenceRound as the pipeline runs it (fanpipe.go): one
// encoding for every node, and no goroutine per node. The script names
// the hash and the record itself, and FENCE's field unless told another.
func pipeFenceRound(key, token, field string) quorum.Call[quorum.CounterEntry] {
	args := []any{token}
	if field != quorum.FenceField {
		args = append(args, field)
	}
	return scriptCall(counterFenceScript, []string{key}, args, func(v any, err error) (quorum.CounterEntry, error) {
		if err != nil {
			return quorum.CounterEntry{}, err
		}
		switch v := v.(type) {
		case string:
			return tookResult(v)
		case []any:
			return counterEntryResult(v, 10)
		}
		return quorum.CounterEntry{}, fmt.Errorf("counter read replied %T", v)
	})
}

// tookResult decodes counter_fence.lua's short replies from a seeded
// node where the key holds the token: "T pttl", it took T and recorded
// it; "T pttl C", it found this token's record T, its counter C.
func tookResult(s string) (quorum.CounterEntry, error) {
	ts, rest, ok1 := strings.Cut(s, " ")
	ps, cs, found := strings.Cut(rest, " ")
	t, err1 := strconv.ParseInt(ts, 10, 64)
	pttl, err2 := strconv.ParseInt(ps, 10, 64)
	c, err3 := t, error(nil)
	if found {
		c, err3 = strconv.ParseInt(cs, 10, 64)
	}
	if !ok1 || err1 != nil || err2 != nil || err3 != nil || t <= 0 || pttl <= 0 || c <= 0 {
		return quorum.CounterEntry{}, fmt.Errorf("counter fence replied %q", s)
	}
	en := quorum.CounterEntry{State: quorum.CounterSeeded, Value: c, Held: true, TTL: time.Duration(pttl) * time.Millisecond, Answer: t}
	if found {
		en.Hold = t
	}
	return en, nil
}

// counterEntryResult decodes the reply of counter_read.lua (want 9
// values) or counter_fence.lua (10, the eighth its answer): integers,
// then the pending node's id and the seeded node's gen.
func counterEntryResult(vals []any, want int) (quorum.CounterEntry, error) {
	if len(vals) != want {
		return quorum.CounterEntry{}, fmt.Errorf("counter read replied %d values", len(vals))
	}
	id, ok1 := vals[want-2].(string)
	gen, ok2 := vals[want-1].(string)
	if !ok1 || !ok2 {
		return quorum.CounterEntry{}, fmt.Errorf("counter read replied id %v, gen %v", vals[want-2], vals[want-1])
	}
	var ints [8]int64
	for i, v := range vals[:want-2] {
		switch v := v.(type) {
		case int64:
			ints[i] = v
		case string:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return quorum.CounterEntry{}, fmt.Errorf("counter read replied %q: %w", v, err)
			}
			ints[i] = n
		default:
			return quorum.CounterEntry{}, fmt.Errorf("counter read replied %T", v)
		}
	}
	if ints[0] < int64(quorum.CounterMissing) || ints[0] > int64(quorum.CounterSeeded) {
		return quorum.CounterEntry{}, fmt.Errorf("counter read replied state %d", ints[0])
	}
	return quorum.CounterEntry{
		State: quorum.CounterState(ints[0]), Value: ints[1], Virgin: ints[2] == 1, Now: ints[3],
		Held: ints[4] == 1, TTL: time.Duration(ints[5]) * time.Millisecond, Hold: ints[6], Answer: ints[7],
		ID: id, Gen: gen,
	}, nil
}

func (n *redisNode) WriteCounter(ctx context.Context, key, token, field string, v int64, exclusive bool, until int64) (quorum.CounterWrite, error) {
	return runCall(ctx, n.p, pipeWriteCounter(key, token, field, v, exclusive, untilArg(until)))
}

// pipeWriteCounter is WriteCounter as the pipeline runs it (fanpipe.go).
func pipeWriteCounter(key, token, field string, v int64, exclusive bool, until string) quorum.Call[quorum.CounterWrite] {
	ex := "0"
	if exclusive {
		ex = "1"
	}
	args := []any{field, strconv.FormatInt(v, 10), ex, token, until}
	return scriptCall(counterWriteScript, counterKeys(key), args, func(r any, err error) (quorum.CounterWrite, error) {
		if err != nil {
			return 0, err
		}
		w, ok := r.(int64)
		if !ok {
			return 0, fmt.Errorf("counter write replied %T", r)
		}
		switch quorum.CounterWrite(w) {
		case quorum.CounterWritten, quorum.CounterUnseeded, quorum.CounterContended, quorum.CounterNotHeld:
			return quorum.CounterWrite(w), nil
		}
		return 0, fmt.Errorf("counter write replied %d", w)
	})
}

func (n *redisNode) MarkCounters(ctx context.Context, id string) (quorum.CounterEntry, error) {
	return evalSlice(ctx, n.lp, markResult, counterMarkScript, []string{quorum.CountersKey}, id)
}

// markResult decodes counter_mark.lua's {state, mark}.
func markResult(vals []any) (quorum.CounterEntry, error) {
	if len(vals) != 2 {
		return quorum.CounterEntry{}, fmt.Errorf("counter mark replied %d values", len(vals))
	}
	state, ok1 := vals[0].(int64)
	mark, ok2 := vals[1].(string)
	v, err := strconv.ParseInt(mark, 10, 64)
	if !ok1 || !ok2 || err != nil {
		return quorum.CounterEntry{}, fmt.Errorf("counter mark replied %v", vals)
	}
	return quorum.CounterEntry{State: quorum.CounterState(state), Value: v}, nil
}

func (n *redisNode) Counters(ctx context.Context) (map[string]int64, error) {
	m, err := n.c.HGetAll(ctx, quorum.CountersKey).Result()
	if err != nil {
		return nil, err
	}
	return countersResult(m)
}

// countersResult turns a counters' hash into its counters; nil if the
// hash is not seeded. A new deployment's gen is no counter.
func countersResult(m map[string]string) (map[string]int64, error) {
	if m["seeded"] != "1" {
		return nil, nil
	}
	out := make(map[string]int64, len(m))
	for f, s := range m {
		if f == "seeded" || f == "gen" {
			continue
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("counter %q is %q: %w", f, s, err)
		}
		out[f] = v
	}
	return out, nil
}

func (n *redisNode) NameCounters(ctx context.Context, mark int64, gen string) (bool, error) {
	cmd, err := n.lp.eval(ctx, counterNameScript, []string{quorum.CountersKey}, strconv.FormatInt(mark, 10), gen)
	if err != nil {
		return false, err
	}
	v, err := cmd.Int64()
	return v == 1, err
}

func (n *redisNode) SeedCounters(ctx context.Context, mark int64, gen string, fields map[string]int64) (bool, error) {
	args := []any{strconv.FormatInt(mark, 10), gen}
	for f, v := range fields {
		args = append(args, f, strconv.FormatInt(v, 10))
	}
	cmd, err := n.lp.eval(ctx, counterSeedScript, []string{quorum.CountersKey}, args...)
	if err != nil {
		return false, err
	}
	v, err := cmd.Int64()
	return v == 1, err
}
