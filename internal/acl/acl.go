// Package acl holds the proxy's users: who may connect, with which
// password, to run which classes of command on which keys. It is pure
// code: the proxy asks it, per command, whether the connection's user may
// run it.
package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"
)

// Class is a set of command classes a user may run.
type Class uint8

// The classes of the config's allow lists. Connection commands (PING,
// AUTH, HELLO, QUIT, SELECT, CLIENT SETNAME, ...) belong to none: every
// authenticated user may run them.
const (
	// Lock is SET NX and the served lock scripts (EVAL, EVALSHA, SCRIPT).
	Lock Class = 1 << iota
	// Read is GET, PTTL, TTL and EXISTS.
	Read
	// Admin is INFO's node details, DEL (with allow_force_del) and
	// CLIENT LIST.
	Admin

	// all is every class: the default user's.
	all = Lock | Read | Admin
)

var classNames = map[string]Class{"lock": Lock, "read": Read, "admin": Admin}

// DefaultUser is the name of the user a connection starts as, and the
// one AUTH with a password alone logs in as.
const DefaultUser = "default"

// UserConfig is one [[users]] table of config.toml.
type UserConfig struct {
	// Name is what AUTH name password gives. Required.
	Name string
	// Password is the user's password in clear. Exactly one of Password
	// and PasswordSHA256 must be set.
	Password string
	// PasswordSHA256 is the hex SHA-256 digest of the password, so that
	// the file need not hold it in clear.
	PasswordSHA256 string
	// Allow lists the command classes the user may run: any of "lock",
	// "read", "admin". At least one is required.
	Allow []string
	// Keys lists glob patterns (Redis's syntax: *, ?, [a-z], \x) of the
	// keys the user may name. Empty means every key.
	Keys []string
}

// Config is the proxy's access control: the default user's password and
// the named users.
type Config struct {
	// RequirePass, if set, is the default user's password; the default
	// user may run everything. Empty means: with no Users, no password
	// is needed; with Users, the default user is off and every client
	// must AUTH as a named user (unless Users names "default" itself).
	RequirePass string
	// Users are the named users.
	Users []UserConfig
}

// Validate reports the first user that cannot work, naming it by its
// place in the file and its name. It never shows a password or digest.
func (c Config) Validate() error {
	_, err := New(c)
	return err
}

// User is one user as the proxy checks it. It does not change after New.
type User struct {
	name   string
	digest [sha256.Size]byte // SHA-256 of the password
	nopass bool              // any password, or none, is accepted
	allow  Class
	keys   []string // nil: every key
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Can reports whether u may run commands of every class in c.
func (u *User) Can(c Class) bool { return u.allow&c == c }

// CanKey reports whether u may name key.
func (u *User) CanKey(key []byte) bool {
	if u.keys == nil {
		return true
	}
	for _, p := range u.keys {
		if Match(p, key) {
			return true
		}
	}
	return false
}

// Users is a set of users, built once by New and replaced whole on a
// reload.
type Users struct {
	byName map[string]*User
	// start is the user a new connection is logged in as; nil when a
	// client must AUTH first.
	start *User
}

// New builds the users c describes, or returns an error naming the first
// bad entry.
func New(c Config) (*Users, error) {
	us := &Users{byName: make(map[string]*User, len(c.Users)+1)}
	for i, uc := range c.Users {
		u, err := newUser(uc)
		if err != nil {
			return nil, fmt.Errorf("users[%d] (%q): %w", i, uc.Name, err)
		}
		if us.byName[u.name] != nil {
			return nil, fmt.Errorf("users[%d] (%q): the name is used twice", i, uc.Name)
		}
		if u.name == DefaultUser && c.RequirePass != "" {
			return nil, fmt.Errorf("users[%d] (%q): requirepass already is the default user's password; set one or the other", i, uc.Name)
		}
		us.byName[u.name] = u
	}
	switch {
	case us.byName[DefaultUser] != nil:
		// The operator defined the default user: it has a password.
	case c.RequirePass != "":
		us.byName[DefaultUser] = &User{name: DefaultUser, digest: sha256.Sum256([]byte(c.RequirePass)), allow: all}
	case len(c.Users) == 0:
		u := &User{name: DefaultUser, nopass: true, allow: all}
		us.byName[DefaultUser], us.start = u, u
	}
	return us, nil
}

func newUser(uc UserConfig) (*User, error) {
	u := &User{name: uc.Name}
	switch {
	case uc.Name == "":
		return nil, fmt.Errorf("name is required")
	case strings.ContainsAny(uc.Name, " \t\r\n"):
		return nil, fmt.Errorf("name must not contain spaces or line breaks")
	case uc.Password != "" && uc.PasswordSHA256 != "":
		return nil, fmt.Errorf("set password or password_sha256, not both")
	case uc.Password != "":
		u.digest = sha256.Sum256([]byte(uc.Password))
	case uc.PasswordSHA256 != "":
		b, err := hex.DecodeString(uc.PasswordSHA256)
		if err != nil || len(b) != sha256.Size {
			return nil, fmt.Errorf("password_sha256 must be 64 hex digits")
		}
		copy(u.digest[:], b)
	default:
		return nil, fmt.Errorf("password or password_sha256 is required")
	}
	for _, a := range uc.Allow {
		c, ok := classNames[ascii.Lower(a)]
		if !ok {
			return nil, fmt.Errorf("allow: %q must be lock, read or admin", a)
		}
		u.allow |= c
	}
	if u.allow == 0 {
		return nil, fmt.Errorf("allow must list at least one of lock, read, admin")
	}
	for _, p := range uc.Keys {
		if p == "" {
			return nil, fmt.Errorf("keys: a pattern must not be empty")
		}
		u.keys = append(u.keys, p)
	}
	if slices.Contains(u.keys, "*") {
		u.keys = nil // every key, the empty one included, as Redis's ~*
	}
	return u, nil
}

// Start returns the user a new connection is logged in as, or nil when
// the client must AUTH before anything else.
func (us *Users) Start() *User { return us.start }

// Lookup returns the user called name, or nil.
func (us *Users) Lookup(name string) *User { return us.byName[name] }

// PasswordRequired reports whether the default user has a password: with
// none and no named users, AUTH is an error, as in Redis.
func (us *Users) PasswordRequired() bool { return us.start == nil }

// Authenticate returns the user called name if pass is its password, or
// nil. The passwords are compared as SHA-256 digests in constant time, so
// that neither a password's content nor its length shows in how long a
// wrong one takes; an unknown name costs the same comparison.
func (us *Users) Authenticate(name string, pass []byte) *User {
	got := sha256.Sum256(pass)
	u := us.byName[name]
	want := unknownDigest
	if u != nil {
		want = u.digest
	}
	ok := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	switch {
	case u == nil:
		return nil
	case u.nopass, ok:
		return u
	}
	return nil
}

// unknownDigest is compared against for a name no user has; no password
// hashes to it in practice.
var unknownDigest = sha256.Sum256([]byte("redlock-proxy: no such user"))
