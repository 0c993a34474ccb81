package pubsub

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxPayload bounds one bulk string a node may send: far above any lock
// notification, and small enough that a broken stream cannot make the
// proxy allocate without limit.
const maxPayload = 4 << 20

// errProtocol is a reply the subscriber does not understand; the
// connection is dropped and dialed again.
var errProtocol = errors.New("pubsub: protocol error")

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}

// value is one RESP2 reply from a node: a status, error, integer, bulk
// (nil when null) or array.
type value struct {
	kind  byte // '+', '-', ':', '$', '*'
	str   string
	n     int64
	null  bool
	items []value
}

// readValue reads one reply; arrays may nest one level, as pub/sub
// replies never nest deeper.
func readValue(r *bufio.Reader, depth int) (value, error) {
	line, err := readLine(r)
	if err != nil {
		return value{}, err
	}
	if len(line) == 0 {
		return value{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	v := value{kind: line[0]}
	switch v.kind {
	case '+', '-':
		v.str = string(line[1:])
		return v, nil
	case ':':
		v.n, err = strconv.ParseInt(string(line[1:]), 10, 64)
		if err != nil {
			return value{}, fmt.Errorf("%w: integer %q", errProtocol, line)
		}
		return v, nil
	case '$':
		n, err := strconv.Atoi(string(line[1:]))
		switch {
		case err != nil || n < -1 || n > maxPayload:
			return value{}, fmt.Errorf("%w: bulk length %q", errProtocol, line)
		case n == -1:
			v.null = true
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return value{}, err
		}
		v.str = string(buf[:n])
		return v, nil
	case '*':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < -1 || n > 8 || depth > 1 {
			return value{}, fmt.Errorf("%w: array %q", errProtocol, line)
		}
		for range n {
			it, err := readValue(r, depth+1)
			if err != nil {
				return value{}, err
			}
			v.items = append(v.items, it)
		}
		return v, nil
	}
	return value{}, fmt.Errorf("%w: reply type %q", errProtocol, line[0])
}

// readLine reads one CRLF-terminated line, without the CRLF.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, fmt.Errorf("%w: line too long", errProtocol)
	case err != nil:
		return nil, err
	case len(line) < 2 || line[len(line)-2] != '\r':
		return nil, fmt.Errorf("%w: line without CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}
