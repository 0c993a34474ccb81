package script

import (
	"slices"
	"strconv"
	"strings"
)

// Normalize rewrites a Lua script body as one line of canonical text,
// so that scripts differing only in layout compare equal: comments are
// dropped; tokens are separated by one space beside keywords, between
// statements and where two would otherwise run together, and by nothing
// elsewhere; strings are re-quoted with '"'; redis.pcall becomes
// redis.call and a literal command name passed to it is lower-cased;
// optional ';' statement separators are dropped, and so are parentheses
// around a whole if or elseif condition.
//
// Normalize does not check syntax. It returns "" for a body it cannot
// tokenize, such as one with a long string ([[...]]), an escape Lua 5.1
// does not define, or a byte that is not Lua.
func Normalize(body []byte) string {
	toks, ok := luaLex(body, false)
	if !ok {
		return ""
	}
	for {
		n := len(toks)
		toks = dropSemicolons(stripIfParens(toks))
		if len(toks) == n {
			break
		}
	}
	// Last, as a dropped ';' can bring "redis." and "call" together.
	canonCalls(toks)
	return renderLua(toks)
}

// canonCalls maps redis.pcall to redis.call and lower-cases a string
// literal passed as the command name. It changes toks in place.
func canonCalls(toks []luaToken) {
	for i := 2; i < len(toks); i++ {
		t := toks[i]
		if t.kind != lxName || t.text != "call" && t.text != "pcall" ||
			!isLuaOp(toks[i-1], ".") || !isLuaName(toks[i-2], "redis") ||
			i >= 3 && (isLuaOp(toks[i-3], ".") || isLuaOp(toks[i-3], ":")) {
			continue
		}
		toks[i].text = "call"
		if i+2 < len(toks) && isLuaOp(toks[i+1], "(") && toks[i+2].kind == lxString {
			toks[i+2].text = strings.ToLower(toks[i+2].text)
		}
	}
}

// stripIfParens drops "(" ... ")" when they enclose a whole if or elseif
// condition, as in "if (c) then", however deeply nested.
func stripIfParens(toks []luaToken) []luaToken {
	match := matchParens(toks)
	drop := make([]bool, len(toks))
	for i, t := range toks {
		if !isLuaName(t, "if") && !isLuaName(t, "elseif") {
			continue
		}
		open := i + 1
		if open >= len(toks) || match[open] < 0 || match[open]+1 >= len(toks) || !isLuaName(toks[match[open]+1], "then") {
			continue
		}
		for d, end := 0, match[open]; open+d < end-d && match[open+d] == end-d; d++ {
			drop[open+d], drop[end-d] = true, true
		}
	}
	out := toks[:0:0]
	for i, t := range toks {
		if !drop[i] {
			out = append(out, t)
		}
	}
	return out
}

// matchParens returns, for each "(", the index of its ")", or -1.
func matchParens(toks []luaToken) []int {
	match := make([]int, len(toks))
	var stack []int
	for i, t := range toks {
		match[i] = -1
		switch {
		case isLuaOp(t, "("):
			stack = append(stack, i)
		case isLuaOp(t, ")") && len(stack) > 0:
			match[stack[len(stack)-1]] = i
			stack = stack[:len(stack)-1]
		}
	}
	return match
}

// notAfterSemicolon are the words that must not follow a dropped ';',
// because they would then continue the statement before it.
var notAfterSemicolon = []string{"and", "or", "not", "then", "do", "in"}

// dropSemicolons drops each ';' that is followed by the end or by a word
// that can start a new statement. Any other ';' is kept: before "(", a
// string or "{", it stops the next statement from being read as a call.
func dropSemicolons(toks []luaToken) []luaToken {
	out := toks[:0:0]
	for i, t := range toks {
		if isLuaOp(t, ";") && (i+1 == len(toks) ||
			toks[i+1].kind == lxName && !slices.Contains(notAfterSemicolon, toks[i+1].text)) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// renderLua joins toks with a space beside each keyword (bar nil, true and
// false), between statements, and wherever two tokens would otherwise
// read back as something else.
func renderLua(toks []luaToken) string {
	var b strings.Builder
	prev := ""
	for i, t := range toks {
		s := t.text
		if t.kind == lxString {
			s = quoteLua(s)
		}
		if i > 0 && needsSpace(toks[i-1], prev, t, s) {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		prev = s
	}
	return b.String()
}

// luaClosers are the operators that can end an expression.
var luaClosers = []string{")", "]", "}", "..."}

// needsSpace reports whether a space goes between tokens pt and nt,
// written as prev and next.
func needsSpace(pt luaToken, prev string, nt luaToken, next string) bool {
	a, b := prev[len(prev)-1], next[0]
	switch {
	case isSpacedKeyword(pt) || isSpacedKeyword(nt):
		return true
	case (isValue(pt) || pt.kind == lxOp && slices.Contains(luaClosers, pt.text)) && isValue(nt):
		return true // the end of one statement and the start of the next
	case isLuaWordByte(a) && isLuaWordByte(b):
		return true
	case pt.kind == lxNumber && (isLuaWordByte(b) || b == '.'):
		return true
	case a == '.' && (b == '.' || isDecimalDigit(b)):
		return true
	case a == '-' && b == '-':
		return true
	case a == '[' && (b == '[' || b == '='):
		return true
	case strings.IndexByte("=<>~", a) >= 0 && b == '=':
		return true
	}
	return false
}

// quoteLua writes s as a '"' string that Lua 5.1 reads back as s.
func quoteLua(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			d := strconv.Itoa(int(c))
			b.WriteString(strings.Repeat("0", 3-len(d)) + d)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isSpacedKeyword(t luaToken) bool {
	return t.kind == lxName && t.text != "nil" && t.text != "true" && t.text != "false" &&
		slices.Contains(luaKeywords, t.text)
}

// isValue reports whether t is a name, number, string, nil, true or false.
func isValue(t luaToken) bool {
	return t.kind == lxNumber || t.kind == lxString || t.kind == lxName && !isSpacedKeyword(t)
}

func isLuaOp(t luaToken, op string) bool     { return t.kind == lxOp && t.text == op }
func isLuaName(t luaToken, name string) bool { return t.kind == lxName && t.text == name }
