package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config holds the engine's settings. The zero value of a field means its
// default; WithDefaults fills them in and Validate checks the result.
type Config struct {
	// NodeTimeout bounds each node's answer to one operation. If zero,
	// 50ms is used. Time spent waiting on a slow node is charged to the
	// lock's validity, so it may be at most half of MinTTL.
	NodeTimeout time.Duration
	// DriftFactor is the share of the TTL set aside for clock drift;
	// 2ms is always added on top. If zero, 0.01 is used. A negative
	// value means no proportional allowance (tests only: Validate
	// refuses it).
	DriftFactor float64
	// MinTTL and MaxTTL bound the TTL of a lock. If zero, 100ms and 5m
	// are used. The engine owns them: a restarted node, or one whose
	// clock jumped, is quarantined for MaxTTL plus its drift allowance,
	// so no lock may outlive MaxTTL, and the proxy reads both bounds
	// from the engine (MinTTL, MaxTTL) rather than from a copy.
	MinTTL, MaxTTL time.Duration

	// The rest matters only once Start runs the health monitor.

	// ProbeInterval is how often each node is probed (INFO, TIME and the
	// membership record), and how often a down node is retried. If zero,
	// 500ms is used.
	ProbeInterval time.Duration
	// ClockJumpLimit is how far a node's clock may move against the
	// proxy's monotonic clock between two probes, beyond the probes'
	// round trips and the drift allowance, before the node is
	// quarantined. If zero, 100ms is used.
	ClockJumpLimit time.Duration
	// TrustFsyncAlways exempts from restart quarantine the nodes that run
	// with appendonly yes and appendfsync always, as read from the node.
	// It never exempts from clock-jump quarantine. False by default.
	TrustFsyncAlways bool
	// Log receives the monitor's state transitions. If nil, logs are
	// discarded. The request path never logs.
	Log *slog.Logger
	// Observer receives the engine's events (operations, nodes' answers
	// and state changes) for metrics. Nil means none.
	Observer Observer
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.NodeTimeout == 0 {
		c.NodeTimeout = 50 * time.Millisecond
	}
	if c.DriftFactor == 0 {
		c.DriftFactor = 0.01
	}
	if c.MinTTL == 0 {
		c.MinTTL = 100 * time.Millisecond
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = 5 * time.Minute
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = 500 * time.Millisecond
	}
	if c.ClockJumpLimit == 0 {
		c.ClockJumpLimit = 100 * time.Millisecond
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting, after defaults, that cannot work,
// naming the key as it appears in config.toml.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.NodeTimeout < time.Millisecond:
		return fmt.Errorf("node_timeout (%v) must be at least 1ms", c.NodeTimeout)
	case c.MinTTL < time.Millisecond:
		return fmt.Errorf("min_ttl (%v) must be at least 1ms", c.MinTTL)
	case c.MaxTTL < c.MinTTL:
		return fmt.Errorf("max_ttl (%v) must not be under min_ttl (%v)", c.MaxTTL, c.MinTTL)
	case c.MaxTTL > maxLearnedTTL:
		// Other proxies learn a max_ttl from the records up to this bound.
		return fmt.Errorf("max_ttl (%v) must be at most %v", c.MaxTTL, maxLearnedTTL)
	case 2*c.NodeTimeout > c.MinTTL:
		// A lock's validity pays for its slowest node: a node timeout
		// near the TTL would leave nothing to grant.
		return fmt.Errorf("node_timeout (%v) must be at most half of min_ttl (%v)", c.NodeTimeout, c.MinTTL)
	case c.DriftFactor < 0 || c.DriftFactor > 0.5:
		return fmt.Errorf("drift_factor (%v) must be from 0 to 0.5", c.DriftFactor)
	case c.ProbeInterval < 10*time.Millisecond || c.ProbeInterval > 10*time.Second:
		return fmt.Errorf("probe_interval (%v) must be from 10ms to 10s", c.ProbeInterval)
	case c.ClockJumpLimit < time.Millisecond || c.ClockJumpLimit > c.MaxTTL:
		return fmt.Errorf("clock_jump_limit (%v) must be from 1ms to max_ttl (%v)", c.ClockJumpLimit, c.MaxTTL)
	}
	return nil
}

// Engine runs the Redlock operations over a fixed set of nodes. It keeps
// no lock state between calls (the client holds the token, the nodes the
// keys), and neither its nodes nor its config change after New. Its only
// state is each node's health, which Start's monitor keeps and which is
// safe for concurrent use; so is the Engine.
type Engine struct {
	cfg    Config
	nodes  []Node
	quorum int
	health []*health
	hint   fenceHint // which nodes FENCE asks first (fenceask.go)

	born      time.Time   // for the breaker's monotonic stamps
	monitored atomic.Bool // Start ran: the breaker and the checks apply
	// peerMaxTTL is the longest max_ttl (ns) the membership records say
	// a proxy over these nodes grants: quarantines last for it.
	peerMaxTTL atomic.Int64
	stop       context.CancelFunc // ends the monitor; set by Start
	wg         sync.WaitGroup     // the monitor's goroutines, waited for by Close
}

// New returns an engine over nodes with cfg's defaults applied; checking
// cfg is Validate's job, before New. It panics if nodes is empty: a lock
// server with no nodes is a start-up bug.
func New(cfg Config, nodes ...Node) *Engine {
	if len(nodes) == 0 {
		panic("quorum: no nodes")
	}
	cfg = cfg.WithDefaults()
	if cfg.DriftFactor < 0 {
		cfg.DriftFactor = 0
	}
	// A copy: the caller's slice may change, and the engine's must not.
	nodes = slices.Clone(nodes)
	e := &Engine{cfg: cfg, nodes: nodes, quorum: quorumOf(len(nodes)), born: time.Now(), hint: newFenceHint(nodes)}
	for _, n := range nodes {
		h := newHealth(n.Addr())
		h.node, h.obs = len(e.health), cfg.Observer
		e.health = append(e.health, h)
	}
	return e
}

// MinTTL returns the shortest TTL a lock may have.
func (e *Engine) MinTTL() time.Duration { return e.cfg.MinTTL }

// MaxTTL returns the longest TTL a lock may have: no restart or clock
// quarantine is shorter.
func (e *Engine) MaxTTL() time.Duration { return e.cfg.MaxTTL }

// NodeTimeout returns how long one node's answer is waited for: also the
// longest two nodes' copies of one grant can land apart.
func (e *Engine) NodeTimeout() time.Duration { return e.cfg.NodeTimeout }

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

// Close stops the monitor, if Start ran, waits for it, and closes every
// node's connections.
func (e *Engine) Close() error {
	if e.stop != nil {
		e.stop()
	}
	e.wg.Wait()
	for _, h := range e.health {
		h.trouble.Stop() // writes a count still pending
	}
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
