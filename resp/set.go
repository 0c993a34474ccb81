package resp

import (
	"math"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"
)

// ExpiryUnit says how a SET's expiry argument is to be read.
type ExpiryUnit uint8

const (
	NoExpiry ExpiryUnit = iota // no EX, PX, EXAT or PXAT given
	ex                         // seconds from now
	px                         // milliseconds from now
	exat                       // Unix time in seconds
	pxat                       // Unix time in milliseconds
)

// Condition is a SET's compare-and-set option (Redis 8.4, Valkey 8.1).
type Condition uint8

const (
	NoCondition Condition = iota
	IFEQ                  // set if the value equals Match
	IFNE                  // set if the value differs from Match, or is missing
	IFDEQ                 // set if the value's digest equals Match
	IFDNE                 // set if the value's digest differs from Match, or is missing
)

// SetArgs is a parsed SET command that asks for a lock, or (with a
// Condition) that compares and sets one.
type SetArgs struct {
	Key, Token string
	Unit       ExpiryUnit
	expiry     int64 // in Unit; > 0 unless Unit is NoExpiry
	Cond       Condition
	Match      string // the value or digest Cond compares with
	Get        bool   // GET: reply with the old value (with a Condition only)
}

// Errors a SET can be refused with, each matching ErrArgument.
var (
	ErrSyntax     = argError("syntax error")
	ErrExpireTime = argError("invalid expire time") // zero, negative, overflowing or past
	ErrSetNotLock = argError("set without nx")      // a SET that takes no lock
	ErrSetOption  = argError("set with xx, get or keepttl")
)

// setFlag is one SET option, as Redis 7's parseExtendedStringArguments
// tracks them.
type setFlag uint16

const (
	flagNX setFlag = 1 << iota
	flagXX
	flagGet
	flagKeepTTL
	flagEX
	flagPX
	flagEXAT
	flagPXAT
	flagIFEQ
	flagIFNE
	flagIFDEQ
	flagIFDNE
)

// conditions are the options that exclude each other, and NX and XX:
// Redis 8.4 takes one of them at most (one repeated is fine).
const conditions = flagNX | flagXX | flagIFEQ | flagIFNE | flagIFDEQ | flagIFDNE

// setOptions lists each option with the options that must not come
// before it (Redis takes a repeated expiry option, the last value wins,
// but never two different ones) and the unit of an expiry.
var setOptions = map[string]struct {
	flag, excludes setFlag
	unit           ExpiryUnit
	cond           Condition // takes a value to compare with
}{
	"NX":      {flagNX, conditions &^ flagNX, NoExpiry, NoCondition},
	"XX":      {flagXX, conditions &^ flagXX, NoExpiry, NoCondition},
	"GET":     {flagGet, 0, NoExpiry, NoCondition},
	"KEEPTTL": {flagKeepTTL, flagEX | flagPX | flagEXAT | flagPXAT, NoExpiry, NoCondition},
	"EX":      {flagEX, flagKeepTTL | flagPX | flagEXAT | flagPXAT, ex, NoCondition},
	"PX":      {flagPX, flagKeepTTL | flagEX | flagEXAT | flagPXAT, px, NoCondition},
	"EXAT":    {flagEXAT, flagKeepTTL | flagEX | flagPX | flagPXAT, exat, NoCondition},
	"PXAT":    {flagPXAT, flagKeepTTL | flagEX | flagPX | flagEXAT, pxat, NoCondition},
	"IFEQ":    {flagIFEQ, conditions &^ flagIFEQ, NoExpiry, IFEQ},
	"IFNE":    {flagIFNE, conditions &^ flagIFNE, NoExpiry, IFNE},
	"IFDEQ":   {flagIFDEQ, conditions &^ flagIFDEQ, NoExpiry, IFDEQ},
	"IFDNE":   {flagIFDNE, conditions &^ flagIFDNE, NoExpiry, IFDNE},
}

// ParseSet parses SET's arguments (args[0] is "SET") by Redis 7's rules:
// option names are case-insensitive and may come in any order, a repeated
// expiry option keeps its last value, and a syntax error is found before
// the expiry's value is read. Redis 8.4's conditions (IFEQ, IFNE, IFDEQ,
// IFDNE) exclude each other and NX and XX, as Valkey's IFEQ does (Redis
// 8.4 takes NX after a condition, and then never sets). Only then is it
// checked to be a lock (NX, or a condition; no XX or KEEPTTL; GET only
// with a condition); anything else is refused with one of the errors
// above, Redis's own first.
func ParseSet(args [][]byte) (SetArgs, error) {
	if len(args) < 3 {
		return SetArgs{}, ErrSyntax
	}
	s := SetArgs{Key: string(args[1]), Token: string(args[2])}
	var flags setFlag
	var expiry []byte
	for i := 3; i < len(args); i++ {
		o, ok := setOptions[ascii.Upper(args[i])]
		takesValue := o.unit != NoExpiry || o.cond != NoCondition
		if !ok || flags&o.excludes != 0 || takesValue && i+1 == len(args) {
			return SetArgs{}, ErrSyntax
		}
		flags |= o.flag
		switch {
		case o.unit != NoExpiry:
			i++
			s.Unit, expiry = o.unit, args[i]
		case o.cond != NoCondition:
			i++
			s.Cond, s.Match = o.cond, string(args[i])
		}
	}
	if s.Unit != NoExpiry {
		n, ok := ParseInt(expiry)
		switch {
		case !ok:
			return SetArgs{}, ErrNotInteger
		case n <= 0, (s.Unit == ex || s.Unit == exat) && n > math.MaxInt64/1000:
			return SetArgs{}, ErrExpireTime
		}
		s.expiry = n
	}
	s.Get = flags&flagGet != 0
	switch {
	case flags&(flagXX|flagKeepTTL) != 0, s.Get && s.Cond == NoCondition:
		return SetArgs{}, ErrSetOption
	case flags&flagNX == 0 && s.Cond == NoCondition:
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
	case ex, exat:
		if s.expiry > maxMillis/1000 {
			return 0, ErrExpireTime
		}
		ms = s.expiry * 1000
	default:
		ms = s.expiry
	}
	if s.Unit == exat || s.Unit == pxat {
		ms -= nowMillis
	}
	if ms <= 0 || ms > maxMillis {
		return 0, ErrExpireTime
	}
	return time.Duration(ms) * time.Millisecond, nil
}
