// Package pubid gives each publish the proxy causes an identity that
// every node's copy carries: a lock script runs on every node, so one
// publish reaches a proxy's hub up to N times, and the hub delivers it
// once by its identity (internal/pubsub), whichever nodes sent it.
//
// A tagged payload is Prefix, 16 random bytes, then the payload as the
// client gave it. Prefix starts with a NUL and a byte that no UTF-8 text
// holds, so no text payload reads as tagged; the hub strips the tag
// before any subscriber sees the message. A payload published on the
// masters other than through a proxy that starts with Prefix and is long
// enough reads as a proxy's publish.
package pubid

import "crypto/rand"

// Prefix starts every tagged payload.
const Prefix = "\x00\xc0rlp1"

// size is a tag's length: Prefix and the random part.
const size = len(Prefix) + 16

// New returns a new tag: Prefix and 16 random bytes. A publish sends tag
// + payload on every node.
func New() string {
	b := make([]byte, size)
	copy(b, Prefix)
	rand.Read(b[len(Prefix):])
	return string(b)
}

// Split returns a tagged payload's tag and the payload after it; ok is
// false for an untagged one, which is then returned as it is.
func Split(payload string) (tag, rest string, ok bool) {
	if len(payload) < size || payload[:len(Prefix)] != Prefix {
		return "", payload, false
	}
	return payload[:size], payload[size:], true
}
