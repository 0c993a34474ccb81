package proxy

import (
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
)

const (
	wrongPass  = "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
	noAuth     = "-NOAUTH Authentication required.\r\n"
	noKeyPerm  = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
	releaseLua = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`
)

func noCmdPerm(name string) string {
	return "-NOPERM this user has no permissions to run the '" + name + "' command\r\n"
}

var testUsers = []acl.UserConfig{
	{Name: "app", Password: "app-pw", Allow: []string{"lock", "read"}, Keys: []string{"orders:*"}},
	{Name: "reader", Password: "reader-pw", Allow: []string{"read"}},
	{Name: "ops", Password: "ops-pw", Allow: []string{"admin"}},
}

// TestUsers runs each user's commands and checks the exact replies:
// NOPERM for classes and keys not allowed, in Redis's order (arity, then
// the command, then its keys).
func TestUsers(t *testing.T) {
	addr, _ := startServer(t, 3, Config{Users: testUsers, AllowForceDel: true})
	tests := []struct {
		user, pass string
		steps      []struct{ cmd, want string }
	}{
		{"app", "app-pw", []struct{ cmd, want string }{
			{"SET orders:1 tok NX PX 5000", "+OK\r\n"},
			{"SET other tok NX PX 5000", noKeyPerm},
			{"GET orders:1", "$3\r\ntok\r\n"},
			{"GET other", noKeyPerm},
			{"EXISTS orders:1 orders:2", ":1\r\n"},
			{"EXISTS orders:1 other", noKeyPerm},
			{"DEL orders:1", noCmdPerm("del")},
			{"GET", "-ERR wrong number of arguments for 'get' command\r\n"},
			{"EVAL " + releaseLua + " 1 other tok", noKeyPerm},
			{"EVAL " + releaseLua + " 1 orders:1 tok", ":1\r\n"},
			{"EVAL " + releaseLua + " x orders:1 tok", "-ERR value is not an integer or out of range\r\n"},
			{"CLIENT ID", ":"},
			{"PING", "+PONG\r\n"},
		}},
		{"reader", "reader-pw", []struct{ cmd, want string }{
			{"SET k tok NX PX 5000", noCmdPerm("set")},
			{"EVAL " + releaseLua + " 1 k tok", noCmdPerm("eval")},
			{"EVALSHA 0123456789012345678901234567890123456789 1 k tok", noCmdPerm("evalsha")},
			{"SCRIPT LOAD return", noCmdPerm("script")},
			{"GET anything", "$-1\r\n"},
			{"PTTL anything", ":-2\r\n"},
			{"TTL anything", ":-2\r\n"},
			{"DEL anything", noCmdPerm("del")},
		}},
		{"ops", "ops-pw", []struct{ cmd, want string }{
			{"SET k tok NX PX 5000", noCmdPerm("set")},
			{"GET k", noCmdPerm("get")},
			{"DEL k", ":0\r\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			rc := dial(t, addr)
			if got := rc.do(t, "GET", "k"); got != noAuth {
				t.Fatalf("GET before AUTH = %q; want %q", got, noAuth)
			}
			if got := rc.do(t, "AUTH", tt.user, tt.pass); got != "+OK\r\n" {
				t.Fatalf("AUTH %s = %q; want +OK", tt.user, got)
			}
			for _, st := range tt.steps {
				args := strings.Fields(st.cmd)
				if strings.HasPrefix(st.cmd, "EVAL ") {
					rest := strings.Fields(strings.TrimPrefix(st.cmd, "EVAL "+releaseLua))
					args = append([]string{"EVAL", releaseLua}, rest...)
				}
				if got := rc.do(t, args...); !strings.HasPrefix(got, st.want) {
					t.Errorf("%s as %s = %q; want %q", args[0], tt.user, got, st.want)
				}
			}
		})
	}
}

// TestUsersAuth checks WRONGPASS for every way a login can be wrong, and
// that the default user is off when only named users are configured.
func TestUsersAuth(t *testing.T) {
	addr, _ := startServer(t, 1, Config{Users: testUsers})
	rc := dial(t, addr)
	for _, args := range [][]string{
		{"AUTH", "app-pw"}, // the default user is off
		{"AUTH", "default", "app-pw"},
		{"AUTH", "app", "reader-pw"},
		{"AUTH", "nobody", "app-pw"},
		{"AUTH", "APP", "app-pw"},
		{"HELLO", "2", "AUTH", "app", "wrong"},
		{"HELLO", "3", "AUTH", "app", "wrong"},
	} {
		if got := rc.do(t, args...); got != wrongPass {
			t.Errorf("%v = %q; want %q", args, got, wrongPass)
		}
	}
	if got := rc.do(t, "PING"); got != noAuth {
		t.Errorf("PING after failed logins = %q; want %q", got, noAuth)
	}
	if got := rc.do(t, "HELLO", "2", "AUTH", "reader", "reader-pw"); !strings.HasPrefix(got, "*16\r\n") {
		t.Errorf("HELLO 2 AUTH reader = %q; want the 16-element map", got)
	}
	if got := rc.do(t, "SET", "k", "t", "NX", "PX", "1000"); got != noCmdPerm("set") {
		t.Errorf("SET as reader after HELLO AUTH = %q; want %q", got, noCmdPerm("set"))
	}
	// HELLO 3 AUTH logs in and switches to RESP3 at once.
	r3 := dial(t, addr)
	if got := r3.do(t, "HELLO", "3", "AUTH", "app", "app-pw"); !strings.HasPrefix(got, "%8\r\n") {
		t.Errorf("HELLO 3 AUTH app = %q; want the 8-entry RESP3 map", got)
	}
	if got := r3.do(t, "GET", "other"); got != noKeyPerm {
		t.Errorf("GET other as app over RESP3 = %q; want %q", got, noKeyPerm)
	}
	// AUTH again switches user, as in Redis.
	if got := rc.do(t, "AUTH", "app", "app-pw"); got != "+OK\r\n" {
		t.Errorf("AUTH app = %q; want +OK", got)
	}
	if got := rc.do(t, "SET", "orders:9", "t", "NX", "PX", "1000"); got != "+OK\r\n" {
		t.Errorf("SET as app = %q; want +OK", got)
	}
}

// TestInfoNodeDetailsForAdmin: INFO shows each node's line to admin users
// only; others see the counts.
func TestInfoNodeDetailsForAdmin(t *testing.T) {
	addr, _ := startServer(t, 3, Config{RequirePass: "root-pw", Users: testUsers})
	for _, tt := range []struct {
		user, pass string
		want       bool
	}{{"ops", "ops-pw", true}, {"app", "app-pw", false}, {"default", "root-pw", true}} {
		rc := dial(t, addr)
		rc.do(t, "AUTH", tt.user, tt.pass)
		got := rc.do(t, "INFO")
		if !strings.Contains(got, "nodes:3\r\n") {
			t.Errorf("INFO as %s = %q; want the node count", tt.user, got)
		}
		if has := strings.Contains(got, "node0:"); has != tt.want {
			t.Errorf("INFO as %s shows node0: %v; want %v", tt.user, has, tt.want)
		}
		if strings.Contains(got, "pw") {
			t.Errorf("INFO as %s = %q; shows a password", tt.user, got)
		}
	}
}

// TestReloadUsers reloads the users: a connection whose user is removed must
// AUTH again, a remaining user's new permissions apply from its next
// command, and a bad set is refused with the old one kept.
func TestReloadUsers(t *testing.T) {
	s, addr, _ := serveTest(t, 1, Config{Users: testUsers})
	app, reader := dial(t, addr), dial(t, addr)
	app.do(t, "AUTH", "app", "app-pw")
	reader.do(t, "AUTH", "reader", "reader-pw")
	if got := reader.do(t, "SET", "orders:1", "t", "NX", "PX", "1000"); got != noCmdPerm("set") {
		t.Fatalf("SET as reader = %q", got)
	}

	if err := s.Reload(Config{Users: []acl.UserConfig{{Name: "reader", Password: "new-pw", Allow: []string{"read", "lock"}}}}); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := reader.do(t, "SET", "orders:1", "t", "NX", "PX", "1000"); got != "+OK\r\n" {
		t.Errorf("SET as reader after it gained lock = %q; want +OK", got)
	}
	if got := app.do(t, "GET", "orders:1"); got != noAuth {
		t.Errorf("GET as the removed app = %q; want %q", got, noAuth)
	}
	if got := app.do(t, "AUTH", "app", "app-pw"); got != wrongPass {
		t.Errorf("AUTH app after removal = %q; want %q", got, wrongPass)
	}
	if got := dial(t, addr).do(t, "AUTH", "reader", "new-pw"); got != "+OK\r\n" {
		t.Errorf("AUTH reader with the new password = %q; want +OK", got)
	}

	if err := s.Reload(Config{Users: []acl.UserConfig{{Name: "x", Password: "pw", Allow: []string{"write"}}}}); err == nil {
		t.Errorf("Reload with a bad class = nil; want an error")
	}
	if got := dial(t, addr).do(t, "AUTH", "reader", "new-pw"); got != "+OK\r\n" {
		t.Errorf("AUTH reader after a refused reload = %q; want +OK (old users kept)", got)
	}

	// Dropping every user and password opens the default user, also to
	// connections that never authenticated.
	waiting := dial(t, addr)
	if got := waiting.do(t, "PING"); got != noAuth {
		t.Fatalf("PING before AUTH = %q", got)
	}
	if err := s.Reload(Config{}); err != nil {
		t.Fatal(err)
	}
	if got := waiting.do(t, "PING"); got != "+PONG\r\n" {
		t.Errorf("PING once no password is needed = %q; want +PONG", got)
	}
}

// TestUsersTransactions: StackExchange.Redis's release (WATCH, GET, MULTI,
// DEL, EXEC) is a lock operation for a user allowed lock and read; a
// refusal while queuing aborts the EXEC, as in Redis.
func TestUsersTransactions(t *testing.T) {
	addr, _ := startServer(t, 3, Config{Users: testUsers})
	app := dial(t, addr)
	app.do(t, "AUTH", "app", "app-pw")
	steps := []struct{ cmd, want string }{
		{"SET orders:1 tok NX PX 5000", "+OK\r\n"},
		{"WATCH other", noKeyPerm},
		{"WATCH orders:1", "+OK\r\n"},
		{"GET orders:1", "$3\r\ntok\r\n"},
		{"MULTI", "+OK\r\n"},
		{"DEL orders:1", "+QUEUED\r\n"},
		{"EXEC", "*1\r\n:1\r\n"},
		{"MULTI", "+OK\r\n"},
		{"PEXPIRE other 100", noKeyPerm},
		{"EXEC", "-EXECABORT"},
	}
	for _, st := range steps {
		if got := app.do(t, strings.Fields(st.cmd)...); !strings.HasPrefix(got, st.want) {
			t.Errorf("%s as app = %q; want %q", st.cmd, got, st.want)
		}
	}
	reader := dial(t, addr)
	reader.do(t, "AUTH", "reader", "reader-pw")
	for _, st := range []struct{ cmd, want string }{
		{"WATCH k", noCmdPerm("watch")},
		{"MULTI", "+OK\r\n"},
		{"DEL k", noCmdPerm("del")},
		{"EXEC", "-EXECABORT"},
	} {
		if got := reader.do(t, strings.Fields(st.cmd)...); !strings.HasPrefix(got, st.want) {
			t.Errorf("%s as reader = %q; want %q", st.cmd, got, st.want)
		}
	}
}

// TestClientListForAdmin: CLIENT LIST shows every connection with its
// user and name, never a password, to admin users only.
func TestClientListForAdmin(t *testing.T) {
	addr, _ := startServer(t, 1, Config{RequirePass: "root-pw", Users: testUsers})
	app := dial(t, addr)
	app.do(t, "AUTH", "app", "app-pw")
	app.do(t, "CLIENT", "SETNAME", "worker-7")
	app.do(t, "GET", "orders:1")
	waiting := dial(t, addr)
	waiting.do(t, "PING")

	reader := dial(t, addr)
	reader.do(t, "AUTH", "reader", "reader-pw")
	if got := reader.do(t, "CLIENT", "LIST"); got != noCmdPerm("client|list") {
		t.Errorf("CLIENT LIST as reader = %q; want %q", got, noCmdPerm("client|list"))
	}
	ops := dial(t, addr)
	ops.do(t, "AUTH", "ops", "ops-pw")
	got := ops.do(t, "CLIENT", "LIST")
	for _, want := range []string{"id=1 ", "name=worker-7 ", "user=app cmd=get\n", "id=2 ", "user=default cmd=NULL\n", "user=reader cmd=client\n", "user=ops cmd=client\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("CLIENT LIST as ops = %q; want it to contain %q", got, want)
		}
	}
	if n := strings.Count(got, "id="); n != 4 {
		t.Errorf("CLIENT LIST shows %d clients; want 4:\n%s", n, got)
	}
	if strings.Contains(got, "pw") {
		t.Errorf("CLIENT LIST = %q; shows a password", got)
	}
	if got := ops.do(t, "CLIENT", "LIST", "ID", "2"); !strings.Contains(got, "id=2 ") || strings.Contains(got, "id=1 ") {
		t.Errorf("CLIENT LIST ID 2 = %q; want client 2 alone", got)
	}
	if got := ops.do(t, "CLIENT", "LIST", "TYPE", "pubsub"); got != "$0\r\n\r\n" {
		t.Errorf("CLIENT LIST TYPE pubsub = %q; want none: no client holds a topic", got)
	}
	if got := ops.do(t, "CLIENT", "LIST", "TYPE", "nosuchtype"); !strings.HasPrefix(got, "-ERR Unknown client type") {
		t.Errorf("CLIENT LIST TYPE nosuchtype = %q; want an error", got)
	}
	app.c.Close()
	deadline := time.Now().Add(2 * time.Second)
	for strings.Contains(ops.do(t, "CLIENT", "LIST"), "user=app ") {
		if time.Now().After(deadline) {
			t.Fatalf("CLIENT LIST still shows app 2s after it closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPasswordsNeverLogged logs at debug level through failed and good
// logins and checks that no password appears in the log.
func TestPasswordsNeverLogged(t *testing.T) {
	var logs lockedLog
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, _ := newTestServer(t, 1, Config{RequirePass: "root-pw-1", Users: testUsers, Log: log})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, s, ln)
	rc := dial(t, ln.Addr().String())
	for _, args := range [][]string{
		{"AUTH", "wrong-pw-2"}, {"AUTH", "app", "wrong-pw-3"}, {"HELLO", "2", "AUTH", "app", "wrong-pw-4"},
		{"AUTH", "app", "app-pw"}, {"AUTH", "root-pw-1"},
	} {
		rc.do(t, args...)
	}
	for _, pw := range []string{"root-pw-1", "wrong-pw-2", "wrong-pw-3", "wrong-pw-4", "app-pw"} {
		if strings.Contains(logs.String(), pw) {
			t.Errorf("the log shows %q:\n%s", pw, logs.String())
		}
	}
	if !strings.Contains(logs.String(), "authentication failed") {
		t.Errorf("the log has no failed login:\n%s", logs.String())
	}
}

// lockedLog collects logs written from several goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *lockedLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
