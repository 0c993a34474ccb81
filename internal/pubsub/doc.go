// Package pubsub subscribes on every node for the proxy's subscribed
// clients. A lock script that publishes (Redisson's unlock, say) runs on
// all N nodes, so one release is published up to N times; the hub keeps
// one subscriber connection per node, shared by all clients, subscribes a
// topic there while some client holds it, and hands each publish to the
// clients once. A waiter subscribed through one proxy therefore wakes
// when the lock is released through any proxy over the same masters; a
// node that is down simply sends nothing, and the others still deliver.
//
// It is a package of its own, apart from quorum, because it is no part of
// the Redlock decision: nothing here counts votes or computes validity,
// and a lost message costs a waiter a retry, never safety. It speaks
// RESP2 to the nodes itself (a subscriber connection needs five commands)
// rather than through go-redis, whose PubSub dials on the caller's
// goroutine and does not say when a node confirmed a subscription.
package pubsub
