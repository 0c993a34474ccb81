package proxy

import "math"

// The Framer stands in front of redcon v1.6.2's request reader, which has
// no limits of its own: a bulk length near MaxInt64 overflows its index
// arithmetic and panics, a huge multibulk count makes it loop count times
// on every read, and its inline splitter copies the rest of the line at
// every space and quote. The Framer accepts only the subset of RESP that
// redcon parses safely, and only within Limits.

// Ceilings that no Limits can lift, so that a misconfigured limit cannot
// reopen the holes above.
const (
	maxArgsCeiling   = 1 << 16 // redcon loops over the whole count on every read
	maxBulkCeiling   = 1 << 30 // keeps redcon's offset+length far from overflow
	maxInlineCeiling = 1 << 20 // redcon rescans a partial line on every read
	// maxCommandCeiling bounds one whole command: redcon doubles its
	// buffer until the command fits and then copies it once more.
	maxCommandCeiling = 1 << 30
	// maxInlineSplits caps how often redcon's splitter starts a new
	// argument buffer on one inline line: once at the start and once at
	// every space and quote outside quotes. Each costs an allocation of
	// the rest of the line, so the cap bounds the copying per line byte.
	maxInlineSplits = 32
)

// ProtocolError is a violation of the request framing. Its text is what
// the client is sent after "ERR ".
type ProtocolError struct {
	Msg string // what was wrong, in Redis's words where Redis has them
}

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

type frameState uint8

const (
	stCommand   frameState = iota // at a command boundary
	stCount                       // in the digits after '*'
	stCountLF                     // after the count's '\r'
	stDollar                      // expecting an argument's '$'
	stLen                         // in the digits after '$'
	stLenLF                       // after the length's '\r'
	stPayload                     // inside an argument's bytes
	stPayloadCR                   // expecting the '\r' after an argument
	stPayloadLF                   // expecting the '\n' after an argument
	stInline                      // inside an inline (telnet-style) line
)

// tokState follows redcon's inline splitter.
type tokState uint8

const (
	tokSpace  tokState = iota // between arguments
	tokWord                   // inside an unquoted argument
	tokQuoted                 // inside a quoted argument
	tokEscape                 // after a backslash inside quotes
	tokClosed                 // just after a closing quote
)

// Framer checks a client's byte stream, command by command, against
// Limits before redcon parses it. It accepts:
//
//   - multibulk commands: "*<n>\r\n" and then n arguments "$<len>\r\n",
//     len bytes and "\r\n", with 1 <= n <= MaxArgs and 0 <= len <=
//     MaxBulk, both written in plain decimal (no sign, no leading zero);
//   - inline commands: any line not starting with '*', at most MaxInline
//     bytes with its newline, with at most MaxArgs arguments, quotes that
//     redcon can pair, and fewer than 32 spaces and quote marks outside
//     quoted text;
//   - either kind of at most MaxCommand bytes in all. A multibulk command
//     is refused as soon as an argument's length would take it over, before
//     its payload is read.
//
// An empty multibulk (*0, or any negative count such as *-1), which Redis
// ignores, is accepted as no command; FeedCommand stops after it, so that
// the caller can drop it before redcon, which refuses it, sees it. Limits above fixed ceilings (65536 arguments, 1 GiB bulks, 1 MiB
// lines) are lowered to them. A Framer keeps a few counters and never the
// payload, and is not safe for concurrent use.
type Framer struct {
	lim, next Limits // the current command's limits; those for the next one
	err       *ProtocolError

	state    frameState
	num      int  // the count or length being read; -1 before its first digit
	args     int  // multibulk: arguments still to come; inline: arguments seen
	left     int  // payload bytes still to come
	pending  int  // bytes of the command in progress
	last     int  // bytes of the last command completed
	inlined  bool // the last command completed was an inline line
	commands int  // commands completed, not counting lines without arguments
	neg      bool // the count being read has a '-': an empty multibulk
	empty    bool // the last byte ended an empty multibulk

	// Inline line state.
	line   int  // bytes of the line so far, newline included
	splits int  // argument buffers redcon will have started
	cr     bool // the last byte was a '\r' that may end the line
	tok    tokState
	quote  byte
}

// NewFramer returns a Framer at the start of a stream, checking against
// l with its defaults applied.
func NewFramer(l Limits) *Framer {
	f := &Framer{}
	f.SetLimits(l)
	f.lim = f.next
	return f
}

// SetLimits switches the limits, for example from PreAuth to the full
// ones after AUTH. The command in progress keeps the old ones; the new
// ones apply from the next command.
func (f *Framer) SetLimits(l Limits) {
	l = l.WithDefaults()
	l.MaxArgs = min(l.MaxArgs, maxArgsCeiling)
	l.MaxBulk = min(l.MaxBulk, maxBulkCeiling)
	l.MaxInline = min(l.MaxInline, maxInlineCeiling)
	l.MaxCommand = min(l.MaxCommand, maxCommandCeiling)
	f.next = l
}

// Pending returns how many of the bytes accepted so far belong to a
// command that is not yet complete. Zero means they end at a command
// boundary.
func (f *Framer) Pending() int { return f.pending }

// Last returns the size in bytes of the last command completed, lines
// without arguments included.
func (f *Framer) Last() int { return f.last }

// LastInline reports whether the last command completed was an inline
// line.
func (f *Framer) LastInline() bool { return f.inlined }

// Feed checks p, continuing from the bytes fed before. It returns how many
// leading bytes of p are acceptable (complete commands and a valid partial
// prefix of the next), and a non-nil *ProtocolError when p[n] begins a
// violation; once it has returned an error it keeps returning it, with n
// zero. Feed takes time linear in len(p).
func (f *Framer) Feed(p []byte) (n int, err error) {
	n, _, err = f.feed(p, false)
	return n, err
}

// FeedCommand is Feed, except that it stops after the first command that
// p completes, and reports whether it did. Inline lines without
// arguments, which redcon skips, do not count as commands.
func (f *Framer) FeedCommand(p []byte) (n int, done bool, err error) {
	return f.feed(p, true)
}

func (f *Framer) feed(p []byte, stop bool) (int, bool, error) {
	if f.err != nil {
		return 0, false, f.err
	}
	for i := 0; i < len(p); {
		if f.state == stPayload {
			// Skip the payload without looking at it.
			k := min(f.left, len(p)-i)
			f.left -= k
			f.pending += k
			i += k
			if f.left == 0 {
				f.state = stPayloadCR
			}
			continue
		}
		f.pending++
		done := f.commands
		f.empty = false
		var e *ProtocolError
		if f.pending > f.lim.MaxCommand {
			e = protocolError("too big command")
		} else {
			e = f.step(p[i])
		}
		if e != nil {
			f.err = e
			return i, false, e
		}
		i++
		if stop && (f.commands != done || f.empty) {
			return i, f.commands != done, nil
		}
	}
	return len(p), false, nil
}

// step advances the state machine by one byte outside a payload.
func (f *Framer) step(c byte) *ProtocolError {
	switch f.state {
	case stCommand:
		f.lim = f.next
		if c != '*' {
			f.state, f.line, f.args, f.splits, f.cr, f.tok = stInline, 0, 0, 1, false, tokSpace
			return f.inline(c)
		}
		f.state, f.num, f.neg = stCount, -1, false
	case stCount:
		switch {
		case c == '\r' && f.num >= 0:
			f.state = stCountLF
		case c == '-' && f.num < 0 && !f.neg:
			f.neg = true
		case c == '0' && f.neg && f.num < 0: // -0 and leading zeros, as Redis's string2ll
			return protocolError("invalid multibulk length")
		case f.neg && !f.digit(c, math.MaxInt):
			return protocolError("invalid multibulk length")
		case !f.neg && !f.digit(c, f.lim.MaxArgs):
			return protocolError("invalid multibulk length")
		}
	case stCountLF:
		if c != '\n' {
			return protocolError("invalid multibulk length")
		}
		if f.num == 0 || f.neg { // Redis ignores it
			f.state, f.last, f.pending, f.empty = stCommand, f.pending, 0, true
			return nil
		}
		f.state, f.args = stDollar, f.num
	case stDollar:
		if c != '$' {
			// Redis's wording; a stray line break becomes a space so
			// that it cannot split the error reply.
			got := string([]byte{c})
			if c == '\r' || c == '\n' {
				got = " "
			}
			return protocolError("expected '$', got '" + got + "'")
		}
		f.state, f.num = stLen, -1
	case stLen:
		switch {
		case c == '\r' && f.num >= 0:
			f.state = stLenLF
		case !f.digit(c, f.lim.MaxBulk):
			return protocolError("invalid bulk length")
		}
	case stLenLF:
		if c != '\n' {
			return protocolError("invalid bulk length")
		}
		if f.pending+f.num+2 > f.lim.MaxCommand {
			return protocolError("too big command")
		}
		f.state, f.left = stPayload, f.num
		if f.left == 0 {
			f.state = stPayloadCR
		}
	case stPayloadCR:
		if c != '\r' {
			return protocolError("invalid bulk length")
		}
		f.state = stPayloadLF
	case stPayloadLF:
		if c != '\n' {
			return protocolError("invalid bulk length")
		}
		f.args--
		f.state = stDollar
		if f.args == 0 {
			f.state, f.last, f.pending = stCommand, f.pending, 0
			f.commands++
			f.inlined = false
		}
	case stInline:
		return f.inline(c)
	}
	return nil
}

// digit appends the decimal digit c to f.num. It reports false if c is no
// digit, would be a leading zero, or would take f.num past limit; checking
// before multiplying means f.num cannot overflow.
func (f *Framer) digit(c byte, limit int) bool {
	if c < '0' || c > '9' || f.num == 0 {
		return false
	}
	d := int(c - '0')
	n := max(f.num, 0)
	if d > limit || n > (limit-d)/10 {
		return false
	}
	f.num = n*10 + d
	return true
}

// inline checks one byte of an inline line. redcon takes the line up to
// the first '\n', less one '\r' just before it, so a '\r' is only judged
// once the next byte shows whether it ends the line.
func (f *Framer) inline(c byte) *ProtocolError {
	f.line++
	if f.line > f.lim.MaxInline {
		return protocolError("too big inline request")
	}
	if f.cr {
		f.cr = false
		if c == '\n' {
			return f.endLine()
		}
		if e := f.split('\r'); e != nil {
			return e
		}
	}
	switch c {
	case '\r':
		f.cr = true
		return nil
	case '\n':
		return f.endLine()
	}
	return f.split(c)
}

// split follows redcon's splitter over one byte of the line: arguments
// are separated by spaces, a quote may only open an argument and must be
// followed by a space or the end of the line, and a backslash inside
// quotes escapes the next byte.
func (f *Framer) split(c byte) *ProtocolError {
	switch f.tok {
	case tokSpace:
		switch c {
		case ' ':
			f.splits++
		case '"', '\'':
			f.tok, f.quote = tokQuoted, c
			f.args++
			f.splits++
		default:
			f.tok = tokWord
			f.args++
		}
	case tokWord:
		switch c {
		case ' ':
			f.tok = tokSpace
			f.splits++
		case '"', '\'':
			return protocolError("unbalanced quotes in request")
		}
	case tokQuoted:
		switch c {
		case '\\':
			f.tok = tokEscape
		case f.quote:
			f.tok = tokClosed
			f.splits++
		}
	case tokEscape:
		f.tok = tokQuoted
	case tokClosed:
		if c != ' ' {
			return protocolError("unbalanced quotes in request")
		}
		f.tok = tokSpace
		f.splits++
	}
	switch {
	case f.args > f.lim.MaxArgs:
		return protocolError("too many arguments in inline request")
	case f.splits > maxInlineSplits:
		return protocolError("too many spaces and quotes in inline request")
	}
	return nil
}

func (f *Framer) endLine() *ProtocolError {
	if f.tok == tokQuoted || f.tok == tokEscape {
		return protocolError("unbalanced quotes in request")
	}
	f.state, f.last, f.pending = stCommand, f.pending, 0
	if f.args > 0 {
		f.commands++
		f.inlined = true
	}
	return nil
}

func protocolError(msg string) *ProtocolError { return &ProtocolError{Msg: msg} }
