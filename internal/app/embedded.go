package app

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// embedded is a set of in-process Redis-compatible nodes for demo mode,
// so that the proxy serves with no masters configured.
type embedded struct {
	nodes []*miniredis.Miniredis
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startEmbedded starts n miniredis nodes on loopback ports.
func startEmbedded(n int) (*embedded, error) {
	d := &embedded{stop: make(chan struct{})}
	for range n {
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			d.Close()
			return nil, fmt.Errorf("start embedded node: %w", err)
		}
		d.nodes = append(d.nodes, m)
	}
	// miniredis only expires keys when told time has passed; this
	// goroutine tells it, and Close waits for it.
	d.wg.Go(d.tick)
	return d, nil
}

func (d *embedded) tick() {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-d.stop:
			return
		case now := <-t.C:
			for _, m := range d.nodes {
				m.FastForward(now.Sub(last))
			}
			last = now
		}
	}
}

// Addrs returns the nodes' addresses.
func (d *embedded) Addrs() []string {
	addrs := make([]string, len(d.nodes))
	for i, m := range d.nodes {
		addrs[i] = m.Addr()
	}
	return addrs
}

// Close stops the nodes and the clock goroutine.
func (d *embedded) Close() {
	close(d.stop)
	d.wg.Wait()
	for _, m := range d.nodes {
		m.Close()
	}
}
