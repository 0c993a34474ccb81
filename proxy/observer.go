package proxy

import "github.com/redlock-proxy/redlock-proxy/quorum"

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
	// for a command whose operation its name tells (the command table's
	// op: SET, the reads, DELEX, DELIFEQ), a refusal by arity, NOAUTH or
	// NOPERM. errorReply is its one caller.
	Refused(op quorum.Op)
}
