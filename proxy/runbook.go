package proxy

import (
	"errors"
	"math"
	"strconv"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

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
func (s *Server) scan(r *request) (resp.Reply, error) {
	v, err := strconv.ParseUint(string(r.args[1]), 10, 64)
	if err != nil {
		return resp.Reply{}, errInvalidCursor
	}
	cur, err := quorum.DecodeCursor(v, s.e.Nodes())
	if err != nil {
		return resp.Reply{}, errInvalidCursor
	}
	var match, typ string
	count := int64(0)
	for i := 2; i < len(r.args); i += 2 {
		if i+1 >= len(r.args) {
			return resp.Reply{}, resp.ErrSyntax
		}
		arg := r.args[i+1]
		switch ascii.Lower(r.args[i]) {
		case "match":
			match = string(arg)
		case "count":
			n, ok := resp.ParseInt(arg)
			switch {
			case !ok:
				return resp.Reply{}, resp.ErrNotInteger
			case n < 1:
				return resp.Reply{}, resp.ErrSyntax
			}
			count = min(n, 1000) // each key found costs a quorum read
		case "type":
			typ = ascii.Lower(arg)
		default:
			return resp.Reply{}, resp.ErrSyntax
		}
	}
	next, found, err := s.e.Scan(r.ctx, cur, match, count, typ)
	switch {
	case errors.Is(err, quorum.ErrBadCursor):
		return resp.Reply{}, errInvalidCursor // another node list's
	case err != nil:
		return resp.Reply{}, err
	}
	keys := make([]resp.Reply, 0, len(found))
	for _, k := range found {
		if r.c.user.CanKey([]byte(k.Key)) {
			keys = append(keys, resp.Bulk(k.Key))
		}
	}
	return resp.Array(resp.Bulk(strconv.FormatUint(next.Encode(), 10)), resp.Array(keys...)), nil
}

// TYPE key
func (s *Server) typeCmd(r *request) (resp.Reply, error) {
	return s.read(r, r.args[1], resp.Status("none"), nil, func(st quorum.State) (resp.Reply, error) {
		return resp.Status(st.TypeName()), nil
	})
}

// readWhole serves a read of one key whole, as a quorum of the nodes
// agree on it: the proxies' own keys refused, missing if no quorum holds
// the key, WRONGTYPE if it is not of type typ (if not ""), else what of
// makes of it.
func (s *Server) readWhole(r *request, key []byte, missing resp.Reply, typ string, of func(quorum.KeyValue) (resp.Reply, error)) (resp.Reply, error) {
	if err := reservedKeys([][]byte{key}); err != nil {
		return resp.Reply{}, err
	}
	v, err := s.e.ReadKey(r.ctx, string(key))
	switch {
	case err != nil:
		return resp.Reply{}, err
	case !v.Held:
		return missing, nil
	case typ != "" && v.Type != typ:
		return resp.Reply{}, errWrongType
	}
	return of(v)
}

// HGETALL key
//
// A Redisson lock's holders and their counts.
func (s *Server) hgetall(r *request) (resp.Reply, error) {
	return s.readWhole(r, r.args[1], resp.Map(), "hash", func(v quorum.KeyValue) (resp.Reply, error) {
		kv := make([]resp.Reply, len(v.Items))
		for i, it := range v.Items {
			kv[i] = resp.Bulk(it)
		}
		return resp.Map(kv...), nil
	})
}

// HGET key field
func (s *Server) hget(r *request) (resp.Reply, error) {
	return s.readWhole(r, r.args[1], resp.Null(), "hash", func(v quorum.KeyValue) (resp.Reply, error) {
		for i := 0; i+1 < len(v.Items); i += 2 {
			if v.Items[i] == string(r.args[2]) {
				return resp.Bulk(v.Items[i+1]), nil
			}
		}
		return resp.Null(), nil
	})
}

// ZRANGE key start stop [WITHSCORES]
//
// By index only: a sorted-set lock's members (Symfony's), with the
// scores a quorum of the nodes reach.
func (s *Server) zrange(r *request) (resp.Reply, error) {
	withScores := false
	for _, a := range r.args[4:] {
		switch ascii.Lower(a) {
		case "withscores":
			withScores = true
		case "byscore", "bylex", "rev", "limit":
			return resp.Reply{}, errZrangeForm
		default:
			return resp.Reply{}, resp.ErrSyntax
		}
	}
	start, ok1 := resp.ParseIntRange(r.args[2], math.MinInt64, math.MaxInt64)
	stop, ok2 := resp.ParseIntRange(r.args[3], math.MinInt64, math.MaxInt64)
	if !ok1 || !ok2 {
		return resp.Reply{}, resp.ErrNotInteger
	}
	return s.readWhole(r, r.args[1], resp.Array(), "zset", func(v quorum.KeyValue) (resp.Reply, error) {
		return zrangeReply(v, start, stop, withScores, r.c.proto), nil
	})
}

// zrangeReply is ZRANGE's reply of members start to stop of v, a sorted
// set, with their scores if withScores.
func zrangeReply(v quorum.KeyValue, start, stop int64, withScores bool, proto resp.Proto) resp.Reply {
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
		case proto == resp.RESP3:
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
func (s *Server) object(r *request) (resp.Reply, error) {
	switch ascii.Lower(r.args[1]) {
	case "encoding":
	case "help":
		return resp.Array(resp.Status("OBJECT ENCODING <key>: the encoding of a key a quorum holds.")), nil
	default:
		return resp.Reply{}, withArgs(errObjectSubcommand, ascii.Upper(r.args[1]))
	}
	return s.readWhole(r, r.args[2], resp.Null(), "", func(v quorum.KeyValue) (resp.Reply, error) {
		if v.Encoding == "" {
			return resp.Reply{}, errEncodings
		}
		return resp.Bulk(v.Encoding), nil
	})
}

// STRLEN key
func (s *Server) strlen(r *request) (resp.Reply, error) {
	return s.read(r, r.args[1], resp.Int(0), errWrongType, func(st quorum.State) (resp.Reply, error) {
		return resp.Int(int64(len(st.Token))), nil
	})
}

// HLEN key
func (s *Server) hlen(r *request) (resp.Reply, error) { return s.count(r, "hash") }

// ZCARD key
func (s *Server) zcard(r *request) (resp.Reply, error) { return s.count(r, "zset") }

// count is the number of fields or members of a hash or sorted-set lock,
// as a quorum of the nodes hold it.
func (s *Server) count(r *request, typ string) (resp.Reply, error) {
	return s.readWhole(r, r.args[1], resp.Int(0), typ, func(v quorum.KeyValue) (resp.Reply, error) {
		return resp.Int(int64(len(v.Items) / 2)), nil
	})
}
