package proxy

import (
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// Observer receives the server's own events, those the engine cannot
// see: client connections and commands refused before they reach the
// engine. Its methods are called concurrently from every connection's
// goroutine, so they must be quick and must not block.
type Observer interface {
	// ClientConnected and ClientClosed bracket every accepted client.
	ClientConnected()
	ClientClosed()
	// ClientRejected reports a client turned away at max_clients.
	ClientRejected()
	// ProtocolError reports a client's bytes refused by the framing
	// limits (the connection is then closed).
	ProtocolError()
	// Refused reports a lock command refused before any node saw it:
	// a bad TTL or argument, a reserved key, a drain in progress, or,
	// for SET and the reads, a refusal by arity, NOAUTH or NOPERM.
	Refused(op quorum.Op)
}

// lockOps are the lock commands whose operation is known from their name,
// so that a refusal before their handler (arity, NOAUTH, NOPERM) is
// reported too. A script's operation is known only once it is classified.
var lockOps = map[string]quorum.Op{
	"set": quorum.OpAcquire, "get": quorum.OpRead, "pttl": quorum.OpRead, "ttl": quorum.OpRead, "exists": quorum.OpRead,
	"delex": quorum.OpRelease, "delifeq": quorum.OpRelease, "digest": quorum.OpRead,
}

// refused reports a refusal of op, and returns its reply.
func (s *Server) refused(op quorum.Op, rep resp.Reply) resp.Reply {
	if s.obs != nil {
		s.obs.Refused(op)
	}
	return rep
}
