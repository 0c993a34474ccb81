package quorum

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config holds the engine's settings. The zero value of a field means its
// default.
type Config struct {
	// NodeTimeout bounds each node's answer to one operation. If zero,
	// 50ms is used. Time spent waiting on a slow node is charged to the
	// lock's validity, so keep it a few percent of the smallest TTL.
	NodeTimeout time.Duration
	// DriftFactor is the share of the TTL set aside for clock drift;
	// 2ms is always added on top. If zero, 0.01 is used; a negative
	// value means no proportional allowance.
	DriftFactor float64
}

// Engine runs the Redlock operations over a fixed set of nodes. It keeps
// no state between calls (the client holds the token), and neither its
// nodes nor its config change after New, so it is safe for concurrent
// use.
type Engine struct {
	cfg    Config
	nodes  []Node
	quorum int
}

// New returns an engine over nodes with cfg's defaults applied. It panics
// if nodes is empty: a lock server with no nodes is a start-up bug.
func New(cfg Config, nodes ...Node) *Engine {
	if len(nodes) == 0 {
		panic("quorum: no nodes")
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 50 * time.Millisecond
	}
	if cfg.DriftFactor == 0 {
		cfg.DriftFactor = 0.01
	} else if cfg.DriftFactor < 0 {
		cfg.DriftFactor = 0
	}
	// A copy: the caller's slice may change, and the engine's must not.
	nodes = slices.Clone(nodes)
	return &Engine{cfg: cfg, nodes: nodes, quorum: Quorum(len(nodes))}
}

// Nodes returns how many nodes the engine runs over.
func (e *Engine) Nodes() int { return len(e.nodes) }

// Addrs returns the nodes' addresses, in configuration order.
func (e *Engine) Addrs() []string {
	addrs := make([]string, len(e.nodes))
	for i, n := range e.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Close closes every node's connections.
func (e *Engine) Close() error {
	var errs []error
	for _, n := range e.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// Drift returns the clock-drift allowance for a lock of the given TTL.
func (e *Engine) Drift(ttl time.Duration) time.Duration {
	return drift(ttl, e.cfg.DriftFactor)
}

// Quorum returns how many of n nodes must agree: a strict majority.
func Quorum(n int) int { return n/2 + 1 }

// Lock names what one operation works on: one or more keys, taken or
// given up together, and the token that proves ownership.
type Lock struct {
	Keys  []string
	Token string
	// PrefixLen, when above zero, makes a key whose value starts with the
	// token's first PrefixLen bytes count as already ours on acquire: it
	// is overwritten (bsm/redislock's re-entrant obtain).
	PrefixLen int
}

func (l Lock) String() string {
	return fmt.Sprintf("%q", l.Keys)
}
