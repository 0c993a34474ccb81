// Package quorum is the Redlock engine: it runs each lock operation on N
// independent Redis masters (nodes) at once and decides by a strict
// majority, the quorum.
//
// An acquire sets the key on every node with SET NX PX, each call under
// its own deadline, timed from before the first send on the monotonic
// clock. It is granted only if a quorum of nodes granted it and the
// validity, the TTL minus the time taken minus an allowance for clock
// drift, is still positive. Otherwise the key is released on every node
// whose write may have landed: those that granted, and those that failed
// or timed out.
// A release deletes the key wherever it still holds the caller's token; an
// extend resets its TTL wherever it does, and is granted like an acquire.
//
// The quorum is always over the configured N nodes, never over the nodes
// that happen to be up. An outcome decided by the nodes' answers (the key
// is held elsewhere) is a denial; an outcome that failed nodes could have
// changed is ErrUnavailable, so "taken" and "unreachable" never look alike.
//
// The engine assumes what Redlock assumes: the nodes are independent
// masters (no replication between them), their clocks run at nearly the
// same rate (bounded drift), and a node that restarts without persistence
// stays out of the quorum for at least the longest TTL. It keeps no lock
// state of its own: every lock lives on the nodes, so several engines may
// serve the same nodes. It does not issue fencing tokens: a holder that
// pauses past its validity can still act on a lock it no longer holds, and
// only the protected resource can refuse it.
package quorum
