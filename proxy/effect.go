package proxy

import (
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// runEffect serves an admitted script by what it does: the client's own
// body runs on every node inside the engine's wrapper, each key is
// decided by its own quorum, and the reply is the script's own, as a
// quorum of the nodes that did what was decided gave it.
func (s *Server) runEffect(r *request, eff *quorum.Effect) (resp.Reply, error) {
	rest, nk, err := scriptArgs(r)
	if err != nil {
		return resp.Reply{}, err
	}
	all := argStrings(rest)
	res, err := s.effect(r, eff, all[:nk:nk], all[nk:])
	if err != nil {
		return resp.Reply{}, err
	}
	return valueReply(res.Reply), nil
}

// effect runs eff over keys and args as runEffect serves it: once more
// when the run may be retried; a grant whose validity ran out, or a new
// lock while draining, given back and answered with an error.
func (s *Server) effect(r *request, eff *quorum.Effect, keys, args []string) (quorum.EffectResult, error) {
	first := time.Now()
	res, err := s.e.RunEffect(r.ctx, eff, keys, args)
	if res.Retry && s.pauseForRetry(r) {
		res, err = s.e.RunEffect(r.ctx, eff, keys, args) // see split; only a run undone wherever it changed something
		res.Lease = res.Lease.From(first)                // as in acquire
	}
	switch {
	case err != nil:
		return res, err // a node's refusal (quorum.RefusedError) among them
	case res.Granted && !res.Lease.Expires.IsZero() && !res.Lease.Valid(time.Now()):
		// Any key the run holds, beside a release too.
		s.e.UndoEffect(r.ctx, res)
		return res, errLate
	case res.Granted && res.NewLock && s.Draining():
		// Known only once it ran: a new lock while draining is given
		// back at once, as an acquire refused, beside an extend or a
		// release too.
		s.e.UndoEffect(r.ctx, res)
		r.op = quorum.OpAcquire
		return res, errDraining
	}
	s.warnFailures(res.Lease.Failures)
	return res, nil
}

// argStrings copies args as strings, all in one allocation: they live as
// long as the command.
func argStrings(args [][]byte) []string {
	n := 0
	for _, a := range args {
		n += len(a)
	}
	var b strings.Builder
	b.Grow(n)
	for _, a := range args {
		b.Write(a)
	}
	joined := b.String()
	out := make([]string, len(args))
	for i, a := range args {
		out[i], joined = joined[:len(a)], joined[len(a):]
	}
	return out
}

// valueReply writes a node's reply back with its own RESP type.
func valueReply(v quorum.Value) resp.Reply {
	switch v.Kind {
	case quorum.ValueStatus:
		return resp.ScriptStatus(v.Str)
	case quorum.ValueBulk:
		return resp.Bulk(v.Str)
	case quorum.ValueInt:
		return resp.Int(v.Int)
	case quorum.ValueError:
		return resp.ScriptError(v.Str)
	case quorum.ValueDouble:
		return resp.Double(v.Str)
	case quorum.ValueBigNumber:
		return resp.BigNumber(v.Str)
	case quorum.ValueVerbatim:
		return resp.VerbatimAs(v.Str[:3], v.Str[4:])
	case quorum.ValueArray, quorum.ValueMap, quorum.ValueSet:
		items := make([]resp.Reply, len(v.Items))
		for i, it := range v.Items {
			items[i] = valueReply(it)
		}
		switch v.Kind {
		case quorum.ValueMap:
			return resp.Map(items...)
		case quorum.ValueSet:
			return resp.Set(items...)
		}
		return resp.Array(items...)
	}
	return resp.Null()
}
