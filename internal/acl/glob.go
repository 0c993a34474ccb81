package acl

// Match reports whether s matches the glob pattern, with the rules of
// Redis's stringmatchlen (KEYS, ACL key patterns): * any run of bytes, ?
// one byte, [abc] [^abc] [a-z] one byte of a set, \x the byte x. Bytes
// are compared exactly. An unterminated [ set ends with the pattern.
func Match(pattern string, s []byte) bool {
	giveUp := false
	return match(pattern, s, &giveUp)
}

// match is one step of Match. giveUp is set once a * has tried every
// remaining suffix of s in vain: a later * cannot do better, and stopping
// there keeps patterns like *a*a*a*b from taking exponential time.
func match(p string, s []byte, giveUp *bool) bool {
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 1 && p[1] == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if match(p[1:], s, giveUp) {
					return true
				}
				if *giveUp {
					return false
				}
				s = s[1:]
			}
			*giveUp = true
			return false
		case '?':
		case '[':
			var ok bool
			ok, p = matchSet(p, s[0])
			if !ok {
				return false
			}
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			if p[0] != s[0] {
				return false
			}
		default:
			if p[0] != s[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// matchSet matches b against the set that opens p (p[0] is '['). It
// returns whether b is in it and p from the set's last byte (its ']', or
// the pattern's last byte when the set is unterminated).
func matchSet(p string, b byte) (bool, string) {
	p = p[1:]
	not := len(p) > 0 && p[0] == '^'
	if not {
		p = p[1:]
	}
	in := false
	for {
		switch {
		case len(p) == 0:
			// Unterminated: the set runs to the end of the pattern. Return
			// its last byte so that the caller's step consumes it.
			return in != not, " "
		case p[0] == '\\' && len(p) >= 2:
			p = p[1:]
			if p[0] == b {
				in = true
			}
		case p[0] == ']':
			return in != not, p
		case len(p) >= 3 && p[1] == '-':
			lo, hi := p[0], p[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			if b >= lo && b <= hi {
				in = true
			}
			p = p[2:]
		case p[0] == b:
			in = true
		}
		p = p[1:]
	}
}
