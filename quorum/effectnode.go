package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Value is a script's reply as a node gave it, with its RESP type kept:
// status and bulk strings stay apart, as do nil and an empty array.
type Value struct {
	Kind  ValueKind
	Str   string // status, bulk or error text
	Int   int64
	Items []Value // array items
}

// ValueKind is a Value's RESP type.
type ValueKind uint8

const (
	ValueNil ValueKind = iota
	ValueStatus
	ValueBulk
	ValueInt
	ValueError
	ValueArray
)

// equal reports whether two replies are the same.
func (v Value) equal(w Value) bool {
	if v.Kind != w.Kind || v.Str != w.Str || v.Int != w.Int || len(v.Items) != len(w.Items) {
		return false
	}
	for i := range v.Items {
		if !v.Items[i].equal(w.Items[i]) {
			return false
		}
	}
	return true
}

// KeyEffect is what one run of a wrapped script did to one key on one
// node, from the snapshots taken before and after it.
type KeyEffect struct {
	Before, After       string        // the key's type: "none", "string", "hash", "zset", ...
	BeforeTTL, AfterTTL time.Duration // PTTL; negative as Redis reports it
	// BeforeOwn and AfterOwn are the holders (string value, hash field,
	// sorted-set member still valid) that are one of the call's ARGV or
	// KEYS or the script's constants.
	BeforeOwn, AfterOwn []string
	Changed             bool
	// Hold is how long the own holders have left after the run: the key's
	// PTTL, or for a sorted set the earliest own member's expiry.
	Hold time.Duration
}

// nodeEffect is one node's answer to a wrapped script.
type nodeEffect struct {
	refused string // the node rolled the run back, for this reason
	reply   Value
	keys    []KeyEffect
}

// effectNode is a Node that can run wrapped scripts. Only real Redis
// nodes can; the engine treats any other node as failed for them.
type effectNode interface {
	runEffect(ctx context.Context, w *script, keys, args []string) (nodeEffect, error)
	undoEffect(ctx context.Context, keys, tokens []string) error
}

func (n *redisNode) runEffect(ctx context.Context, w *script, keys, args []string) (nodeEffect, error) {
	anyArgs := make([]any, len(args))
	for i, a := range args {
		anyArgs[i] = a
	}
	cmd, err := n.p.eval(ctx, w, keys, anyArgs...)
	if err != nil {
		return nodeEffect{}, err
	}
	return decodeEffect(cmd.Val())
}

func (n *redisNode) undoEffect(ctx context.Context, keys, tokens []string) error {
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	_, err := n.p.eval(ctx, undoEffectScript, keys, args...)
	return err
}

var errEffectReply = errors.New("malformed wrapper reply")

// decodeEffect reads the wrapper's reply (effectlua.go).
func decodeEffect(v any) (nodeEffect, error) {
	top, ok := v.([]any)
	if !ok || len(top) < 2 {
		return nodeEffect{}, fmt.Errorf("%w: %T", errEffectReply, v)
	}
	switch top[0] {
	case "refused":
		why, _ := top[1].(string)
		return nodeEffect{refused: why}, nil
	case "ok":
	default:
		return nodeEffect{}, fmt.Errorf("%w: %v", errEffectReply, top[0])
	}
	reply, err := decodeValue(top[1], 0)
	if err != nil {
		return nodeEffect{}, err
	}
	ne := nodeEffect{reply: reply}
	f := top[2:]
	for len(f) > 0 {
		var k KeyEffect
		var ok bool
		if k.Before, k.BeforeTTL, k.BeforeOwn, f, ok = decodeSnap(f); !ok {
			return nodeEffect{}, errEffectReply
		}
		if k.After, k.AfterTTL, k.AfterOwn, f, ok = decodeSnap(f); !ok || len(f) < 2 {
			return nodeEffect{}, errEffectReply
		}
		k.Changed = millis(f[0]) != 0
		k.Hold = millis(f[1])
		f = f[2:]
		ne.keys = append(ne.keys, k)
	}
	return ne, nil
}

// decodeSnap reads one snapshot's fields from the front of f: type,
// PTTL, n, and n own holders. It returns the rest of f.
func decodeSnap(f []any) (typ string, ttl time.Duration, own []string, rest []any, ok bool) {
	if len(f) < 3 {
		return "", 0, nil, nil, false
	}
	typ, _ = f[0].(string)
	ttl = millis(f[1])
	n, _ := f[2].(int64)
	if n < 0 || int64(len(f)-3) < n {
		return "", 0, nil, nil, false
	}
	own = strs(f[3 : 3+n])
	return typ, ttl, own, f[3+n:], true
}

func decodeValue(v any, depth int) (Value, error) {
	f, ok := v.([]any)
	if !ok || len(f) == 0 || depth > 64 {
		return Value{}, errEffectReply
	}
	tag, _ := f[0].(string)
	switch {
	case tag == "n":
		return Value{Kind: ValueNil}, nil
	case tag == "a":
		out := Value{Kind: ValueArray, Items: make([]Value, 0, len(f)-1)}
		for _, it := range f[1:] {
			iv, err := decodeValue(it, depth+1)
			if err != nil {
				return Value{}, err
			}
			out.Items = append(out.Items, iv)
		}
		return out, nil
	case len(f) != 2:
		return Value{}, errEffectReply
	case tag == "i":
		n, ok := f[1].(int64)
		if !ok {
			return Value{}, errEffectReply
		}
		return Value{Kind: ValueInt, Int: n}, nil
	}
	s, ok := f[1].(string)
	if !ok {
		return Value{}, errEffectReply
	}
	switch tag {
	case "s":
		return Value{Kind: ValueStatus, Str: s}, nil
	case "b":
		return Value{Kind: ValueBulk, Str: s}, nil
	case "e":
		return Value{Kind: ValueError, Str: s}, nil
	}
	return Value{}, errEffectReply
}

func millis(v any) time.Duration {
	n, _ := v.(int64)
	return time.Duration(n) * time.Millisecond
}

func strs(in []any) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if s, ok := s.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
