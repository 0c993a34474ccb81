package integration

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// Pipelined commands get their replies in the order they were sent.
func TestPipelinedCommandsKeepOrder(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()

	// go-redis writes the whole batch before it reads a reply.
	const n = 10
	cmds, err := p.Client.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := range n {
			key := "pipe-" + strconv.Itoa(i)
			pipe.Do(ctx, "SET", key, "tok"+strconv.Itoa(i), "NX", "PX", "5000")
			pipe.Echo(ctx, "echo-"+strconv.Itoa(i))
			pipe.Do(ctx, "SET", key, "late", "NX", "PX", "5000")
			pipe.Get(ctx, key)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("pipeline: %v", err)
	}
	if len(cmds) != 4*n {
		t.Fatalf("pipeline ran %d commands; want %d", len(cmds), 4*n)
	}
	for i := range n {
		set, echo, again, get := cmds[4*i], cmds[4*i+1], cmds[4*i+2], cmds[4*i+3]
		if v, err := set.(*redis.Cmd).Result(); err != nil || v != "OK" {
			t.Errorf("reply %d (SET pipe-%d) = %v, %v; want OK", 4*i, i, v, err)
		}
		if v, err := echo.(*redis.StringCmd).Result(); err != nil || v != "echo-"+strconv.Itoa(i) {
			t.Errorf("reply %d (ECHO) = %q, %v; want echo-%d", 4*i+1, v, err, i)
		}
		if v, err := again.(*redis.Cmd).Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("reply %d (second SET pipe-%d) = %v, %v; want nil", 4*i+2, i, v, err)
		}
		if v, err := get.(*redis.StringCmd).Result(); err != nil || v != "tok"+strconv.Itoa(i) {
			t.Errorf("reply %d (GET pipe-%d) = %q, %v; want tok%d", 4*i+3, i, v, err, i)
		}
	}

	// The same in one raw write, inline and multibulk mixed.
	raw := dialRaw(t, p.Addr)
	raw.send("PING\r\n" +
		encodeCommand("SET", "raw", "tok", "NX", "PX", "5000") +
		"GET raw\r\n" +
		encodeCommand("EVAL", distlockRelease, "1", "raw", "tok") +
		encodeCommand("GET", "raw") +
		"ECHO last\r\n")
	for i, want := range []string{"+PONG", "+OK", `"tok"`, ":1", "(nil)", `"last"`} {
		if got := raw.reply(); got != want {
			t.Errorf("raw pipeline reply %d = %s; want %s", i, got, want)
		}
	}
}

// HELLO 3 switches the connection to RESP3: HELLO's own reply is a map,
// a nil is RESP3's null, and HELLO 2 switches back.
func TestHello3SpeaksRESP3(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	raw := dialRaw(t, p.Addr)
	raw.send(encodeCommand("HELLO", "3"))
	raw.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := raw.r.ReadString('\n'); err != nil || line != "%8\r\n" {
		t.Fatalf("HELLO 3 starts %q, %v; want a map of 8 (Redis's 7 and proxy_version), %%8", line, err)
	}
	for range 16 {
		if _, err := readReply(raw.r); err != nil {
			t.Fatalf("read HELLO 3's map: %v", err)
		}
	}
	raw.send(encodeCommand("GET", "nothing"))
	if line, err := raw.r.ReadString('\n'); err != nil || line != "_\r\n" {
		t.Errorf("GET of a free key in RESP3 = %q, %v; want _", line, err)
	}
	if got := raw.do("HELLO", "2"); !strings.HasPrefix(got, `["server", "redis"`) {
		t.Errorf("HELLO 2 after HELLO 3 = %s; want a flat array", got)
	}
	if got := raw.do("GET", "nothing"); got != "(nil)" {
		t.Errorf("GET of a free key back in RESP2 = %s; want $-1", got)
	}
}

// HELLO 2 answers as Redis does, as a flat array, and applies SETNAME.
func TestHello2RepliesServerInfo(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	conn := p.Client.Conn()
	t.Cleanup(func() { conn.Close() })
	v, err := conn.Do(t.Context(), "HELLO", "2", "SETNAME", "via-hello").Slice()
	if err != nil {
		t.Fatalf("HELLO 2 SETNAME via-hello: %v", err)
	}
	fields := map[string]any{}
	for i := 0; i+1 < len(v); i += 2 {
		fields[fmt.Sprint(v[i])] = v[i+1]
	}
	if fields["proto"] != int64(2) || fields["server"] == nil || fields["id"] == nil {
		t.Errorf("HELLO 2 = %v; want server, id and proto 2", v)
	}
	if name, err := conn.ClientGetName(t.Context()).Result(); err != nil || name != "via-hello" {
		t.Errorf("CLIENT GETNAME after HELLO 2 SETNAME = %q, %v; want via-hello", name, err)
	}
}

// With requirepass, every command but AUTH gets NOAUTH, a bad password
// WRONGPASS, and the right one OK; before AUTH Redis's framing limits
// apply, so an 11-argument command is a protocol error.
func TestAuthWithRequirePass(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{RequirePass: "s3cret"})
	raw := dialRaw(t, p.Addr)
	for _, args := range [][]string{{"SET", "lock", "tok", "NX", "PX", "5000"}, {"PING"}, {"GET", "lock"}} {
		if got := raw.do(args...); got != "-NOAUTH Authentication required." {
			t.Errorf("%v before AUTH = %s; want -NOAUTH Authentication required.", args, got)
		}
	}
	for _, args := range [][]string{{"AUTH", "wrong"}, {"AUTH", "default", "wrong"}, {"AUTH", "admin", "s3cret"}} {
		if got := raw.do(args...); !strings.HasPrefix(got, "-WRONGPASS") {
			t.Errorf("%v = %s; want -WRONGPASS …", args, got)
		}
	}
	if got := raw.do("AUTH", "s3cret"); got != "+OK" {
		t.Fatalf("AUTH s3cret = %s; want +OK", got)
	}
	if got := raw.do("SET", "lock", "tok", "NX", "PX", "5000"); got != "+OK" {
		t.Errorf("SET after AUTH = %s; want +OK", got)
	}
	eleven := []string{"EXISTS", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10"}
	if got := raw.do(eleven...); got != ":0" {
		t.Errorf("11-argument EXISTS after AUTH = %s; want :0", got)
	}

	pre := dialRaw(t, p.Addr)
	pre.send(encodeCommand(eleven...))
	if got := pre.reply(); !strings.HasPrefix(got, "-ERR Protocol error") {
		t.Errorf("11-argument EXISTS before AUTH = %s; want -ERR Protocol error…", got)
	}
	pre.wantClosed(2 * time.Second)

	withPass := newClient(t, p.Addr, func(o *redis.Options) {
		o.Protocol, o.DisableIdentity, o.Password = 3, false, "s3cret"
	})
	if ok, err := withPass.SetNX(t.Context(), "lock2", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Errorf("go-redis with Password: SetNX = %v, %v; want true", ok, err)
	}
	// With Protocol 2, go-redis authenticates inside HELLO 2.
	withPass2 := newClient(t, p.Addr, func(o *redis.Options) { o.Password = "s3cret" })
	if ok, err := withPass2.SetNX(t.Context(), "lock3", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Errorf("go-redis with Password and Protocol 2: SetNX = %v, %v; want true", ok, err)
	}
	badPass := newClient(t, p.Addr, func(o *redis.Options) { o.Password = "wrong" })
	if err := badPass.Ping(t.Context()).Err(); !strings.HasPrefix(errText(err), "WRONGPASS") {
		t.Errorf("go-redis with a wrong Password: PING = %v; want WRONGPASS", err)
	}
}

// QUIT replies +OK, and then the server closes the socket.
func TestQuitRepliesOKAndCloses(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	raw := dialRaw(t, p.Addr)
	if got := raw.do("QUIT"); got != "+OK" {
		t.Fatalf("QUIT = %s; want +OK", got)
	}
	raw.wantClosed(2 * time.Second)
}

// Nothing pipelined after QUIT runs, as in Redis: a SET sent in the same
// write as QUIT takes no lock on any node.
func TestNothingRunsAfterQuit(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	raw := dialRaw(t, p.Addr)
	raw.send("QUIT\r\n" + encodeCommand("SET", "after-quit", "tok", "NX", "PX", "5000"))
	if got := raw.reply(); got != "+OK" {
		t.Fatalf("QUIT = %s; want +OK", got)
	}
	raw.wantClosed(2 * time.Second)
	// Had the SET run, it would have run right after the close.
	time.Sleep(100 * time.Millisecond)
	c.wantFreeEverywhere(t, "after-quit")
}

// SELECT 0 is OK; any other database is an error, and the connection
// stays usable.
func TestSelectOnlyDatabaseZero(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	raw := dialRaw(t, p.Addr)
	if got := raw.do("SELECT", "0"); got != "+OK" {
		t.Errorf("SELECT 0 = %s; want +OK", got)
	}
	for _, db := range []string{"1", "15", "-1", "x"} {
		if got := raw.do("SELECT", db); !strings.HasPrefix(got, "-ERR") {
			t.Errorf("SELECT %s = %s; want -ERR …", db, got)
		}
	}
	if got := raw.do("PING"); got != "+PONG" {
		t.Errorf("PING after SELECT errors = %s; want +PONG", got)
	}
	// go-redis with DB 1 fails to connect rather than use the wrong keys.
	db1 := newClient(t, p.Addr, func(o *redis.Options) { o.DB = 1 })
	if err := db1.Ping(t.Context()).Err(); err == nil {
		t.Errorf("go-redis with DB 1: PING succeeded; want the connection refused")
	}
}

// CLIENT SETNAME, GETNAME, SETINFO and ID answer as Redis does.
func TestClientSubcommands(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	a, b := dialRaw(t, p.Addr), dialRaw(t, p.Addr)
	if got := a.do("CLIENT", "GETNAME"); got != "(nil)" {
		t.Errorf("CLIENT GETNAME before SETNAME = %s; want (nil)", got)
	}
	if got := a.do("CLIENT", "SETNAME", "worker-1"); got != "+OK" {
		t.Errorf("CLIENT SETNAME worker-1 = %s; want +OK", got)
	}
	if got := a.do("client", "getname"); got != `"worker-1"` {
		t.Errorf("CLIENT GETNAME = %s; want \"worker-1\"", got)
	}
	if got := a.do("CLIENT", "SETNAME", "has space"); !strings.HasPrefix(got, "-ERR") {
		t.Errorf("CLIENT SETNAME with a space = %s; want -ERR …", got)
	}
	for _, attr := range [][]string{{"LIB-NAME", "go-redis(,go1.26)"}, {"LIB-VER", "9.23.0"}} {
		if got := a.do("client", "setinfo", attr[0], attr[1]); got != "+OK" {
			t.Errorf("CLIENT SETINFO %s = %s; want +OK", attr[0], got)
		}
	}
	idA, idB := a.do("CLIENT", "ID"), b.do("CLIENT", "ID")
	if !strings.HasPrefix(idA, ":") || !strings.HasPrefix(idB, ":") || idA == idB || idA == ":0" {
		t.Errorf("CLIENT ID on two connections = %s, %s; want two distinct positive integers", idA, idB)
	}
	if got := a.do("CLIENT", "NOSUCH"); !strings.HasPrefix(got, "-ERR") {
		t.Errorf("CLIENT NOSUCH = %s; want -ERR …", got)
	}
}

// INFO is a bulk string that says loading:0, as ioredis's ready check
// needs; as on one Redis, the line is in the persistence section.
func TestInfoIsBulkWithLoadingZero(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	raw := dialRaw(t, p.Addr)
	for _, args := range [][]string{{"INFO"}, {"info", "persistence"}} {
		got := raw.do(args...)
		if !strings.HasPrefix(got, `"`) {
			t.Errorf("%v = %.60s; want a bulk string", args, got)
			continue
		}
		text, err := strconv.Unquote(got)
		if err != nil || !strings.Contains(text, "\r\nloading:0\r\n") {
			t.Errorf("%v = %q; want a line loading:0", args, text)
		}
	}
}

// With max_clients reached, the extra client gets an error and is
// closed; once a client leaves, a new one is served.
func TestMaxClientsRefusesExtraClient(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{MaxClients: 2})
	// The server notices a closed client on its own time (startProxy's
	// own check used a slot): take the two slots with bounded retries.
	a, b := dialServed(t, p.Addr), dialServed(t, p.Addr)
	extra := dialRaw(t, p.Addr)
	if got := extra.reply(); !strings.HasPrefix(got, "-ERR max number of clients reached") {
		t.Errorf("third client got %s; want -ERR max number of clients reached", got)
	}
	extra.wantClosed(2 * time.Second)
	for _, c := range []*rawConn{a, b} {
		if got := c.do("PING"); got != "+PONG" {
			t.Errorf("PING on an allowed client after the refusal = %s; want +PONG", got)
		}
	}
	a.c.Close()
	dialServed(t, p.Addr)
}

// dialServed connects to addr until a PING on the new connection gets
// +PONG, for at most 3s.
func dialServed(t *testing.T, addr string) *rawConn {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		c := dialRaw(t, addr)
		got := c.do("PING")
		if got == "+PONG" {
			return c
		}
		c.c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("a new client got %s; want +PONG within 3s", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// idle_timeout closes a client that sends nothing, and not one that
// keeps talking.
func TestIdleTimeoutClosesIdleClient(t *testing.T) {
	const idle = 800 * time.Millisecond
	_, p := setup(t, 3, proxy.Config{IdleTimeout: idle})
	quiet, busy := dialRaw(t, p.Addr), dialRaw(t, p.Addr)
	start := time.Now()
	for _, c := range []*rawConn{quiet, busy} {
		if got := c.do("PING"); got != "+PONG" {
			t.Fatalf("PING = %s; want +PONG", got)
		}
	}
	for range 8 { // 8 × idle/4: past the timeout, never idle that long
		time.Sleep(idle / 4)
		if got := busy.do("PING"); got != "+PONG" {
			t.Fatalf("PING on the busy client after %v = %s; want +PONG", time.Since(start), got)
		}
	}
	quiet.wantClosed(2 * time.Second)
	if elapsed := time.Since(start); elapsed < idle {
		t.Errorf("idle client closed after %v; want after at least %v", elapsed, idle)
	}
}

// A command pipelined right after AUTH, in the same write, gets the full
// limits once AUTH succeeds, as Redis (which parses one command at a
// time) gives it: the pre-auth limits end with the AUTH that succeeds.
func TestPipelinedAuthLiftsPreAuthLimits(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{RequirePass: "s3cret"})
	raw := dialRaw(t, p.Addr)
	raw.send(encodeCommand("AUTH", "s3cret") +
		encodeCommand("EXISTS", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10"))
	for i, want := range []string{"+OK", ":0"} {
		if got := raw.reply(); got != want {
			t.Fatalf("reply %d to AUTH and an 11-argument EXISTS in one write = %s; want %s", i, got, want)
		}
	}
}
