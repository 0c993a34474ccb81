package quorum

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

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

// keyReader is the part of Node that reads a key's whole value.
type keyReader interface {
	ReadKey(ctx context.Context, key string) (NodeKey, error)
}

// ReadKey reads key's whole value on every node and returns the one a
// quorum agrees on: a string's value; for a hash or a sorted set, the
// type, and each entry (a field with its value, a member) that a quorum
// of those nodes has: the holders of a semaphore or a read lock may each
// hold it on a different quorum. A key no quorum agrees on is not held.
// The error, if any, matches ErrUnavailable: the failed nodes could have
// changed the answer.
func (e *Engine) ReadKey(ctx context.Context, key string) (KeyValue, error) {
	start := time.Now()
	results := fanOut(ctx, e, func(ctx context.Context, _ int, n Node) (NodeKey, error) {
		return n.ReadKey(ctx, key)
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
		case !e.counts(i): // present or not, unknown (inspect)
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
	switch v.Type {
	case "hash":
		v.Items = quorumPairs(agreeing, e.quorum)
	case "zset":
		v.Items = quorumScores(agreeing, e.quorum)
	}
	if undecided(agreeing, v.Type, e.quorum, o.Failed+o.Quarantined) {
		return KeyValue{}, &OutcomeError{Outcome: o, Unavailable: true, Failures: failures(results)}
	}
	if ttl, _ := quorumTTL(ttls, e.quorum); ttl >= 0 {
		v.Validity = validity(ttl, elapsed, e.cfg.DriftFactor)
		if v.Validity <= 0 {
			return KeyValue{}, nil
		}
	}
	return v, nil
}

// valueID is what nodes must agree on: a string's type and value; for a
// hash or a sorted set the type only (its entries are decided one by one).
func valueID(v NodeKey) string {
	if v.Type == "hash" || v.Type == "zset" {
		return v.Type
	}
	var b strings.Builder
	b.WriteString(v.Type)
	for _, it := range v.Items {
		fmt.Fprintf(&b, ";%d:%s", len(it), it)
	}
	return b.String()
}

// entryCounts counts, over the agreeing hashes or sorted sets, the nodes
// that have each entry: a hash's field with its value (pairID), a sorted
// set's member.
func entryCounts(agreeing []NodeKey) map[string]int {
	n := map[string]int{}
	for _, a := range agreeing {
		for i := 0; i+1 < len(a.Items); i += 2 {
			e := a.Items[i]
			if a.Type == "hash" {
				e = pairID(a.Items[i], a.Items[i+1])
			}
			n[e]++
		}
	}
	return n
}

// undecided reports whether an entry that q agreeing nodes do not have
// could have them with the nodes that did not count (failed or
// quarantined): then the read decides nothing.
func undecided(agreeing []NodeKey, typ string, q, uncounted int) bool {
	if typ != "hash" && typ != "zset" {
		return false
	}
	for _, c := range entryCounts(agreeing) {
		if c < q && c+uncounted >= q {
			return true
		}
	}
	return false
}

// pairID is a hash entry as one string: its field's length, the field
// and the value.
func pairID(field, value string) string {
	return strconv.Itoa(len(field)) + ":" + field + value
}

// quorumPairs returns the fields, with their values, that q of the
// agreeing hashes have, in the first agreeing node's order (Redis's, for
// a small hash) then the others'.
func quorumPairs(agreeing []NodeKey, q int) []string {
	counts := entryCounts(agreeing)
	var out []string
	for _, a := range agreeing {
		for i := 0; i+1 < len(a.Items); i += 2 {
			e := pairID(a.Items[i], a.Items[i+1])
			if counts[e] >= q {
				out = append(out, a.Items[i], a.Items[i+1])
				counts[e] = 0 // once
			}
		}
	}
	return out
}

// quorumScores returns the members that q of the agreeing sorted sets
// have, each with the highest score that q of them reach, ordered by
// score then member as ZRANGE orders them.
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
		if len(s) < q {
			continue
		}
		slices.SortFunc(s, func(a, b member) int { return -cmpFloat(a.score, b.score) })
		ms = append(ms, s[q-1])
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
