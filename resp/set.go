package resp

import (
	"errors"
	"math"
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
	ErrExpireTime = errors.New("ERR invalid expire time in 'set' command")
	ErrSetNotLock = errors.New("ERR redlock-proxy only takes locks: use SET key token NX PX milliseconds (or EX seconds)")
	ErrSetOption  = errors.New("ERR redlock-proxy does not support XX, GET or KEEPTTL: a lock is SET key token NX PX milliseconds")
)

// setFlag is one SET option, as Redis 7's parseExtendedStringArguments
// tracks them.
type setFlag uint8

const (
	flagNX setFlag = 1 << iota
	flagXX
	flagGet
	flagKeepTTL
	flagEX
	flagPX
	flagEXAT
	flagPXAT
)

// setOptions lists each option with the options that must not come
// before it (Redis takes a repeated expiry option, the last value wins,
// but never two different ones) and the unit of an expiry.
var setOptions = map[string]struct {
	flag, excludes setFlag
	unit           ExpiryUnit
}{
	"NX":      {flagNX, flagXX, NoExpiry},
	"XX":      {flagXX, flagNX, NoExpiry},
	"GET":     {flagGet, 0, NoExpiry},
	"KEEPTTL": {flagKeepTTL, flagEX | flagPX | flagEXAT | flagPXAT, NoExpiry},
	"EX":      {flagEX, flagKeepTTL | flagPX | flagEXAT | flagPXAT, EX},
	"PX":      {flagPX, flagKeepTTL | flagEX | flagEXAT | flagPXAT, PX},
	"EXAT":    {flagEXAT, flagKeepTTL | flagEX | flagPX | flagPXAT, EXAT},
	"PXAT":    {flagPXAT, flagKeepTTL | flagEX | flagPX | flagEXAT, PXAT},
}

// ParseSet parses SET's arguments (args[0] is "SET") by Redis 7's rules:
// option names are case-insensitive and may come in any order, a repeated
// expiry option keeps its last value, and a syntax error is found before
// the expiry's value is read. Only then is it checked to be a lock (NX,
// no XX, GET or KEEPTTL); anything else is refused with one of the errors
// above, Redis's own first.
func ParseSet(args [][]byte) (SetArgs, error) {
	if len(args) < 3 {
		return SetArgs{}, ErrSyntax
	}
	s := SetArgs{Key: string(args[1]), Token: string(args[2])}
	var flags setFlag
	var expiry []byte
	for i := 3; i < len(args); i++ {
		o, ok := setOptions[strings.ToUpper(string(args[i]))]
		if !ok || flags&o.excludes != 0 || (o.unit != NoExpiry && i+1 == len(args)) {
			return SetArgs{}, ErrSyntax
		}
		flags |= o.flag
		if o.unit != NoExpiry {
			i++
			s.Unit, expiry = o.unit, args[i]
		}
	}
	if s.Unit != NoExpiry {
		n, ok := ParseInt(expiry)
		switch {
		case !ok:
			return SetArgs{}, ErrNotInteger
		case n <= 0, (s.Unit == EX || s.Unit == EXAT) && n > math.MaxInt64/1000:
			return SetArgs{}, ErrExpireTime
		}
		s.Expiry = n
	}
	switch {
	case flags&(flagXX|flagGet|flagKeepTTL) != 0:
		return SetArgs{}, ErrSetOption
	case flags&flagNX == 0:
		return SetArgs{}, ErrSetNotLock
	}
	return s, nil
}

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
