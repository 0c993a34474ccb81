package resp

import (
	"errors"
	"fmt"
	"math"
)

// Redis 7's rules for reading a command argument as a number live here,
// in one place, so that every handler accepts and refuses exactly what
// one redis-server does.

// ErrArgument matches every error of this package: a command refused for
// its arguments alone. The errors name the rule broken; the proxy words
// the reply, as Redis words it.
var ErrArgument = errors.New("resp: bad argument")

// Errors an argument can be refused with, each matching ErrArgument.
var (
	// ErrNotInteger: not a 64-bit decimal integer in its strict form.
	ErrNotInteger = argError("not an integer or out of range")
	// ErrNumkeysOver and ErrNumkeysNegative: EVAL's numkeys out of range.
	ErrNumkeysOver     = argError("numkeys over the number of arguments")
	ErrNumkeysNegative = argError("numkeys negative")
)

func argError(msg string) error { return fmt.Errorf("%w: %s", ErrArgument, msg) }

// ParseInt reads b as Redis's string2ll does: an optional '-', then
// decimal digits without a leading zero ("0" alone is fine), nothing else
// (no '+', no spaces), within int64. "-0" is refused, as in Redis.
func ParseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	switch {
	case neg && v <= 1<<63:
		return int64(-v), true // -(1<<63) wraps to MinInt64, which is right
	case !neg && v <= math.MaxInt64:
		return int64(v), true
	}
	return 0, false
}

// ParseIntRange is ParseInt limited to [lo, hi], as Redis's
// getRangeLongFromObjectOrReply and getIntFromObjectOrReply are.
func ParseIntRange(b []byte, lo, hi int64) (int64, bool) {
	n, ok := ParseInt(b)
	if !ok || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// Numkeys reads EVAL's and EVALSHA's numkeys given how many arguments
// follow it, with Redis's errors in Redis's order.
func Numkeys(b []byte, rest int) (int, error) {
	n, ok := ParseInt(b)
	switch {
	case !ok:
		return 0, ErrNotInteger
	case n > int64(rest):
		return 0, ErrNumkeysOver
	case n < 0:
		return 0, ErrNumkeysNegative
	}
	return int(n), nil
}

// ValidClientName reports whether Redis accepts name for CLIENT SETNAME or
// HELLO SETNAME: every byte printable ASCII other than a space.
func ValidClientName(name []byte) bool {
	for _, c := range name {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}
