package integration

import (
	"bytes"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// attack18HoldFirst holds, for hold, the first n chunks a client sends
// through the relay that contain mark, counted over every connection;
// everything else goes at once. A held chunk is written when its hold
// ends, whatever became of the connection it came on meanwhile (the
// sender gone, as a lost segment's retransmission still lands). With
// replies set it holds instead the next reply chunk on the connection
// of each of those n (the client reads it late: a client stalled after
// sending).
type attack18HoldFirst struct {
	mu      sync.Mutex
	mark    []byte
	pass    int             // chunks with mark let through before the n held
	each    []time.Duration // if set, the i-th held chunk's hold instead of hold
	n       int
	hold    time.Duration
	replies bool
	conns   []int        // the connection each held chunk came on
	verbs   []string     // and its first command's name
	marks   map[int]int  // chunks with mark per connection, held or not
	pending map[int]bool // connections whose next reply chunk is held
}

// reset holds the first n chunks with mark from now on.
func (h *attack18HoldFirst) reset(mark string, n int, hold time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mark, h.n, h.hold, h.conns, h.verbs, h.marks = []byte(mark), n, hold, nil, nil, map[int]int{}
	h.replies, h.pending, h.pass, h.each = false, map[int]bool{}, 0, nil
}

// resetEach is reset holding the i-th chunk with mark for holds[i].
func (h *attack18HoldFirst) resetEach(mark string, holds ...time.Duration) {
	h.reset(mark, len(holds), 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.each = holds
}

// resetAfter is reset letting the first pass chunks with mark through.
func (h *attack18HoldFirst) resetAfter(mark string, pass, n int, hold time.Duration) {
	h.reset(mark, n, hold)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pass = pass
}

// resetReplies is reset holding the replies to those chunks instead.
func (h *attack18HoldFirst) resetReplies(mark string, n int, hold time.Duration) {
	h.reset(mark, n, hold)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.replies = true
}

// delay is how long the relay holds chunk b, sent on connection conn.
func (h *attack18HoldFirst) delay(conn int, b []byte) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.mark) == 0 || !bytes.Contains(b, h.mark) {
		return 0
	}
	h.marks[conn]++
	if h.pass > 0 {
		h.pass--
		return 0
	}
	if len(h.conns) == h.n {
		return 0
	}
	h.conns = append(h.conns, conn)
	verb := ""
	if f := bytes.SplitN(b, []byte("\r\n"), 4); len(f) == 4 {
		verb = string(f[2]) // *N, $len, name
	}
	h.verbs = append(h.verbs, verb)
	if h.replies {
		h.pending[conn] = true
		return 0
	}
	if h.each != nil {
		return h.each[len(h.conns)-1]
	}
	return h.hold
}

// replyDelay is how long the relay holds the next reply chunk on
// connection conn.
func (h *attack18HoldFirst) replyDelay(conn int) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.pending[conn] {
		return 0
	}
	delete(h.pending, conn)
	return h.hold
}

// held is the connections the chunks held came on, and their first
// commands' names, in order.
func (h *attack18HoldFirst) held() (conns []int, verbs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.conns), slices.Clone(h.verbs)
}

// marked is how many chunks with mark came on connection conn.
func (h *attack18HoldFirst) marked(conn int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marks[conn]
}

// startHoldRelay serves a TCP relay on 127.0.0.1 to target, as
// startRelay does, holding each chunk a client sends for h.delay of it
// and each reply chunk for h.replyDelay. It returns the relay's address.
func startHoldRelay(tb testing.TB, target string, h *attack18HoldFirst) string {
	tb.Helper()
	return serveRelay(tb, target, func(wg *sync.WaitGroup, conn int, c, s net.Conn) {
		// The reader takes each chunk as it comes (so delay sees
		// every one at once); the writer sends them in order, each
		// once its hold ends, as TCP delivers a stream.
		type chunk struct {
			b   []byte
			due time.Time
		}
		q := make(chan chunk, 1024)
		wg.Go(func() {
			defer close(q)
			for {
				buf := make([]byte, 64<<10)
				n, err := c.Read(buf)
				if n > 0 {
					q <- chunk{buf[:n], time.Now().Add(h.delay(conn, buf[:n]))}
				}
				if err != nil {
					return
				}
			}
		})
		wg.Go(func() {
			defer s.Close()
			for ch := range q {
				time.Sleep(time.Until(ch.due))
				if _, err := s.Write(ch.b); err != nil {
					for range q {
					}
					return
				}
			}
		})
		wg.Go(func() {
			defer c.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					time.Sleep(h.replyDelay(conn))
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		})
	})
}
