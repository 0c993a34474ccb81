package resp

import (
	"strconv"
	"strings"
)

// Writer is the part of a client connection a Reply writes to.
type Writer interface {
	WriteString(s string)
	WriteError(msg string)
	WriteInt64(n int64)
	WriteBulkString(s string)
	WriteNull()
	WriteArray(n int)
	WriteRaw(b []byte) // for RESP3's types, which redcon has no writer for
}

// Proto is the RESP version a connection speaks: 2 until HELLO 3.
type Proto uint8

const (
	RESP2 Proto = 2
	RESP3 Proto = 3
)

type kind uint8

const (
	kindNone kind = iota // the zero Reply: a handler bug
	kindStatus
	kindError
	kindInt
	kindBulk
	kindNull
	kindArray
	kindPush
	kindNullArray
	kindMap
	kindVerbatim
	kindDouble
	kindBigNumber
	kindSet
	kindVerbatimAs
)

// Reply is one reply value, written in the shape of the connection's
// protocol. The zero Reply is a bug; it is written
// as an internal error so that the client still gets one reply.
type Reply struct {
	kind  kind
	str   string
	n     int64
	items []Reply
}

// OK is the status reply +OK.
func OK() Reply { return Reply{kind: kindStatus, str: "OK"} }

// Status is a simple string reply such as +PONG.
func Status(s string) Reply { return Reply{kind: kindStatus, str: oneLine(s)} }

// Error is an error reply. msg starts with an upper-case code such as ERR
// or NOQUORUM; line breaks become spaces as Redis makes them (oneLine).
func Error(msg string) Reply { return Reply{kind: kindError, str: oneLine(msg)} }

// Int is an integer reply.
func Int(n int64) Reply { return Reply{kind: kindInt, n: n} }

// Bulk is a bulk string reply.
func Bulk(s string) Reply { return Reply{kind: kindBulk, str: s} }

// Null is the null reply: $-1 in RESP2, _ in RESP3.
func Null() Reply { return Reply{kind: kindNull} }

// NullArray is the null array, EXEC's reply when a watched key changed:
// *-1 in RESP2, _ in RESP3.
func NullArray() Reply { return Reply{kind: kindNullArray} }

// Array is an array reply of items.
func Array(items ...Reply) Reply { return Reply{kind: kindArray, items: items} }

// Push is an out-of-band message such as a pub/sub delivery. RESP2 has no
// push type, so it is written as an array there.
func Push(items ...Reply) Reply { return Reply{kind: kindPush, items: items} }

// Map is a map reply of alternating keys and values: a flat array in
// RESP2, as Redis sends HELLO's reply there.
func Map(kv ...Reply) Reply { return Reply{kind: kindMap, items: kv} }

// Double is a floating-point reply given as Redis writes it (such as a
// sorted set's score): a double in RESP3, a bulk string in RESP2.
func Double(text string) Reply { return Reply{kind: kindDouble, str: text} }

// Verbatim is a text reply such as INFO's: a bulk string in RESP2, a
// verbatim string of format txt in RESP3.
func Verbatim(s string) Reply { return Reply{kind: kindVerbatim, str: s} }

// BigNumber is a big number's digits: a big number in RESP3, a bulk
// string in RESP2.
func BigNumber(digits string) Reply { return Reply{kind: kindBigNumber, str: digits} }

// Set is a set reply: an array in RESP2.
func Set(items ...Reply) Reply { return Reply{kind: kindSet, items: items} }

// VerbatimAs is a verbatim string of the given format (a script's
// verbatim_string): its text alone, a bulk string, in RESP2. As Redis
// writes it, the format is cut at a NUL and to three bytes, and padded
// with spaces.
func VerbatimAs(format, text string) Reply {
	f := []byte("   ")
	copy(f, cutNUL(format))
	return Reply{kind: kindVerbatimAs, str: string(f) + ":" + text}
}

// ScriptStatus is a script's status reply ({ok = s}) as Redis writes it:
// cut at a NUL, each CR and LF a space, nothing trimmed.
func ScriptStatus(s string) Reply {
	return Reply{kind: kindStatus, str: spaced(cutNUL(s))}
}

// ScriptError is a script's error reply ({err = s}) as Redis writes it:
// cut at a NUL, line breaks trimmed at the end only, the rest spaces.
func ScriptError(s string) Reply {
	return Reply{kind: kindError, str: spaced(strings.TrimRight(cutNUL(s), "\r\n"))}
}

// cutNUL is s up to its first NUL, as C's strings end.
func cutNUL(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}

// spaced is s with each CR and LF made a space.
func spaced(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

// IsError reports whether r is an error reply.
func (r Reply) IsError() bool { return r.kind == kindError }

// IsNull reports whether r is the null reply.
func (r Reply) IsNull() bool { return r.kind == kindNull }

// Text is the string an error, status or bulk reply carries.
func (r Reply) Text() string { return r.str }

// Integer is the value an integer reply carries.
func (r Reply) Integer() (int64, bool) { return r.n, r.kind == kindInt }

// WriteProto writes r to w in the shapes of protocol p.
func (r Reply) WriteProto(w Writer, p Proto) {
	switch r.kind {
	case kindNone:
		w.WriteError("ERR internal error: no reply")
	case kindStatus:
		w.WriteString(r.str)
	case kindError:
		w.WriteError(r.str)
	case kindInt:
		w.WriteInt64(r.n)
	case kindBulk:
		w.WriteBulkString(r.str)
	case kindNull:
		if p == RESP3 {
			w.WriteRaw([]byte("_\r\n"))
		} else {
			w.WriteNull()
		}
	case kindNullArray:
		if p == RESP3 {
			w.WriteRaw([]byte("_\r\n"))
		} else {
			w.WriteArray(-1)
		}
	case kindVerbatim:
		if p == RESP3 {
			w.WriteRaw([]byte("=" + strconv.Itoa(len(r.str)+4) + "\r\ntxt:" + r.str + "\r\n"))
		} else {
			w.WriteBulkString(r.str)
		}
	case kindDouble, kindBigNumber:
		if p == RESP3 && r.kind == kindDouble {
			w.WriteRaw([]byte("," + r.str + "\r\n"))
		} else if p == RESP3 {
			w.WriteRaw([]byte("(" + r.str + "\r\n"))
		} else {
			w.WriteBulkString(r.str)
		}
	case kindVerbatimAs:
		if p == RESP3 {
			w.WriteRaw([]byte("=" + strconv.Itoa(len(r.str)) + "\r\n" + r.str + "\r\n"))
		} else {
			w.WriteBulkString(r.str[4:])
		}
	case kindArray, kindPush, kindMap, kindSet:
		switch {
		case p == RESP3 && r.kind == kindSet:
			w.WriteRaw([]byte("~" + strconv.Itoa(len(r.items)) + "\r\n"))
		case p == RESP3 && r.kind == kindPush:
			w.WriteRaw([]byte(">" + strconv.Itoa(len(r.items)) + "\r\n"))
		case p == RESP3 && r.kind == kindMap:
			w.WriteRaw([]byte("%" + strconv.Itoa(len(r.items)/2) + "\r\n"))
		default:
			w.WriteArray(len(r.items))
		}
		for _, it := range r.items {
			it.WriteProto(w, p)
		}
	}
}

// String renders r the way redis-cli would, for logs and test messages.
func (r Reply) String() string {
	switch r.kind {
	case kindStatus:
		return r.str
	case kindError:
		return "(error) " + r.str
	case kindInt:
		return "(integer) " + strconv.FormatInt(r.n, 10)
	case kindBulk, kindVerbatim, kindDouble, kindBigNumber, kindVerbatimAs:
		return `"` + r.str + `"`
	case kindNull, kindNullArray:
		return "(nil)"
	}
	parts := make([]string, len(r.items))
	for i, it := range r.items {
		parts[i] = it.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// oneLine keeps a status or error on one line as Redis does: line breaks
// at either end are trimmed, and each one inside becomes a space.
func oneLine(s string) string {
	return spaced(strings.Trim(s, "\r\n"))
}
