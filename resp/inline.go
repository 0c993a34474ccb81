package resp

// SplitInline splits an inline (telnet-style) command line, without its
// line ending, into arguments as Redis 7's sdssplitargs does: arguments
// are separated by spaces, tabs, CRs and LFs; "double quotes" take \xHH,
// \n, \r, \t, \b, \a and \<any> escapes; 'single quotes' take only \';
// a closing quote must be followed by a space or the end; a NUL byte ends
// the line, as in Redis's C string. It reports false for unbalanced
// quotes, which Redis refuses with a protocol error.
func SplitInline(line []byte) ([][]byte, bool) {
	for i, c := range line {
		if c == 0 {
			line = line[:i]
			break
		}
	}
	var args [][]byte
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		cur := []byte{}
		inq, insq := false, false
		for done := false; !done; {
			var c byte
			if i < len(line) {
				c = line[i]
			}
			end := i >= len(line)
			switch {
			case inq:
				switch {
				case end:
					return nil, false // unterminated quotes
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, unhexDigit(line[i+2])<<4|unhexDigit(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					cur = append(cur, unescape(line[i]))
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case end:
					return nil, false
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			default:
				switch {
				case end, c == ' ', c == '\n', c == '\r', c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if !end {
				i++
			}
		}
		args = append(args, cur)
	}
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhexDigit(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func unescape(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	}
	return c
}
