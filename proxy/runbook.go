package proxy

import (
	"math"
	"strconv"
	"strings"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// The reads a lock runbook tells an operator to run against Redis, as
// quorum reads: what a quorum of the nodes agree on, never one node's
// view.

var objectSubs = map[string]int{"encoding": 3, "freq": 3, "help": 2, "idletime": 3, "refcount": 3}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
//
// A quorum scan (quorum.Engine.Scan): the keys a quorum holds, with a
// cursor that stays valid while a minority of the nodes is down or
// restarts. Keys the user may not name are left out.
func (s *Server) scan(r *request) resp.Reply {
	v, err := strconv.ParseUint(string(r.args[1]), 10, 64)
	if err != nil {
		return resp.Error("ERR invalid cursor")
	}
	cur, err := quorum.DecodeCursor(v, s.e.Nodes())
	if err != nil {
		return resp.Error("ERR invalid cursor")
	}
	var match, typ string
	count := int64(0)
	for i := 2; i < len(r.args); i += 2 {
		if i+1 >= len(r.args) {
			return resp.Error("ERR syntax error")
		}
		arg := r.args[i+1]
		switch strings.ToLower(string(r.args[i])) {
		case "match":
			match = string(arg)
		case "count":
			n, ok := resp.ParseInt(arg)
			switch {
			case !ok:
				return resp.Error("ERR value is not an integer or out of range")
			case n < 1:
				return resp.Error("ERR syntax error")
			}
			count = min(n, 1000) // each key found costs a quorum read
		case "type":
			typ = strings.ToLower(string(arg))
		default:
			return resp.Error("ERR syntax error")
		}
	}
	next, found, err := s.e.Scan(r.ctx, cur, match, count, typ)
	if err != nil {
		return s.fail(err)
	}
	keys := make([]resp.Reply, 0, len(found))
	for _, k := range found {
		if r.c.user.CanKey([]byte(k.Key)) {
			keys = append(keys, resp.Bulk(k.Key))
		}
	}
	return resp.Array(resp.Bulk(strconv.FormatUint(next.Encode(), 10)), resp.Array(keys...))
}

// TYPE key
func (s *Server) typeCmd(r *request) resp.Reply {
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return rep
	}
	st, err := s.e.Inspect(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return s.fail(err)
	case !st.Held:
		return resp.Status("none")
	}
	return resp.Status(st.TypeName())
}

// readKey reads key whole, as a quorum agrees on it, refusing the
// reserved keys.
func (s *Server) readKey(r *request, key []byte) (quorum.KeyValue, resp.Reply, bool) {
	if rep, bad := reservedKey([][]byte{key}); bad {
		return quorum.KeyValue{}, rep, false
	}
	v, err := s.e.ReadKey(r.ctx, string(key))
	if err != nil {
		return quorum.KeyValue{}, s.fail(err), false
	}
	return v, resp.Reply{}, true
}

// HGETALL key
//
// A Redisson lock's holders and their counts.
func (s *Server) hgetall(r *request) resp.Reply {
	v, rep, ok := s.readKey(r, r.args[1])
	switch {
	case !ok:
		return rep
	case !v.Held:
		return resp.Map()
	case v.Type != "hash":
		return errWrongType
	}
	kv := make([]resp.Reply, len(v.Items))
	for i, it := range v.Items {
		kv[i] = resp.Bulk(it)
	}
	return resp.Map(kv...)
}

// HGET key field
func (s *Server) hget(r *request) resp.Reply {
	v, rep, ok := s.readKey(r, r.args[1])
	switch {
	case !ok:
		return rep
	case !v.Held:
		return resp.Null()
	case v.Type != "hash":
		return errWrongType
	}
	for i := 0; i+1 < len(v.Items); i += 2 {
		if v.Items[i] == string(r.args[2]) {
			return resp.Bulk(v.Items[i+1])
		}
	}
	return resp.Null()
}

// ZRANGE key start stop [WITHSCORES]
//
// By index only: a sorted-set lock's members (Symfony's), with the
// scores a quorum of the nodes reach.
func (s *Server) zrange(r *request) resp.Reply {
	withScores := false
	for _, a := range r.args[4:] {
		switch strings.ToLower(string(a)) {
		case "withscores":
			withScores = true
		case "byscore", "bylex", "rev", "limit":
			return resp.Error("ERR redlock-proxy serves ZRANGE key start stop [WITHSCORES] only")
		default:
			return resp.Error("ERR syntax error")
		}
	}
	start, ok1 := resp.ParseIntRange(r.args[2], math.MinInt64, math.MaxInt64)
	stop, ok2 := resp.ParseIntRange(r.args[3], math.MinInt64, math.MaxInt64)
	if !ok1 || !ok2 {
		return resp.Error("ERR value is not an integer or out of range")
	}
	v, rep, ok := s.readKey(r, r.args[1])
	switch {
	case !ok:
		return rep
	case !v.Held:
		return resp.Array()
	case v.Type != "zset":
		return errWrongType
	}
	n := int64(len(v.Items) / 2)
	if start < 0 {
		start = max(n+start, 0)
	}
	if stop < 0 {
		stop = n + stop
	}
	stop = min(stop, n-1)
	var items []resp.Reply
	for i := start; i <= stop; i++ {
		member, score := resp.Bulk(v.Items[2*i]), v.Items[2*i+1]
		switch {
		case !withScores:
			items = append(items, member)
		case r.c.proto == resp.RESP3:
			items = append(items, resp.Array(member, resp.Double(score)))
		default:
			items = append(items, member, resp.Bulk(score))
		}
	}
	return resp.Array(items...)
}

// OBJECT ENCODING key
//
// The encoding every node that agrees on the key's value reports.
func (s *Server) object(r *request) resp.Reply {
	switch strings.ToLower(string(r.args[1])) {
	case "encoding":
	case "help":
		return resp.Array(resp.Status("OBJECT ENCODING <key>: the encoding of a key a quorum holds."))
	default:
		return resp.Error("ERR OBJECT " + strings.ToUpper(string(r.args[1])) + " is not supported: each node keeps its own")
	}
	v, rep, ok := s.readKey(r, r.args[2])
	switch {
	case !ok:
		return rep
	case !v.Held:
		return resp.Null()
	case v.Encoding == "":
		return resp.Error("ERR the nodes that hold the key report different encodings")
	}
	return resp.Bulk(v.Encoding)
}

// STRLEN key
func (s *Server) strlen(r *request) resp.Reply {
	if rep, bad := reservedKey(r.args[1:2]); bad {
		return rep
	}
	st, err := s.e.Inspect(r.ctx, string(r.args[1]))
	switch {
	case err != nil:
		return s.fail(err)
	case !st.Held:
		return resp.Int(0)
	case st.Type != "":
		return errWrongType
	}
	return resp.Int(int64(len(st.Token)))
}

// HLEN key
func (s *Server) hlen(r *request) resp.Reply { return s.count(r, "hash") }

// ZCARD key
func (s *Server) zcard(r *request) resp.Reply { return s.count(r, "zset") }

// count is the number of fields or members of a hash or sorted-set lock,
// as a quorum of the nodes hold it.
func (s *Server) count(r *request, typ string) resp.Reply {
	v, rep, ok := s.readKey(r, r.args[1])
	switch {
	case !ok:
		return rep
	case !v.Held:
		return resp.Int(0)
	case v.Type != typ:
		return errWrongType
	}
	return resp.Int(int64(len(v.Items) / 2))
}
