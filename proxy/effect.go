package proxy

import (
	"errors"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
	"github.com/redlock-proxy/redlock-proxy/script"
)

// effectCommands is script's allow-list as the engine's wrapper takes it.
var effectCommands = func() map[string]int {
	m := make(map[string]int, len(script.Commands))
	for name, pos := range script.Commands {
		m[name] = int(pos)
	}
	return m
}()

// runEffect serves an admitted script by what it does: the client's own
// body runs on every node inside the engine's wrapper, and the reply is
// the script's own, as a node of the deciding side gave it.
func (s *Server) runEffect(r *request, eff *quorum.Effect) resp.Reply {
	rest := r.args[3:]
	nk, err := resp.Numkeys(r.args[2], len(rest))
	if err != nil {
		return resp.Error(err.Error())
	}
	if rep, bad := reservedKey(rest[:nk]); bad {
		return rep
	}
	keys := make([]string, nk)
	for i, k := range rest[:nk] {
		keys[i] = string(k)
	}
	args := make([]string, len(rest)-nk)
	for i, a := range rest[nk:] {
		args[i] = string(a)
	}
	res, err := s.e.RunEffect(r.ctx, eff, keys, args)
	if res.Op == quorum.EffectHold && split(err) && s.pauseForRetry(r) {
		res, err = s.e.RunEffect(r.ctx, eff, keys, args) // see split
	}
	var refused *quorum.RefusedError
	switch {
	case errors.As(err, &refused):
		return resp.Error("ERR script refused: " + refused.Reason + "; nothing of it was kept")
	case err != nil:
		return s.fail(err)
	case res.Op == quorum.EffectHold && res.Granted && !res.Lease.Valid(time.Now()):
		s.e.UndoEffect(r.ctx, res)
		return s.fail(errLate)
	case res.Op == quorum.EffectHold && res.Granted && res.Took && s.Draining():
		// Known only once it ran: a new lock while draining is given
		// back at once, as an acquire refused.
		s.e.UndoEffect(r.ctx, res)
		return s.refused(quorum.OpAcquire, errDraining)
	}
	s.warnFailures(res.Lease.Failures)
	return valueReply(res.Reply)
}

// valueReply writes a node's reply back with its own RESP type.
func valueReply(v quorum.Value) resp.Reply {
	switch v.Kind {
	case quorum.ValueStatus:
		return resp.Status(v.Str)
	case quorum.ValueBulk:
		return resp.Bulk(v.Str)
	case quorum.ValueInt:
		return resp.Int(v.Int)
	case quorum.ValueError:
		return resp.Error(v.Str)
	case quorum.ValueArray:
		items := make([]resp.Reply, len(v.Items))
		for i, it := range v.Items {
			items[i] = valueReply(it)
		}
		return resp.Array(items...)
	}
	return resp.Null()
}
