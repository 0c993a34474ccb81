package integration

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// respValue is one reply exactly as the server sent it, RESP3 types
// included, so that two servers' replies compare type for type: a status
// is not a bulk string, a nil bulk is not a nil array, RESP3's null is
// neither.
type respValue struct {
	kind  byte // the type byte; 'N' is RESP2's nil bulk ($-1), 'A' its nil array (*-1)
	text  string
	items []respValue
}

// readRESP reads one reply of either protocol.
func readRESP(r *bufio.Reader) (respValue, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return respValue{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return respValue{}, fmt.Errorf("bad reply line %q", line)
	}
	kind, rest := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':', '_', '#', ',', '(':
		return respValue{kind: kind, text: rest}, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(rest)
		if err != nil || n > 1<<20 {
			return respValue{}, fmt.Errorf("bad length in %q", line)
		}
		if n < 0 {
			return respValue{kind: 'N'}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return respValue{}, err
		}
		return respValue{kind: kind, text: string(buf[:n])}, nil
	case '*', '%', '~', '>', '|':
		n, err := strconv.Atoi(rest)
		if err != nil || n > 1<<16 {
			return respValue{}, fmt.Errorf("bad count in %q", line)
		}
		if n < 0 {
			return respValue{kind: 'A'}, nil
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		v := respValue{kind: kind, items: make([]respValue, n)}
		for i := range v.items {
			if v.items[i], err = readRESP(r); err != nil {
				return respValue{}, err
			}
		}
		if kind == '|' { // an attribute precedes the reply it describes
			return readRESP(r)
		}
		return v, nil
	}
	return respValue{}, fmt.Errorf("unknown reply type in %q", line)
}

// String renders v with its type: +OK, -ERR …, :1, $"tok", $nil, *nil,
// _, *[…], %{k v …}, >[…].
func (v respValue) String() string {
	switch v.kind {
	case '+', '-', ':', '#', ',', '(':
		return string(v.kind) + v.text
	case '_':
		return "_"
	case 'N':
		return "$nil"
	case 'A':
		return "*nil"
	case '$', '=', '!':
		return string(v.kind) + strconv.Quote(v.text)
	}
	parts := make([]string, len(v.items))
	for i, it := range v.items {
		parts[i] = it.String()
	}
	if v.kind == '%' {
		return "%{" + strings.Join(parts, " ") + "}"
	}
	return string(v.kind) + "[" + strings.Join(parts, " ") + "]"
}

// isError reports whether v is an error reply.
func (v respValue) isError() bool { return v.kind == '-' }

// integer returns an integer reply's value.
func (v respValue) integer() (int64, bool) {
	if v.kind != ':' {
		return 0, false
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	return n, err == nil
}
