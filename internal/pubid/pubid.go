// Package pubid gives each publish the proxy causes an identity that
// every node's copy carries: a lock script runs on every node, so one
// publish reaches a proxy's hub up to N times, and the hub delivers it
// once by its identity (internal/pubsub), whichever nodes sent it.
//
// A tagged payload is Prefix, 16 bytes that tell one publish from
// another, then the payload as the client gave it. Prefix starts with a
// NUL and a byte that no UTF-8 text holds, so no text payload reads as
// tagged; the hub strips the tag before any subscriber sees the message.
// A payload published on the masters other than through a proxy that
// starts with Prefix and is long enough reads as a proxy's publish.
package pubid

import (
	"crypto/rand"
	"encoding/binary"
	"sync/atomic"
)

// Prefix starts every tagged payload.
const Prefix = "\x00\xc0rlp1"

// size is a tag's length: Prefix and 16 bytes.
const size = len(Prefix) + 16

// base is this process's 8 random bytes, which start the 16 of each of
// its tags; next counts its tags.
var (
	base = func() [8]byte {
		var b [8]byte
		rand.Read(b[:])
		return b
	}()
	next atomic.Uint64
)

// New returns a new tag: Prefix, this process's 8 random bytes and a
// count, one distinct from any other (as far as 64 random bits go) and
// cheap enough for every lock script run. A publish sends tag + payload
// on every node. The count's last two bytes are zero: a run that
// publishes more than once gives its i-th publish the tag with i-1 there
// (the wrapper's Lua), so each publish of the run has a tag of its own.
func New() string {
	b := make([]byte, 0, size)
	b = append(b, Prefix...)
	b = append(b, base[:]...)
	return string(binary.BigEndian.AppendUint64(b, next.Add(1)<<16))
}

// Split returns a tagged payload's tag and the payload after it; ok is
// false for an untagged one, which is then returned as it is.
func Split(payload string) (tag, rest string, ok bool) {
	if len(payload) < size || payload[:len(Prefix)] != Prefix {
		return "", payload, false
	}
	return payload[:size], payload[size:], true
}
