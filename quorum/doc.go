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
// serve the same nodes. A holder that pauses past its validity can still
// act on a lock it no longer holds: only the protected resource can refuse
// it, with the fencing token Fence gives (fence.go).
//
// Once Start runs, the engine enforces those assumptions instead of
// trusting them. Each node is probed every ProbeInterval (INFO, TIME and
// the membership record) and is in one state: up, down, unverified,
// quarantined or refused. Only an up node's grants count; a grant from any
// other node is counted as Quarantined, which, like a failure, can make an
// outcome ErrUnavailable but never a grant. Writes, releases and extends
// still go to every node that is not down, so a quarantined node holds new
// locks correctly when it comes back.
//
//   - Restart quarantine. Every node keeps the membership record
//     (MembersKey: node address -> run_id, and in its own record "self":
//     the run_id whose data was verified there). A process counts at once
//     only if its own record's self names it, or the records (a quorum,
//     its own among them) name no process but the nodes' current ones (a
//     first deployment). Otherwise it lost its data: a restart is
//     quarantined until its start (from its uptime), and the last time
//     this engine saw the process before it, plus MaxTTL plus drift; a
//     loss with no restart known (FLUSHALL, a node known by another
//     address or new beside others' data) for MaxTTL plus drift from
//     then. Its run_id and self are written only when that ends, and the
//     end is written as a lost mark, so an engine started later reaches
//     the same end. Every new connection reads the run_id before its
//     first command, so a restart is seen before a grant from the new
//     process can count. TrustFsyncAlways exempts nodes that run
//     appendfsync always and kept their data. The quarantine lasts for
//     the longest max_ttl the records say a proxy grants.
//   - Clock checks. A node whose TIME moved more or less than the proxy's
//     monotonic clock, beyond ClockJumpLimit, the round trips and the drift
//     allowance, since the last probe (a jump) or since the first (a wrong
//     rate), is quarantined for MaxTTL plus drift.
//   - Refusals. A replica, a node with an allkeys-* or volatile-* eviction
//     policy (lock keys all have a TTL), and a node with another's run_id
//     (one master listed twice) are refused: Start fails naming them, and
//     later they are state refused.
//   - Circuit breaker. A connection failure, or three timeouts in a row,
//     marks a node down: operations then fail on it at once without a
//     call, and the monitor retries it in the background. N, and so the
//     quorum, never change.
//
// Limits: if every node loses its data at once and no running engine saw
// the old run_ids, the restart looks like a first deployment. A node that
// restarts while no record can be read is counted as new until a record
// is read again; it is then quarantined for what is left of MaxTTL.
package quorum
