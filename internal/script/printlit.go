package script

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
)

// Names, strings and numbers, as print.go writes them.

// luaKeywords are Lua 5.1's reserved words.
var luaKeywords = []string{"and", "break", "do", "else", "elseif", "end", "false",
	"for", "function", "if", "in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while"}

// isName reports whether s can be written as a Lua name.
func isName(s string) bool {
	// goto is no Lua 5.1 word, but gopher-lua reserves it.
	if s == "" || isDigitByte(s[0]) || slices.Contains(luaKeywords, s) || s == "goto" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

var (
	decimalNumeral = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	hexNumeral     = regexp.MustCompile(`^0[xX][0-9a-fA-F]+$`)
)

// luaNumber is the value of a numeral as gopher-lua's lexer wrote it:
// decimal, or hexadecimal integer. Anything else (gopher-lua lexes "3e)"
// as one numeral), or a value out of range, is refused.
func luaNumber(text string) (float64, error) {
	if hexNumeral.MatchString(text) {
		n, err := strconv.ParseUint(text[2:], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("the number %s is out of range", text)
		}
		return float64(n), nil
	}
	if !decimalNumeral.MatchString(text) {
		return 0, fmt.Errorf("the number %q is malformed", text)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("the number %s is out of range", text)
	}
	return f, nil
}

// formatNumber writes f (finite, not negative) so that Lua 5.1's strtod
// reads the same double: the shortest decimal that round-trips.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && f < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
