package proxy

import (
	"errors"
	"net"
	"sync"
)

// JoinListeners returns one listener that accepts from every one of lns,
// so that one Server serves a plain and a TLS port alike. Closing it
// closes them all. Each of lns is accepted from by a goroutine of its
// own, which Close waits for.
func JoinListeners(lns ...net.Listener) net.Listener {
	if len(lns) == 1 {
		return lns[0]
	}
	j := &joined{lns: lns, next: make(chan accepted), done: make(chan struct{})}
	for _, ln := range lns {
		j.wg.Go(func() { j.run(ln) }) // waited for by Close
	}
	return j
}

type joined struct {
	lns  []net.Listener
	next chan accepted // handed over only when Accept asks: redcon's pace
	done chan struct{} // closed by Close
	once sync.Once
	err  error // of closing lns
	wg   sync.WaitGroup
}

type accepted struct {
	c   net.Conn
	err error
}

// run hands ln's connections and errors to Accept until ln or j closes.
func (j *joined) run(ln net.Listener) {
	for {
		c, err := ln.Accept()
		select {
		case j.next <- accepted{c, err}:
		case <-j.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next connection from any of the listeners, or
// net.ErrClosed once Close was called.
func (j *joined) Accept() (net.Conn, error) {
	select {
	case a := <-j.next:
		return a.c, a.err
	case <-j.done:
		return nil, net.ErrClosed
	}
}

// Close closes every listener and waits for their goroutines.
func (j *joined) Close() error {
	j.once.Do(func() {
		close(j.done)
		for _, ln := range j.lns {
			if err := ln.Close(); err != nil && j.err == nil {
				j.err = err
			}
		}
	})
	j.wg.Wait()
	return j.err
}

// Addr is the first listener's address.
func (j *joined) Addr() net.Addr { return j.lns[0].Addr() }
