package proxy

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
)

// Config holds the server's settings. The zero value of a field means its
// default, as each comment says. The TTL bounds are not here: the engine
// owns them (quorum.Config's MinTTL and MaxTTL), since its restart
// quarantine must outlast the longest lock.
type Config struct {
	// RequirePass, if set, is the default user's password: it must be
	// given with AUTH before any lock command. Empty means no password,
	// unless Users is set (then the default user is off).
	RequirePass string
	// Users are the named users ([[users]]), each with its password, the
	// command classes it may run and the keys it may name. Empty means
	// the default user alone.
	Users []acl.UserConfig
	// DefaultTTL, if set, is used for SET key token NX given without an
	// expiry; it must lie within the engine's TTL bounds. Zero means such
	// a SET is refused: a lock without a TTL is a deadlock waiting for its
	// holder to crash.
	DefaultTTL time.Duration
	// CommandTimeout bounds one client command, fan-out included. If
	// zero, 1s is used.
	CommandTimeout time.Duration
	// AllowForceDel makes DEL an unconditional delete on every node
	// (admin use). False means DEL is refused.
	AllowForceDel bool
	// MaxClients caps open client connections. If zero, 10000 is used.
	MaxClients int
	// IdleTimeout closes a client connection that sent nothing for this
	// long, or whose reply could not be written for this long (it does
	// not read). Zero means never.
	IdleTimeout time.Duration
	// Limits bounds what one client command may be. Zero fields take
	// their defaults.
	Limits Limits
	// MaxInputTotal caps, in bytes, what the read buffers of all clients
	// may hold together beyond 4 KiB each (see inputBudget); a command
	// that would pass it is refused and its connection closed. If zero,
	// 256 MiB is used.
	MaxInputTotal int64
	// FenceKeys are Redis glob patterns: INCR and INCRBY of a key that
	// matches one is a quorum counter (fencing tokens made by the
	// client), GET reads it, and every other command that names it is
	// refused. Empty means no such keys: INCR is refused.
	FenceKeys []string
	// LatchKeys are Redis glob patterns: a Redisson RCountDownLatch
	// named by one is served as a quorum latch (redissonlatch.go), and
	// GET reads its count. Empty means no such latches: their scripts
	// are refused.
	LatchKeys []string
	// PubSub holds the node subscriptions that SUBSCRIBE and PSUBSCRIBE
	// share. Nil means they are refused.
	PubSub *pubsub.Hub
	// Log receives the server's logs. If nil, logs are discarded.
	Log *slog.Logger
	// Observer receives the server's events for metrics; nil means
	// none. Reload keeps the one New was given.
	Observer Observer
	// SlowlogSlowerThan is the time over which a command goes into the
	// slow log (SLOWLOG GET), with each node's time. If zero, 10ms is
	// used; negative turns the slow log off.
	SlowlogSlowerThan time.Duration
	// SlowlogMaxLen is how many entries the slow log keeps, the oldest
	// dropped first. If zero, 128 is used.
	SlowlogMaxLen int
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.CommandTimeout == 0 {
		c.CommandTimeout = time.Second
	}
	if c.MaxClients == 0 {
		c.MaxClients = 10000
	}
	c.Limits = c.Limits.WithDefaults()
	if c.MaxInputTotal == 0 {
		c.MaxInputTotal = 256 << 20
	}
	if c.SlowlogSlowerThan == 0 {
		c.SlowlogSlowerThan = 10 * time.Millisecond
	}
	if c.SlowlogMaxLen == 0 {
		c.SlowlogMaxLen = 128
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting that cannot work with an engine
// whose TTL bounds are minTTL and maxTTL (quorum.Config's, after
// defaults), naming the key as it appears in config.toml.
func (c Config) Validate(minTTL, maxTTL time.Duration) error {
	c = c.WithDefaults()
	switch {
	case c.DefaultTTL != 0 && (c.DefaultTTL < minTTL || c.DefaultTTL > maxTTL):
		return fmt.Errorf("default_ttl (%v) must lie within min_ttl (%v) and max_ttl (%v)", c.DefaultTTL, minTTL, maxTTL)
	case c.CommandTimeout < 0:
		return fmt.Errorf("command_timeout (%v) must not be negative", c.CommandTimeout)
	case c.MaxClients < 0:
		return fmt.Errorf("max_clients (%d) must not be negative", c.MaxClients)
	case c.IdleTimeout < 0:
		return fmt.Errorf("idle_timeout (%v) must not be negative", c.IdleTimeout)
	case c.SlowlogMaxLen < 0 || c.SlowlogMaxLen > maxSlowlogLen:
		return fmt.Errorf("slowlog_max_len (%d) must lie within 0 and %d", c.SlowlogMaxLen, maxSlowlogLen)
	}
	if err := c.acl().Validate(); err != nil {
		return err
	}
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if need := redconBuffer(c.Limits.MaxCommand); c.MaxInputTotal < need {
		return fmt.Errorf("max_input_total (%d) must be at least %d, the read buffer one command of max_command (%d) bytes may take",
			c.MaxInputTotal, need, c.Limits.MaxCommand)
	}
	return nil
}

func (c Config) acl() acl.Config { return acl.Config{RequirePass: c.RequirePass, Users: c.Users} }
