package script

import (
	"strconv"
	"strings"
)

// luaTokKind is the class of a Lua token.
type luaTokKind uint8

const (
	lxName   luaTokKind = iota // identifier or keyword
	lxNumber                   // numeric literal, as written
	lxString                   // string literal; text is the decoded value
	lxOp                       // operator or punctuation
	lxHole                     // $name: a template hole, never in a script
)

// luaToken is one Lua token. nl is set when a line break comes before it,
// which Lua 5.1 needs to reject "f\n(x)" as ambiguous.
type luaToken struct {
	kind luaTokKind
	text string
	nl   bool
}

// luaOps are Lua 5.1's multi-byte operators, longest first, then the
// single-byte ones. There is no lone "~" in Lua 5.1.
var luaOps = []string{"...", "..", "==", "~=", "<=", ">=",
	"+", "-", "*", "/", "%", "^", "#", "<", ">", "=",
	"(", ")", "{", "}", "]", ";", ":", ",", ".", "["}

// luaLex splits Lua 5.1 source into tokens, dropping white space and
// comments. It reports false for anything it does not fully understand:
// long strings, escapes other than Lua 5.1's named and decimal ones,
// malformed numbers, stray bytes. holes admits $name (templates only).
func luaLex(src []byte, holes bool) ([]luaToken, bool) {
	l := luaLexer{src: string(src)}
	for {
		if !l.skipSpace() {
			return nil, false
		}
		if l.pos >= len(l.src) {
			return l.toks, true
		}
		var ok bool
		switch c := l.src[l.pos]; {
		case isLuaNameStart(c):
			l.emit(lxName, l.word(l.pos))
			ok = true
		case isDecimalDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDecimalDigit(l.src[l.pos+1]):
			ok = l.number()
		case c == '"' || c == '\'':
			ok = l.str(c)
		case c == '$' && holes && l.pos+1 < len(l.src) && isLuaNameStart(l.src[l.pos+1]):
			start := l.pos
			l.word(l.pos + 1)
			l.emit(lxHole, l.src[start:l.pos])
			ok = true
		case c == '[' && l.pos+1 < len(l.src) && (l.src[l.pos+1] == '[' || l.src[l.pos+1] == '='):
			ok = false // a long string, or an invalid long bracket
		default:
			ok = l.op()
		}
		if !ok {
			return nil, false
		}
	}
}

type luaLexer struct {
	src  string
	pos  int
	nl   bool
	toks []luaToken
}

func (l *luaLexer) emit(k luaTokKind, text string) {
	l.toks = append(l.toks, luaToken{kind: k, text: text, nl: l.nl})
	l.nl = false
}

// skipSpace skips white space and comments. It reports false for an
// unterminated or (in Lua 5.1) nested block comment.
func (l *luaLexer) skipSpace() bool {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n' || c == '\r':
			l.nl = true
			l.pos++
		case c == ' ' || c == '\t' || c == '\v' || c == '\f':
			l.pos++
		case strings.HasPrefix(l.src[l.pos:], "--"):
			l.pos += 2
			if level, ok := l.openLevel(); ok {
				if !l.skipLong(level) {
					return false
				}
				continue
			}
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		default:
			return true
		}
	}
	return true
}

// openLevel consumes a long bracket "[==[" at pos and returns its level.
func (l *luaLexer) openLevel() (int, bool) {
	rest := l.src[l.pos:]
	if !strings.HasPrefix(rest, "[") {
		return 0, false
	}
	n := 1
	for n < len(rest) && rest[n] == '=' {
		n++
	}
	if n >= len(rest) || rest[n] != '[' {
		return 0, false
	}
	l.pos += n + 1
	return n - 1, true
}

// skipLong skips to the "]==]" closing a long comment of the given level.
// Lua 5.1 (LUA_COMPAT_LSTR) rejects "[[" inside a level-0 one.
func (l *luaLexer) skipLong(level int) bool {
	closer := "]" + strings.Repeat("=", level) + "]"
	end := strings.Index(l.src[l.pos:], closer)
	if end < 0 {
		return false
	}
	body := l.src[l.pos : l.pos+end]
	if level == 0 && strings.Contains(body, "[[") {
		return false
	}
	if strings.ContainsAny(body, "\r\n") {
		l.nl = true
	}
	l.pos += end + len(closer)
	return true
}

func (l *luaLexer) word(start int) string {
	end := start
	for end < len(l.src) && isLuaWordByte(l.src[end]) {
		end++
	}
	l.pos = end
	return l.src[start:end]
}

// number scans a numeral the way Lua 5.1's read_numeral does, then
// accepts only decimal and 0x-hex forms.
func (l *luaLexer) number() bool {
	start := l.pos
	for l.pos < len(l.src) && (isDecimalDigit(l.src[l.pos]) || l.src[l.pos] == '.') {
		l.pos++
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		l.pos++
		if l.pos < len(l.src) && (l.src[l.pos] == '+' || l.src[l.pos] == '-') {
			l.pos++
		}
	}
	for l.pos < len(l.src) && isLuaWordByte(l.src[l.pos]) {
		l.pos++
	}
	text := l.src[start:l.pos]
	if !validNumber(text) {
		return false
	}
	l.emit(lxNumber, text)
	return true
}

func validNumber(s string) bool {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		_, err := strconv.ParseUint(s[2:], 16, 64)
		return err == nil
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if intPart+frac == "" || !allDecimal(intPart) || !allDecimal(frac) {
		return false
	}
	if hasExp {
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		return exp != "" && allDecimal(exp)
	}
	return true
}

// str scans a quoted string and decodes its escapes.
func (l *luaLexer) str(quote byte) bool {
	var b strings.Builder
	l.pos++
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == quote:
			l.pos++
			l.emit(lxString, b.String())
			return true
		case c == '\n' || c == '\r':
			return false
		case c == '\\':
			if !l.escape(&b) {
				return false
			}
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
	return false
}

// luaEscapes are Lua 5.1's named escapes. Any other letter is refused:
// Lua 5.1 would read "\x41" as "x41", later Luas as "A".
var luaEscapes = map[byte]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r',
	't': '\t', 'v': '\v', '\\': '\\', '"': '"', '\'': '\''}

func (l *luaLexer) escape(b *strings.Builder) bool {
	l.pos++ // the backslash
	if l.pos >= len(l.src) {
		return false
	}
	c := l.src[l.pos]
	switch {
	case luaEscapes[c] != 0:
		b.WriteByte(luaEscapes[c])
		l.pos++
	case c == '\n' || c == '\r':
		b.WriteByte('\n')
		l.pos++
		if l.pos < len(l.src) && (l.src[l.pos] == '\n' || l.src[l.pos] == '\r') && l.src[l.pos] != c {
			l.pos++
		}
	case isDecimalDigit(c):
		v := 0
		for i := 0; i < 3 && l.pos < len(l.src) && isDecimalDigit(l.src[l.pos]); i++ {
			v = 10*v + int(l.src[l.pos]-'0')
			l.pos++
		}
		if v > 255 {
			return false
		}
		b.WriteByte(byte(v))
	default:
		return false
	}
	return true
}

func (l *luaLexer) op() bool {
	for _, o := range luaOps {
		if strings.HasPrefix(l.src[l.pos:], o) {
			l.pos += len(o)
			l.emit(lxOp, o)
			return true
		}
	}
	return false
}

func isDecimalDigit(c byte) bool { return '0' <= c && c <= '9' }
func isLuaNameStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isLuaWordByte(c byte) bool  { return isLuaNameStart(c) || isDecimalDigit(c) }

func allDecimal(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDecimalDigit(s[i]) {
			return false
		}
	}
	return true
}
