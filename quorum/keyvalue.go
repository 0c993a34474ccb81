package quorum

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed lua/read_key.lua
var readKeySrc string

var readKeyScript = newScript(readKeySrc)

// KeyValue is a key's whole value as a quorum of nodes agree on it: what an
// operator reads of a lock with HGETALL, ZRANGE or OBJECT ENCODING.
type KeyValue struct {
	Held bool
	// Type is "string", "hash" or "zset".
	Type string
	// Items are a string's value; a hash's fields and values, by field; a
	// sorted set's members and scores, by score. A member's score is the
	// highest that a quorum of the agreeing nodes each reach (the nodes
	// may have scored it by their own clocks).
	Items []string
	// Encoding is OBJECT ENCODING's answer where every agreeing node
	// gives the same one, else "".
	Encoding string
	// Validity is as State's.
	Validity time.Duration
}

// NodeKey is one node's answer to a value read.
type NodeKey struct {
	Type     string // "none" for a missing key
	Items    []string
	TTL      time.Duration // negative: no expiry
	Encoding string
}

// keyReader is a Node that can read a key's whole value (the go-redis
// node).
type keyReader interface {
	ReadKey(ctx context.Context, key string) (NodeKey, error)
}

var errNoKeyRead = errors.New("quorum: node cannot read keys")

// ReadKey reads key's whole value on every node and returns the one a
// quorum agrees on: the same type and the same content (for a sorted set,
// the same members). A key no quorum agrees on is not held. The error, if
// any, matches ErrUnavailable: the failed nodes could have changed the
// answer.
func (e *Engine) ReadKey(ctx context.Context, key string) (KeyValue, error) {
	start := time.Now()
	results := fanOut(ctx, e, func(ctx context.Context, n Node) (NodeKey, error) {
		vr, ok := n.(keyReader)
		if !ok {
			return NodeKey{}, errNoKeyRead
		}
		return vr.ReadKey(ctx, key)
	})
	elapsed := time.Since(start)
	ids := make([]string, len(results))
	votes := map[string]int{}
	best, most := "", 0
	for i, r := range results {
		if r.err == nil && r.v.Type != "none" && e.counts(i) {
			ids[i] = valueID(r.v)
			votes[ids[i]]++
			if votes[ids[i]] > most {
				best, most = ids[i], votes[ids[i]]
			}
		}
	}
	o := Outcome{Total: len(e.nodes)}
	var agreeing []NodeKey
	var ttls []time.Duration
	for i, r := range results {
		switch {
		case r.err != nil:
			o.Failed++
		case r.v.Type != "none" && !e.counts(i):
			o.Quarantined++
		case r.v.Type != "none" && ids[i] == best:
			o.Granted++
			agreeing = append(agreeing, r.v)
			ttls = append(ttls, r.v.TTL)
		default:
			o.Denied++
		}
	}
	if err := verdict(o, e.quorum, failures(results)); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return KeyValue{}, err
		}
		return KeyValue{}, nil
	}
	v := KeyValue{Held: true, Type: agreeing[0].Type, Items: agreeing[0].Items, Encoding: agreeing[0].Encoding, Validity: -1}
	for _, a := range agreeing[1:] {
		if a.Encoding != v.Encoding {
			v.Encoding = ""
		}
	}
	if v.Type == "zset" {
		v.Items = quorumScores(agreeing, e.quorum)
	}
	if ttl, _ := quorumTTL(ttls, e.quorum); ttl >= 0 {
		v.Validity = validity(ttl, elapsed, e.cfg.DriftFactor)
		if v.Validity <= 0 {
			return KeyValue{}, nil
		}
	}
	return v, nil
}

// valueID is what nodes must agree on: the type and the content, for a
// sorted set its members only.
func valueID(v NodeKey) string {
	items := v.Items
	switch v.Type {
	case "hash":
		items = sortedPairs(items)
	case "zset":
		var members []string
		for i := 0; i+1 < len(items); i += 2 {
			members = append(members, items[i])
		}
		slices.Sort(members)
		items = members
	}
	var b strings.Builder
	b.WriteString(v.Type)
	for _, it := range items {
		fmt.Fprintf(&b, ";%d:%s", len(it), it)
	}
	return b.String()
}

// sortedPairs returns field, value pairs sorted by field.
func sortedPairs(items []string) []string {
	type pair struct{ k, v string }
	ps := make([]pair, 0, len(items)/2)
	for i := 0; i+1 < len(items); i += 2 {
		ps = append(ps, pair{items[i], items[i+1]})
	}
	slices.SortFunc(ps, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	out := make([]string, 0, len(items))
	for _, p := range ps {
		out = append(out, p.k, p.v)
	}
	return out
}

// quorumScores returns the agreeing sorted sets' members, each with the
// highest score that q of them reach, ordered by score then member as
// ZRANGE orders them.
func quorumScores(agreeing []NodeKey, q int) []string {
	type member struct {
		name  string
		score float64
		text  string
	}
	scores := map[string][]member{}
	for _, a := range agreeing {
		for i := 0; i+1 < len(a.Items); i += 2 {
			f, _ := strconv.ParseFloat(a.Items[i+1], 64)
			scores[a.Items[i]] = append(scores[a.Items[i]], member{a.Items[i], f, a.Items[i+1]})
		}
	}
	var ms []member
	for _, s := range scores {
		slices.SortFunc(s, func(a, b member) int { return -cmpFloat(a.score, b.score) })
		ms = append(ms, s[min(q, len(s))-1])
	}
	slices.SortFunc(ms, func(a, b member) int {
		if c := cmpFloat(a.score, b.score); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, 2*len(ms))
	for _, m := range ms {
		out = append(out, m.name, m.text)
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReadKey runs read_key.lua.
func (n *redisNode) ReadKey(ctx context.Context, key string) (NodeKey, error) {
	cmd, err := n.p.eval(ctx, readKeyScript, []string{key})
	if err != nil {
		return NodeKey{}, err
	}
	vals, err := cmd.Slice()
	if err != nil {
		return NodeKey{}, err
	}
	return nodeKeyResult(vals)
}

// nodeKeyResult decodes read_key.lua's {type, items, pttl, encoding}.
func nodeKeyResult(vals []any) (NodeKey, error) {
	if len(vals) != 4 {
		return NodeKey{}, fmt.Errorf("read_key replied %d values", len(vals))
	}
	typ, ok1 := vals[0].(string)
	raw, ok2 := vals[1].([]any)
	pttl, ok3 := vals[2].(int64)
	enc, ok4 := vals[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return NodeKey{}, fmt.Errorf("read_key replied %T %T %T %T", vals[0], vals[1], vals[2], vals[3])
	}
	v := NodeKey{Type: typ, TTL: time.Duration(pttl) * time.Millisecond, Encoding: enc, Items: make([]string, len(raw))}
	for i, it := range raw {
		s, ok := it.(string)
		if !ok {
			return NodeKey{}, fmt.Errorf("read_key replied item %T", it)
		}
		v.Items[i] = s
	}
	return v, nil
}
