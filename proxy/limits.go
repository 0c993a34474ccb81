package proxy

import "fmt"

// Limits bounds what one client command may be on the wire. A zero field
// takes its default.
type Limits struct {
	MaxArgs   int // arguments in one command, the name included; default 1024
	MaxBulk   int // bytes in one bulk argument; default 512 KiB
	MaxInline int // bytes in one inline (telnet-style) command line; default 64 KiB
	// MaxCommand is the most bytes one command may take on the wire,
	// headers included; default 1 MiB. Lock commands are small, and redcon
	// holds a whole command, and a copy of it, in memory at once.
	MaxCommand int
}

// PreAuth are Redis's own limits for a connection that has not yet
// authenticated: 10 arguments of at most 16 KiB.
var PreAuth = Limits{MaxArgs: 10, MaxBulk: 16 << 10, MaxInline: 16 << 10, MaxCommand: 10 * (16<<10 + 32)}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxArgs == 0 {
		l.MaxArgs = 1024
	}
	if l.MaxBulk == 0 {
		l.MaxBulk = 512 << 10
	}
	if l.MaxInline == 0 {
		l.MaxInline = 64 << 10
	}
	if l.MaxCommand == 0 {
		l.MaxCommand = 1 << 20
	}
	return l
}

// Validate reports a limit that cannot work, naming its config key.
func (l Limits) Validate() error {
	l = l.WithDefaults()
	switch {
	case l.MaxArgs < 1 || l.MaxArgs > maxArgsCeiling:
		return fmt.Errorf("max_args (%d) must be from 1 to %d", l.MaxArgs, maxArgsCeiling)
	case l.MaxBulk < 1 || l.MaxBulk > maxBulkCeiling:
		return fmt.Errorf("max_bulk (%d) must be from 1 to %d", l.MaxBulk, maxBulkCeiling)
	case l.MaxInline < 1 || l.MaxInline > maxInlineCeiling:
		return fmt.Errorf("max_inline (%d) must be from 1 to %d", l.MaxInline, maxInlineCeiling)
	case l.MaxCommand < 1 || l.MaxCommand > maxCommandCeiling:
		return fmt.Errorf("max_command (%d) must be from 1 to %d", l.MaxCommand, maxCommandCeiling)
	}
	return nil
}
