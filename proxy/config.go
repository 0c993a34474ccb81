package proxy

import (
	"fmt"
	"log/slog"
	"time"
)

// Config holds the server's settings. The zero value of a field means its
// default, as each comment says.
type Config struct {
	// RequirePass, if set, must be given with AUTH before any lock
	// command. Empty means no password.
	RequirePass string
	// MinTTL and MaxTTL bound the TTL a client may ask for. If zero, 100ms
	// and 5m are used.
	MinTTL, MaxTTL time.Duration
	// DefaultTTL, if set, is used for SET key token NX given without an
	// expiry. Zero means such a SET is refused: a lock without a TTL is a
	// deadlock waiting for its holder to crash.
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
	// long. Zero means never.
	IdleTimeout time.Duration
	// Limits bounds what one client command may be. Zero fields take
	// their defaults.
	Limits Limits
	// Log receives the server's logs. If nil, logs are discarded.
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MinTTL == 0 {
		c.MinTTL = 100 * time.Millisecond
	}
	if c.MaxTTL == 0 {
		c.MaxTTL = 5 * time.Minute
	}
	if c.CommandTimeout == 0 {
		c.CommandTimeout = time.Second
	}
	if c.MaxClients == 0 {
		c.MaxClients = 10000
	}
	c.Limits = c.Limits.WithDefaults()
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports the first setting that cannot work, naming the key as
// it appears in config.toml.
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.MinTTL < time.Millisecond:
		return fmt.Errorf("min_ttl (%v) must be at least 1ms", c.MinTTL)
	case c.MaxTTL < c.MinTTL:
		return fmt.Errorf("max_ttl (%v) must not be under min_ttl (%v)", c.MaxTTL, c.MinTTL)
	case c.DefaultTTL != 0 && (c.DefaultTTL < c.MinTTL || c.DefaultTTL > c.MaxTTL):
		return fmt.Errorf("default_ttl (%v) must lie within min_ttl (%v) and max_ttl (%v)", c.DefaultTTL, c.MinTTL, c.MaxTTL)
	case c.CommandTimeout < 0:
		return fmt.Errorf("command_timeout (%v) must not be negative", c.CommandTimeout)
	case c.MaxClients < 0:
		return fmt.Errorf("max_clients (%d) must not be negative", c.MaxClients)
	case c.IdleTimeout < 0:
		return fmt.Errorf("idle_timeout (%v) must not be negative", c.IdleTimeout)
	}
	return c.Limits.Validate()
}
