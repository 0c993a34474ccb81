package acl

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

func sha(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no name", Config{Users: []UserConfig{{Password: "secret-1", Allow: []string{"lock"}}}}, `users[0] (""): name is required`},
		{"space in name", Config{Users: []UserConfig{{Name: "a b", Password: "secret-1", Allow: []string{"lock"}}}}, "must not contain spaces"},
		{"no password", Config{Users: []UserConfig{{Name: "a", Allow: []string{"lock"}}}}, "password or password_sha256 is required"},
		{"both passwords", Config{Users: []UserConfig{{Name: "a", Password: "secret-1", PasswordSHA256: sha("x"), Allow: []string{"lock"}}}}, "not both"},
		{"bad digest", Config{Users: []UserConfig{{Name: "a", PasswordSHA256: "secret-1", Allow: []string{"lock"}}}}, "password_sha256 must be 64 hex digits"},
		{"no allow", Config{Users: []UserConfig{{Name: "a", Password: "secret-1"}}}, "allow must list"},
		{"bad class", Config{Users: []UserConfig{{Name: "a", Password: "secret-1", Allow: []string{"write"}}}}, `allow: "write" must be lock, read or admin`},
		{"empty key pattern", Config{Users: []UserConfig{{Name: "a", Password: "secret-1", Allow: []string{"lock"}, Keys: []string{""}}}}, "must not be empty"},
		{"twice", Config{Users: []UserConfig{
			{Name: "a", Password: "secret-1", Allow: []string{"lock"}},
			{Name: "a", Password: "secret-2", Allow: []string{"read"}},
		}}, `users[1] ("a"): the name is used twice`},
		{"default twice", Config{RequirePass: "secret-1", Users: []UserConfig{{Name: "default", Password: "secret-2", Allow: []string{"lock"}}}}, "requirepass already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v; want an error containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("New = %v; the error shows a password", err)
			}
			if tt.cfg.Validate() == nil {
				t.Errorf("Validate = nil; want the error New gives")
			}
		})
	}
}

func TestStartUser(t *testing.T) {
	user := UserConfig{Name: "app", Password: "pw", Allow: []string{"lock"}}
	tests := []struct {
		name     string
		cfg      Config
		wantOpen bool // new connections start logged in as default
	}{
		{"no password, no users", Config{}, true},
		{"requirepass", Config{RequirePass: "pw"}, false},
		{"users only: default is off", Config{Users: []UserConfig{user}}, false},
		{"users and requirepass", Config{RequirePass: "pw", Users: []UserConfig{user}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			us, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := us.Start() != nil; got != tt.wantOpen {
				t.Errorf("Start() != nil = %v; want %v", got, tt.wantOpen)
			}
			if got := us.PasswordRequired(); got == tt.wantOpen {
				t.Errorf("PasswordRequired() = %v; want %v", got, !tt.wantOpen)
			}
			if u := us.Start(); u != nil && (u.Name() != DefaultUser || !u.Can(all)) {
				t.Errorf("Start() = %s allowed %v; want default allowed everything", u.Name(), u.allow)
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	us, err := New(Config{RequirePass: "rootpw", Users: []UserConfig{
		{Name: "app", Password: "apppw", Allow: []string{"lock", "read"}, Keys: []string{"orders:*"}},
		{Name: "ops", PasswordSHA256: sha("opspw"), Allow: []string{"ADMIN"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user, pass string
		want       string // the user logged in as; "" for none
	}{
		{"default", "rootpw", "default"},
		{"default", "rootpw ", ""},
		{"default", "apppw", ""},
		{"app", "apppw", "app"},
		{"app", "apppw\x00", ""},
		{"app", "", ""},
		{"APP", "apppw", ""}, // names are case-sensitive, as in Redis
		{"ops", "opspw", "ops"},
		{"ops", sha("opspw"), ""}, // the digest is not the password
		{"nobody", "apppw", ""},
	}
	for _, tt := range tests {
		t.Run(tt.user+" "+tt.pass, func(t *testing.T) {
			got := ""
			if u := us.Authenticate(tt.user, []byte(tt.pass)); u != nil {
				got = u.Name()
			}
			if got != tt.want {
				t.Errorf("Authenticate(%q, %q) = %q; want %q", tt.user, tt.pass, got, tt.want)
			}
		})
	}
	// The default user without a password takes any, as Redis's nopass.
	open, _ := New(Config{})
	if u := open.Authenticate("default", []byte("anything")); u == nil {
		t.Errorf("Authenticate(default, anything) with no password = nil; want default")
	}
}

func TestPermissions(t *testing.T) {
	us, err := New(Config{Users: []UserConfig{
		{Name: "app", Password: "pw", Allow: []string{"lock", "read"}, Keys: []string{"orders:*", "jobs:[0-9]*"}},
		{Name: "reader", Password: "pw", Allow: []string{"read"}},
		{Name: "ops", Password: "pw", Allow: []string{"admin"}, Keys: []string{"x", "*"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	app, reader, ops := us.Lookup("app"), us.Lookup("reader"), us.Lookup("ops")
	classes := []struct {
		u    *User
		c    Class
		want bool
	}{
		{app, Lock, true}, {app, Read, true}, {app, Admin, false}, {app, Lock | Read, true},
		{reader, Read, true}, {reader, Lock, false}, {reader, Admin, false},
		{ops, Admin, true}, {ops, Lock, false}, {ops, Read, false},
		{ops, 0, true}, // connection commands
	}
	for _, tt := range classes {
		if got := tt.u.Can(tt.c); got != tt.want {
			t.Errorf("%s.Can(%v) = %v; want %v", tt.u.Name(), tt.c, got, tt.want)
		}
	}
	keys := []struct {
		u    *User
		key  string
		want bool
	}{
		{app, "orders:1", true}, {app, "orders:", true}, {app, "jobs:7x", true},
		{app, "jobs:x", false}, {app, "order:1", false}, {app, "", false},
		{reader, "anything", true}, {reader, "", true},
		{ops, "", true}, // "*" among the patterns means every key, as Redis's ~*
	}
	for _, tt := range keys {
		if got := tt.u.CanKey([]byte(tt.key)); got != tt.want {
			t.Errorf("%s.CanKey(%q) = %v; want %v", tt.u.Name(), tt.key, got, tt.want)
		}
	}
	if us.Lookup("default") != nil {
		t.Errorf("Lookup(default) with users and no requirepass = non-nil; want the default user off")
	}
}
