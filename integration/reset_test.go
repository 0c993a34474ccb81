package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// resetSession runs RESET after each piece of connection state a lock
// client can leave behind and reads what follows. publish publishes on
// the server(s) behind addr. With pass, the server needs that password.
func resetSession(t *testing.T, addr, pass string, publish func(channel string)) []string {
	t.Helper()
	c := dialRaw(t, addr)
	var out []string
	read := func() string {
		v, err := readRESP(c.r)
		if err != nil {
			t.Fatalf("read reply: %v", err)
		}
		return v.String()
	}
	step := func(args ...string) {
		c.send(encodeCommand(args...))
		out = append(out, strings.Join(args, " ")+" => "+read())
	}
	// reset runs RESET, and logs in again where a password is needed.
	reset := func() {
		step("RESET")
		if pass != "" {
			step("AUTH", pass)
		}
	}
	if pass != "" {
		step("GET", "k")
		step("EXEC")  // refused before it runs: an EXECABORT
		step("RESET") // allowed before AUTH
		step("AUTH", pass)
	}
	step("CLIENT", "SETNAME", "worker")
	step("SET", "k", "v", "NX", "PX", "10000")
	step("RESET")
	if pass != "" {
		step("CLIENT", "GETNAME") // the default user needs the password again
		step("AUTH", pass)
	}
	step("CLIENT", "GETNAME")
	// A transaction: RESET runs at once and ends it.
	step("MULTI")
	step("SET", "k2", "v", "NX", "PX", "10000")
	reset()
	step("EXEC")
	step("EXISTS", "k2")
	// A wrong RESET inside MULTI aborts the EXEC; a wrong EXEC discards
	// the transaction.
	step("MULTI")
	step("RESET", "now")
	step("EXEC")
	step("MULTI")
	step("EXEC", "now")
	step("EXEC")
	// RESP3 ends.
	c.send(encodeCommand("HELLO", "3"))
	read() // the server's own id and version: not compared
	step("GET", "missing")
	reset()
	step("GET", "missing")
	// Subscriptions end, with no confirmation, and nothing published
	// afterwards arrives: the PING's reply is the next thing read.
	c.send(encodeCommand("SUBSCRIBE", "ch"))
	out = append(out, "SUBSCRIBE ch => "+read())
	step("GET", "k")
	reset()
	publish("ch")
	step("PING")
	step("GET", "k")
	if pass != "" {
		step("RESET")
		step("GET", "k") // the default user needs the password again
		// Back under the pre-auth limits: more than ten arguments is a
		// protocol error that closes the connection.
		c.send(encodeCommand("EXISTS", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"))
		out = append(out, "EXISTS a..j before AUTH => "+strings.SplitN(read(), ":", 2)[0])
		c.wantClosed(5 * time.Second)
	}
	return out
}

// RESET answers as one Redis does and leaves the connection as new.
func TestResetAsOneRedis(t *testing.T) {
	for _, pass := range []string{"", "s3cret"} {
		name := "no password"
		if pass != "" {
			name = "requirepass"
		}
		t.Run(name, func(t *testing.T) {
			var extra []string
			if pass != "" {
				extra = []string{"--requirepass", pass}
			}
			single := startRedis(t, extra...)
			admin := dialRaw(t, single.Addr)
			if pass != "" {
				admin.do("AUTH", pass)
			}
			want := resetSession(t, single.Addr, pass, func(ch string) { admin.do("PUBLISH", ch, "m") })
			c, p := setup(t, 3, proxy.Config{RequirePass: pass})
			got := resetSession(t, p.Addr, pass, func(ch string) {
				for _, d := range c.direct {
					d.Do(t.Context(), "PUBLISH", ch, "m")
				}
			})
			t.Logf("one redis-server:\n%s", strings.Join(want, "\n"))
			wantSameSteps(t, "", got, want)
		})
	}
}

// node-redis's client.reset() and its pool, which resets a client that
// comes back with a WATCH on, print through the proxy what they print
// against one redis-server.
func TestNodeRedisResetAsOneRedis(t *testing.T) {
	node := needTool(t, "node")
	if _, err := os.Stat(filepath.Join("testdata", "npm", "node_modules", "redis")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node-redis is not installed in testdata/npm: %v", err)
		}
		t.Skipf("node-redis not installed in testdata/npm (bash .ci/run installs it): %v", err)
	}
	run := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "nodereset.mjs"), host, port, "node-reset")
		out, err := cmd.Output() // the pool's warnings go to stderr
		if err != nil {
			t.Fatalf("nodereset.mjs against %s: %v\n%s", addr, err, out)
		}
		return string(out)
	}
	single := startRedis(t)
	want := run(single.Addr)
	c, p := setup(t, 3, proxy.Config{})
	got := run(p.Addr)
	t.Logf("one redis-server:\n%s", want)
	if got != want {
		t.Errorf("through the proxy:\n%s\nwant, as one redis-server:\n%s", got, want)
	}
	c.wantFreeEverywhere(t, "node-reset")
}
