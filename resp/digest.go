package resp

import (
	"fmt"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/zeebo/xxh3"
)

// digestLen is the length of a digest as DIGEST replies it: XXH3's 64
// bits in lower-case hex, with leading zeros.
const digestLen = 16

// ErrDigestLength refuses an IFDEQ or IFDNE digest of the wrong length,
// as Redis 8.4 does. It matches ErrArgument.
var ErrDigestLength = argError("digest not 16 hexadecimal characters")

// Digest is value's digest as Redis 8.4's DIGEST replies it: the XXH3
// 64-bit hash (seed 0) of its bytes, as 16 lower-case hex digits.
func Digest(value string) string {
	return fmt.Sprintf("%0*x", digestLen, xxh3.HashString(value))
}

// DigestMatches reports whether digest, which Redis compares without
// regard to case, is value's digest. A digest of the wrong length is
// ErrDigestLength, as Redis checks it (the hex digits themselves are not
// checked: a bad one just never matches).
func DigestMatches(digest []byte, value string) (bool, error) {
	if len(digest) != digestLen {
		return false, ErrDigestLength
	}
	return ascii.EqualFold(digest, Digest(value)), nil
}
