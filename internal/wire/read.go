package wire

import (
	"bytes"
	"errors"
	"io"
)

// Error is an error reply, such as "ERR unknown command" or "NOSCRIPT
// ...". Its RedisError method is go-redis's mark of a reply (as opposed
// to an I/O failure): redis.HasErrorPrefix and errors.As into a
// redis.Error see it as one.
type Error string

func (e Error) Error() string { return string(e) }

// RedisError marks e as a reply from the server.
func (Error) RedisError() {}

// ErrProtocol is what Next returns for bytes that are not a RESP2 reply;
// the connection cannot be used after it.
var ErrProtocol = errors.New("wire: protocol error")

var ok any = "OK"

// maxDepth bounds nested arrays, as Redis bounds a script's reply.
const maxDepth = 1024

// Reader reads replies from r into a buffer of its own. A read that fails
// (a deadline) loses nothing: the bytes read so far stay buffered, and
// the next call to Next goes on from them.
type Reader struct {
	r     io.Reader
	buf   []byte
	head  int // the first unparsed byte
	tail  int // the end of what was read
	reads int // how many reads returned bytes
	// A reply that did not all arrive in one read is scanned for its end
	// as its bytes arrive, then parsed once: parsing it again from its
	// start after each read would cost the square of its length.
	sc scanner
	// last is the last short bulk string reply, as returned: the same
	// reply again (a script's answer, call after call) is returned as it
	// was, without allocating its string and its interface again.
	last any
	// lastInts is the last short array of integers (a release's codes)
	// and lastRaw its bytes: the same bytes again are the same reply,
	// returned as it was. Its callers only read it.
	lastInts any
	lastRaw  []byte
}

// maxReused is the longest bulk string reply that Next keeps to return
// again.
const maxReused = 64

// NewReader reads from r, with a buffer of size bytes to start with.
func NewReader(r io.Reader, size int) *Reader {
	return &Reader{r: r, buf: make([]byte, max(size, 512))}
}

// Reads reports how many reads have returned bytes: a caller that needs
// to know when a reply came can read the clock once per read.
func (rd *Reader) Reads() int { return rd.reads }

// Buffered reports how many bytes are read but not yet parsed.
func (rd *Reader) Buffered() int { return rd.tail - rd.head }

// Next reads one whole reply and returns it as go-redis does over RESP2:
// a simple or bulk string as a string, an integer as an int64, an array
// as []any, a nil bulk string or array as nil, and an error reply as an
// Error value (not as the error result, which is for I/O and protocol
// failures only).
func (rd *Reader) Next() (any, error) {
	for {
		if rd.tail > rd.head {
			b := rd.buf[rd.head:rd.tail]
			scanned := rd.sc.pos > 0 || len(rd.sc.left) > 0
			if scanned {
				// Part of this reply came before: parse it once it is all here.
				end, err := rd.sc.scan(b)
				if err != nil {
					return nil, err
				}
				b = b[:end]
			}
			if len(b) > 0 {
				v, n, err := rd.parseTop(b)
				switch {
				case err != nil:
					return nil, err
				case n > 0:
					rd.head += n
					if rd.head == rd.tail {
						rd.head, rd.tail = 0, 0
					}
					return v, nil
				case scanned:
					return nil, ErrProtocol // the scan found an end the parse does not
				}
				// Not all here: scan what is, then only what comes.
				if _, err := rd.sc.scan(b); err != nil {
					return nil, err
				}
			}
		}
		if err := rd.fill(); err != nil {
			return nil, err
		}
	}
}

// scanner finds where a reply ends, as its bytes arrive, without parsing
// it: it resumes where it stopped.
type scanner struct {
	pos  int     // the bytes of the reply scanned so far
	left []int64 // for each array open at pos, outermost first, the items still to come
}

// scan goes on scanning the reply that b begins with. It returns the
// reply's length once b holds all of it, and resets; 0 until then.
func (s *scanner) scan(b []byte) (int, error) {
	for {
		line, n, err := readLine(b[s.pos:])
		if n == 0 || err != nil {
			return 0, err
		}
		size := n
		switch line[0] {
		case '+', '-':
		case ':':
			if _, err := parseInt(line[1:]); err != nil {
				return 0, err
			}
		case '$':
			l, err := parseInt(line[1:])
			switch {
			case err != nil || l < -1 || l > maxBulk:
				return 0, ErrProtocol
			case l >= 0 && int64(len(b)-s.pos-n) < l+2:
				return 0, nil // the string is not all here
			case l >= 0:
				end := s.pos + n + int(l)
				if b[end] != '\r' || b[end+1] != '\n' {
					return 0, ErrProtocol
				}
				size += int(l) + 2
			}
		case '*':
			c, err := parseInt(line[1:])
			switch {
			case err != nil || c < -1:
				return 0, ErrProtocol
			case c > 0 && len(s.left) >= maxDepth:
				return 0, ErrProtocol
			case c > 0:
				s.pos += n
				s.left = append(s.left, c)
				continue
			}
		default:
			return 0, ErrProtocol
		}
		s.pos += size
		// One item more: it may end the arrays it closes.
		for len(s.left) > 0 {
			s.left[len(s.left)-1]--
			if s.left[len(s.left)-1] > 0 {
				break
			}
			s.left = s.left[:len(s.left)-1]
		}
		if len(s.left) == 0 {
			end := s.pos
			s.pos = 0
			return end, nil
		}
	}
}

// fill reads more bytes, making room first.
func (rd *Reader) fill() error {
	if rd.head > 0 && rd.tail == len(rd.buf) {
		rd.tail = copy(rd.buf, rd.buf[rd.head:rd.tail])
		rd.head = 0
	}
	if rd.tail == len(rd.buf) {
		if len(rd.buf) > 2*maxBulk {
			return ErrProtocol // no reply of a node is this long
		}
		grown := make([]byte, 2*len(rd.buf))
		rd.tail = copy(grown, rd.buf[rd.head:rd.tail])
		rd.head = 0
		rd.buf = grown
	}
	n, err := rd.r.Read(rd.buf[rd.tail:])
	rd.tail += n
	if n > 0 {
		rd.reads++
		return nil // an error with bytes comes back on the next read
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// Parse parses the one reply that b begins with. It returns the reply and
// its length in bytes, or a length of 0 if b holds only part of it.
func Parse(b []byte) (v any, n int, err error) {
	return parse(b, 0)
}

// parseTop is Parse, returning a short bulk string equal to the last one
// as rd.last.
func (rd *Reader) parseTop(b []byte) (any, int, error) {
	switch b[0] {
	case '*':
		return rd.parseInts(b)
	case '$':
	default:
		return parse(b, 0)
	}
	line, n, err := readLine(b)
	if n == 0 || err != nil {
		return nil, 0, err
	}
	size, err := parseInt(line[1:])
	if err != nil || size < 0 || size > maxReused || int64(len(b)-n) < size+2 {
		return parse(b, 0)
	}
	end := n + int(size)
	if b[end] != '\r' || b[end+1] != '\n' {
		return nil, 0, ErrProtocol
	}
	if last, ok := rd.last.(string); ok && last == string(b[n:end]) {
		return rd.last, end + 2, nil
	}
	rd.last = string(b[n:end])
	return rd.last, end + 2, nil
}

// parseInts is Parse of an array, returning one of integers whose
// encoding is short and the same as the last one's as rd.lastInts: a
// reply ends where its encoding does, so b beginning with those bytes
// begins with that reply.
func (rd *Reader) parseInts(b []byte) (any, int, error) {
	if n := len(rd.lastRaw); n > 0 && len(b) >= n && bytes.Equal(b[:n], rd.lastRaw) {
		return rd.lastInts, n, nil
	}
	v, n, err := parse(b, 0)
	if n == 0 || n > maxReused || err != nil {
		return v, n, err
	}
	items, _ := v.([]any)
	for _, it := range items {
		if _, ok := it.(int64); !ok {
			return v, n, nil
		}
	}
	if items != nil {
		rd.lastInts, rd.lastRaw = v, append(rd.lastRaw[:0], b[:n]...)
	}
	return v, n, nil
}

// maxBulk is the longest bulk string a node may send: Redis's own limit
// (proto-max-bulk-len, 512 MB by default). A longer one is a broken or
// hostile stream, and its length could overflow the bounds arithmetic.
const maxBulk = 512 << 20

func parse(b []byte, depth int) (any, int, error) {
	line, n, err := readLine(b)
	if n == 0 || err != nil {
		return nil, 0, err
	}
	switch line[0] {
	case '+':
		if string(line[1:]) == "OK" {
			return ok, n, nil // the commonest reply, without an allocation
		}
		return string(line[1:]), n, nil
	case '-':
		return Error(line[1:]), n, nil
	case ':':
		i, err := parseInt(line[1:])
		if err != nil {
			return nil, 0, err
		}
		return i, n, nil
	case '$':
		size, err := parseInt(line[1:])
		switch {
		case err != nil || size < -1 || size > maxBulk:
			return nil, 0, ErrProtocol
		case size == -1:
			return nil, n, nil
		case int64(len(b)-n) < size+2:
			return nil, 0, nil
		}
		end := n + int(size)
		if b[end] != '\r' || b[end+1] != '\n' {
			return nil, 0, ErrProtocol
		}
		return string(b[n:end]), end + 2, nil
	case '*':
		count, err := parseInt(line[1:])
		switch {
		case err != nil || count < -1:
			return nil, 0, ErrProtocol
		case count == -1:
			return nil, n, nil
		case depth >= maxDepth:
			return nil, 0, ErrProtocol
		case count > int64(len(b)-n)/3:
			// Each item takes at least 3 bytes (":0\r\n" takes 4): the
			// rest cannot all be here, and a bogus count allocates nothing.
			return nil, 0, nil
		}
		items := make([]any, count)
		for i := range items {
			v, m, err := parse(b[n:], depth+1)
			if m == 0 || err != nil {
				return nil, 0, err
			}
			items[i] = v
			n += m
		}
		return items, n, nil
	}
	return nil, 0, ErrProtocol
}

// readLine returns b's first line without its CRLF, and its length with
// it; a length of 0 if the line is not all there.
func readLine(b []byte) ([]byte, int, error) {
	i := bytes.IndexByte(b, '\r')
	switch {
	case i < 0 || i+1 == len(b):
		return nil, 0, nil
	case i == 0 || b[i+1] != '\n':
		return nil, 0, ErrProtocol
	}
	return b[:i], i + 2, nil
}

func parseInt(b []byte) (int64, error) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, ErrProtocol
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, ErrProtocol
		}
		v = v*10 + uint64(c-'0') // 19 digits do not overflow a uint64
	}
	switch {
	case neg && v <= 1<<63:
		return -int64(v), nil
	case !neg && v < 1<<63:
		return int64(v), nil
	}
	return 0, ErrProtocol
}
