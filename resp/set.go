package resp

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// ExpiryUnit says how a SET's expiry argument is to be read.
type ExpiryUnit uint8

const (
	NoExpiry ExpiryUnit = iota // no EX, PX, EXAT or PXAT given
	EX                         // seconds from now
	PX                         // milliseconds from now
	EXAT                       // Unix time in seconds
	PXAT                       // Unix time in milliseconds
)

// SetArgs is a parsed SET command that asks for a lock.
type SetArgs struct {
	Key, Token string
	Unit       ExpiryUnit
	Expiry     int64 // in Unit; > 0 unless Unit is NoExpiry
}

// Errors a SET can be refused with, worded as Redis words them where Redis
// has the same error.
var (
	ErrSyntax     = errors.New("ERR syntax error")
	ErrNotInteger = errors.New("ERR value is not an integer or out of range")
	ErrExpireTime = errors.New("ERR invalid expire time in 'set' command")
	ErrSetNotLock = errors.New("ERR redlock-proxy only takes locks: use SET key token NX PX milliseconds (or EX seconds)")
	ErrSetOption  = errors.New("ERR redlock-proxy does not support XX, GET or KEEPTTL: a lock is SET key token NX PX milliseconds")
)

// ParseSet parses SET's arguments (args[0] is "SET"); option names are
// case-insensitive and may come in any order. Only a SET NX with at most
// one expiry is a lock; anything else is refused with one of the errors
// above.
func ParseSet(args [][]byte) (SetArgs, error) {
	if len(args) < 3 {
		return SetArgs{}, ErrSyntax
	}
	s := SetArgs{Key: string(args[1]), Token: string(args[2])}
	nx, refused := false, false
	for i := 3; i < len(args); i++ {
		opt := strings.ToUpper(string(args[i]))
		switch opt {
		case "NX":
			nx = true
			continue
		case "XX", "GET", "KEEPTTL":
			refused = true
			continue
		}
		unit, ok := expiryUnits[opt]
		if !ok || s.Unit != NoExpiry || i+1 == len(args) {
			return SetArgs{}, ErrSyntax
		}
		i++
		n, err := strconv.ParseInt(string(args[i]), 10, 64)
		if err != nil {
			return SetArgs{}, ErrNotInteger
		}
		if n <= 0 {
			return SetArgs{}, ErrExpireTime
		}
		s.Unit, s.Expiry = unit, n
	}
	switch {
	case refused:
		return SetArgs{}, ErrSetOption
	case !nx:
		return SetArgs{}, ErrSetNotLock
	}
	return s, nil
}

var expiryUnits = map[string]ExpiryUnit{"EX": EX, "PX": PX, "EXAT": EXAT, "PXAT": PXAT}

// TTL converts the expiry to a duration, given the wall clock now in Unix
// milliseconds (used only for EXAT and PXAT). It returns 0 for NoExpiry,
// and ErrExpireTime for an expiry that overflows or lies in the past.
func (s SetArgs) TTL(nowMillis int64) (time.Duration, error) {
	const maxMillis = math.MaxInt64 / int64(time.Millisecond)
	var ms int64
	switch s.Unit {
	case NoExpiry:
		return 0, nil
	case EX, EXAT:
		if s.Expiry > maxMillis/1000 {
			return 0, ErrExpireTime
		}
		ms = s.Expiry * 1000
	default:
		ms = s.Expiry
	}
	if s.Unit == EXAT || s.Unit == PXAT {
		ms -= nowMillis
	}
	if ms <= 0 || ms > maxMillis {
		return 0, ErrExpireTime
	}
	return time.Duration(ms) * time.Millisecond, nil
}
