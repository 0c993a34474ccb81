package lua

import "strings"

// Quote writes s as a double-quoted Lua 5.1 string literal that reads
// back as s, whatever its bytes: printable ASCII as itself, and every
// other byte, '"' and '\' as a three-digit decimal escape (always three
// digits, so that a digit after it is not read into it). Lua 5.1 and
// gopher-lua read it alike, which is why admission's reprint and the
// masters' wrapper write every string this way.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('\\')
		b.WriteByte('0' + c/100)
		b.WriteByte('0' + c/10%10)
		b.WriteByte('0' + c%10)
	}
	b.WriteByte('"')
	return b.String()
}
