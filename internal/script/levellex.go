package script

import (
	"bytes"

	"github.com/yuin/gopher-lua/parse"
)

// levelLexer reads Lua 5.1 tokens as llex.c does, for syntaxLevels: only
// each token's type and the line the lexer is on, with no allocation. It
// reports false where llex.c raises an error; the full parse then names
// it.
type levelLexer struct {
	src    []byte
	pos    int
	line   int // the line of the last byte read, as llex.c counts lines
	tokens int // tokens read
}

var levelKeywords = map[string]int{
	"and": parse.TAnd, "break": parse.TBreak, "do": parse.TDo, "else": parse.TElse,
	"elseif": parse.TElseIf, "end": parse.TEnd, "false": parse.TFalse, "for": parse.TFor,
	"function": parse.TFunction, "if": parse.TIf, "in": parse.TIn, "local": parse.TLocal,
	"nil": parse.TNil, "not": parse.TNot, "or": parse.TOr, "repeat": parse.TRepeat,
	"return": parse.TReturn, "then": parse.TThen, "true": parse.TTrue, "until": parse.TUntil,
	"while": parse.TWhile,
}

func (l *levelLexer) peek(i int) byte {
	if l.pos+i < len(l.src) {
		return l.src[l.pos+i]
	}
	return 0
}

// newline steps over one line end ("\n", "\r", "\r\n" or "\n\r").
func (l *levelLexer) newline() {
	c := l.src[l.pos]
	l.pos++
	if n := l.peek(0); (n == '\n' || n == '\r') && n != c {
		l.pos++
	}
	l.line++
}

func (l *levelLexer) scan() (int, bool) {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n' || c == '\r':
			l.newline()
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			l.pos++
		case c == '-' && l.peek(1) == '-':
			l.pos += 2
			if l.peek(0) == '[' {
				if level, ok := l.longOpen(); ok {
					if !l.longRest(level) {
						return 0, false
					}
					continue
				}
			}
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		default:
			l.tokens++
			return l.token(c)
		}
	}
	return parse.EOF, true
}

func (l *levelLexer) token(c byte) (int, bool) {
	switch {
	case isWordByte(c) && !isDigitByte(c):
		start := l.pos
		for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
			l.pos++
		}
		if t, ok := levelKeywords[string(l.src[start:l.pos])]; ok { // no allocation: a map index
			return t, true
		}
		return parse.TIdent, true
	case isDigitByte(c), c == '.' && isDigitByte(l.peek(1)):
		// read_numeral: digits and dots, an exponent's sign, then any
		// name bytes; its value is checked by the full parse.
		for isDigitByte(l.peek(0)) || l.peek(0) == '.' {
			l.pos++
		}
		if e := l.peek(0); e == 'e' || e == 'E' {
			l.pos++
			if s := l.peek(0); s == '+' || s == '-' {
				l.pos++
			}
		}
		for l.pos < len(l.src) && isWordByte(l.src[l.pos]) {
			l.pos++
		}
		return parse.TNumber, true
	case c == '"' || c == '\'':
		return parse.TString, l.quoted(c)
	case c == '[':
		if l.peek(1) == '[' || l.peek(1) == '=' {
			level, ok := l.longOpen()
			return parse.TString, ok && l.longRest(level)
		}
	case c == '.' && l.peek(1) == '.':
		if l.peek(2) == '.' {
			l.pos += 3
			return parse.T3Comma, true
		}
		l.pos += 2
		return parse.T2Comma, true
	case c == '=' || c == '<' || c == '>' || c == '~':
		if l.peek(1) == '=' {
			l.pos += 2
			return map[byte]int{'=': parse.TEqeq, '<': parse.TLte, '>': parse.TGte, '~': parse.TNeq}[c], true
		}
	}
	l.pos++
	return int(c), true // a one-byte token; a stray byte is a syntax error
}

// quoted reads a quoted string; a line end in it is an error, as is its
// end of text.
func (l *levelLexer) quoted(q byte) bool {
	l.pos++
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; c {
		case q:
			l.pos++
			return true
		case '\n', '\r':
			return false
		case '\\':
			l.pos++
			if l.pos >= len(l.src) {
				return false
			}
			if n := l.src[l.pos]; n == '\n' || n == '\r' {
				l.newline()
			} else {
				l.pos++
			}
		default:
			l.pos++
		}
	}
	return false
}

// longOpen reads "[", "="s and "[" and returns the level; false (having
// read nothing) if it is no long bracket.
func (l *levelLexer) longOpen() (int, bool) {
	n := 1
	for l.peek(n) == '=' {
		n++
	}
	if l.peek(n) != '[' {
		return 0, false
	}
	l.pos += n + 1
	return n - 1, true
}

// longRest reads a long string or comment to its closing bracket.
func (l *levelLexer) longRest(level int) bool {
	closer := append([]byte{']'}, bytes.Repeat([]byte{'='}, level)...)
	closer = append(closer, ']')
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n' || c == '\r':
			l.newline()
		case c == ']' && bytes.HasPrefix(l.src[l.pos:], closer):
			l.pos += len(closer)
			return true
		default:
			l.pos++
		}
	}
	return false
}
