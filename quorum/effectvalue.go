package quorum

import (
	"context"
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
	// RESP3's types a script's table gives (Redis 7): the double's text,
	// the big number's digits, the verbatim string as "fmt:text" (fmt
	// three bytes, as Redis writes it); a map's items are its keys and
	// values in turn, a set's its members.
	ValueDouble
	ValueBigNumber
	ValueVerbatim
	ValueMap
	ValueSet
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
// node: proved by the wrapper's fast path, or judged from the snapshots
// taken before and after it.
type KeyEffect struct {
	// BeforeOwn and AfterOwn are the holders (string value, hash field,
	// sorted-set member still valid: the wrapper's hold table) that are
	// one of the call's ARGV or KEYS. A constant of the script is never
	// own. A key the run neither wrote nor read has none reported.
	BeforeOwn, AfterOwn []string
	Changed             bool
	// Hold is how long the own holders have left after the run: the key's
	// PTTL, or for a sorted set the earliest own member's expiry.
	Hold time.Duration
	// Others counts the holders of other tokens, still valid, that the
	// key had both before and after the run (other hash fields, other
	// sorted-set members): a key several tokens hold is decided by every
	// node (decideEffect). Zero where the wrapper does not report it.
	Others int
	// Markers are the markers (an entry that is a constant of the script,
	// no one's hold, such as Symfony's "__write__" member) that the run
	// added to a key no own holder held before: what an undo of the take
	// removes beside AfterOwn. None for a string key.
	Markers []Marker
}

// Marker is a hash field or sorted-set member a run wrote as a marker,
// with the value it gave it (a field's value, a member's score as Redis
// prints it).
type Marker struct{ Entry, Value string }

// NodeEffect is one node's answer to a wrapped script.
type NodeEffect struct {
	Refused string // the node rolled the run back, for this reason
	Reply   Value
	// LuaError is true when reply is a Lua error the body raised as text:
	// it starts with the line of the wrapped form that ran (bodyLines).
	LuaError bool
	Keys     []KeyEffect
}

// effectNode is the part of Node that runs wrapped scripts.
type effectNode interface {
	RunEffect(ctx context.Context, eff *Effect, c EffectCall, out []KeyEffect) (NodeEffect, error)
	// UndoEffect takes until as Node.Release does: past it, on the
	// node's clock, it does nothing.
	UndoEffect(ctx context.Context, key string, u KeyUndo, until int64) error
	// FlushEffects drops the wrapper's libraries and scripts; a node
	// with none answers errUnsupported.
	FlushEffects(ctx context.Context) error
}

// EffectCall is one run's keys and arguments, made once for every node:
// fcall is the call of the wrapper's function, encoded (fcallCommand),
// and out has room for each node's key effects (node i's from
// i*len(keys)). Tag (internal/pubid) starts each message the run
// publishes, the same on every node, so that the hubs count the copies
// of one publish by it; the wrapper gets it after Args ("": untagged).
// Until is the run's deadline field on its node (late.go; 0: no limit),
// which the wrapper gets after Tag; FCall's is 0, patched per node by
// the batch.
type EffectCall struct {
	Keys, Args []string
	Tag        string
	Until      int64
	FCall      []byte
	Out        []KeyEffect
}

func newEffectCall(keys, args []string, nodes int) EffectCall {
	return EffectCall{Keys: keys, Args: args, Out: make([]KeyEffect, nodes*len(keys))}
}

// OutFor is node i's room for its key effects: empty, and capped so that
// appending past it never reaches another node's.
func (c EffectCall) OutFor(i int) []KeyEffect {
	n := len(c.Keys)
	if i < 0 || (i+1)*n > len(c.Out) {
		return nil
	}
	return c.Out[i*n : i*n : (i+1)*n]
}

// KeysArgs are the call's keys, then its args, its tag and its deadline
// field, as go-redis command arguments: for the script form and the
// retries (pipescript.go).
func (c EffectCall) KeysArgs() []any {
	out := make([]any, 0, len(c.Keys)+len(c.Args)+2)
	for _, k := range c.Keys {
		out = append(out, k)
	}
	for _, a := range c.Args {
		out = append(out, a)
	}
	return append(out, c.Tag, c.Until)
}
