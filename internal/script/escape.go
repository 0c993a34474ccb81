package script

import "github.com/yuin/gopher-lua/ast"

// gopher-lua reads a decimal escape over 255 ("\300") as its value mod
// 256, where Lua 5.1 refuses the script ("escape sequence too large");
// the tree keeps only the value, so the escape is looked for in the
// quoted string's own bytes.

// lineStarts is the offset in body of each line's first byte, lines
// counted as gopher-lua's scanner counts them ("\r\n" and "\n\r" are one
// line end).
func lineStarts(body []byte) []int {
	starts := []int{0}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c == '\n' || c == '\r' {
			if i+1 < len(body) && (body[i+1] == '\n' || body[i+1] == '\r') && body[i+1] != c {
				i++
			}
			starts = append(starts, i+1)
		}
	}
	return starts
}

// tokenBytes is the text of the token from start to end (the positions of
// its first and last byte, as gopher-lua's scanner gives them), or nil.
func tokenBytes(body []byte, starts []int, start, end ast.Position) []byte {
	offset := func(p ast.Position) int {
		if p.Line < 1 || p.Line > len(starts) || p.Column < 1 {
			return -1
		}
		return starts[p.Line-1] + p.Column - 1
	}
	from, to := offset(start), offset(end)
	if from < 0 || to < from || to >= len(body) {
		return nil
	}
	return body[from : to+1]
}

// escapeTooLarge reports whether the quoted string s has a decimal escape
// over 255.
func escapeTooLarge(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		n, j := 0, i
		for ; j < len(s) && j < i+3 && isDigitByte(s[j]); j++ {
			n = n*10 + int(s[j]-'0')
		}
		if n > 255 {
			return true
		}
		if j > i {
			i = j - 1
		}
	}
	return false
}
