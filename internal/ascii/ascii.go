// Package ascii folds the case of names as Redis compares them: A-Z only
// (strcasecmp), so a letter that folds to ASCII by Unicode's rules alone
// (a Kelvin sign, a dotless i, a long s) matches no name.
package ascii

// AppendLower appends b to dst with A-Z lowered.
func AppendLower[T ~string | ~[]byte](dst []byte, b T) []byte {
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// Lower is b with A-Z lowered and every other byte as it is.
func Lower[T ~string | ~[]byte](b T) string {
	return string(AppendLower(make([]byte, 0, len(b)), b))
}

// Upper is b with a-z raised and every other byte as it is.
func Upper[T ~string | ~[]byte](b T) string {
	out := make([]byte, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}

// EqualFold reports whether a and b are equal with A-Z folded.
func EqualFold[A, B ~string | ~[]byte](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
