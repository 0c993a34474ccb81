package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// StackExchange.Redis (RedisDatabase.cs) locks with LockTake (SET key
// token EX s NX, or PX ms for a fraction of a second), and, on a server
// without DELEX (the proxy reports Redis 7.0), LockRelease and LockExtend
// as a transaction: WATCH key and GET key (the condition) in one write,
// then, when GET returned the token, MULTI, DEL key or PEXPIRE key ms
// (EXPIRE key s for whole seconds) and EXEC in one write; otherwise
// UNWATCH. These replay that wire sequence byte for byte.

// seTx is one LockRelease or LockExtend as StackExchange.Redis sends it,
// with the replies it reads.
func seTx(c *rawConn, key, token string, op ...string) []string {
	c.t.Helper()
	c.send(encodeCommand("WATCH", key) + encodeCommand("GET", key))
	got := []string{c.reply(), c.reply()}
	if got[1] != `"`+token+`"` {
		c.send(encodeCommand("UNWATCH"))
		return append(got, c.reply())
	}
	c.send(encodeCommand("MULTI") + encodeCommand(op...) + encodeCommand("EXEC"))
	return append(got, c.reply(), c.reply(), c.reply())
}

// stackExchangeSession runs LockTake, LockExtend, LockQuery and
// LockRelease, contended and stale, against addr; changeKey is a second
// connection's compare-and-delete and take of the key, run between a
// transaction's GET and its EXEC.
func stackExchangeSession(t *testing.T, addr string) []string {
	t.Helper()
	c, other := dialRaw(t, addr), dialRaw(t, addr)
	var out []string
	add := func(what string, replies ...string) { out = append(out, what+" "+strings.Join(replies, " ")) }
	add("LockTake", c.do("SET", "se-lock", "tok-a", "EX", "30", "NX"))
	add("LockTake contended", other.do("SET", "se-lock", "tok-b", "PX", "1500", "NX"))
	add("LockExtend 20.5s", seTx(c, "se-lock", "tok-a", "PEXPIRE", "se-lock", "20500")...)
	add("LockExtend 40s", seTx(c, "se-lock", "tok-a", "EXPIRE", "se-lock", "40")...)
	add("LockQuery", c.do("GET", "se-lock"))
	add("LockExtend not owner", seTx(other, "se-lock", "tok-b", "PEXPIRE", "se-lock", "20500")...)
	add("LockRelease not owner", seTx(other, "se-lock", "tok-b", "DEL", "se-lock")...)
	add("LockRelease", seTx(c, "se-lock", "tok-a", "DEL", "se-lock")...)
	add("LockRelease stale", seTx(c, "se-lock", "tok-a", "DEL", "se-lock")...)
	add("LockQuery free", c.do("GET", "se-lock"))

	// The key changes between GET and EXEC: EXEC replies nil.
	add("LockTake again", c.do("SET", "se-lock", "tok-c", "PX", "30000", "NX"))
	c.send(encodeCommand("WATCH", "se-lock") + encodeCommand("GET", "se-lock"))
	add("WATCH, GET", c.reply(), c.reply())
	add("other releases", other.do("EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "se-lock", "tok-c"))
	add("other takes", other.do("SET", "se-lock", "tok-d", "PX", "30000", "NX"))
	c.send(encodeCommand("MULTI") + encodeCommand("DEL", "se-lock") + encodeCommand("EXEC"))
	add("MULTI, DEL, EXEC", c.reply(), c.reply(), c.reply())
	add("LockQuery other", c.do("GET", "se-lock"))
	return out
}

func TestStackExchangeLockAsOneRedis(t *testing.T) {
	single := startRedis(t)
	want := stackExchangeSession(t, single.Addr)
	for _, down := range []int{0, 2} {
		c, p := setup(t, 5, proxy.Config{})
		for i := range down {
			c.kill(i)
		}
		got := stackExchangeSession(t, p.Addr)
		wantSameSteps(t, fmt.Sprintf("%d of 5 masters down: ", down), got, want)
		if t.Failed() {
			return
		}
		if holders := c.holding(t, "se-lock", "tok-d"); len(holders) < 3 {
			t.Errorf("%d of 5 masters down: tok-d held on nodes %v; want a quorum", down, holders)
		}
	}
}

func TestStackExchangeTransactionNoQuorum(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	conn := dialRaw(t, p.Addr)
	if got := conn.do("SET", "se-lock", "tok-a", "PX", "30000", "NX"); got != "+OK" {
		t.Fatalf("SET NX = %s; want +OK", got)
	}
	conn.send(encodeCommand("WATCH", "se-lock") + encodeCommand("GET", "se-lock"))
	if got := conn.reply() + " " + conn.reply(); got != `+OK "tok-a"` {
		t.Fatalf("WATCH, GET = %s", got)
	}
	for i := range 3 {
		c.kill(i)
	}
	conn.send(encodeCommand("MULTI") + encodeCommand("DEL", "se-lock") + encodeCommand("EXEC"))
	got := conn.reply() + " " + conn.reply() + " " + conn.reply()
	if !strings.HasPrefix(got, "+OK +QUEUED -NOQUORUM 2 granted, 0 denied, 3 failed of 5 nodes; 3 needed") {
		t.Errorf("MULTI, DEL, EXEC with 3 of 5 masters down = %s; want +OK +QUEUED -NOQUORUM …", got)
	}
	// A release without quorum still deletes the token where it can.
	if holders := c.holding(t, "se-lock", "tok-a"); len(holders) != 0 {
		t.Errorf("tok-a still held on live nodes %v; want it deleted there", holders)
	}
}

// TestTransactionRefusedBodyReachesNoNode checks that a transaction the
// proxy cannot run on a quorum is refused at EXEC and sends nothing to
// any node, not even the WATCH.
func TestTransactionRefusedBodyReachesNoNode(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	mons := []*monitor{c.startMonitor(t, 0), c.startMonitor(t, 1), c.startMonitor(t, 2)}
	conn := dialRaw(t, p.Addr)
	for _, body := range [][][]string{
		{{"DEL", "k"}},                          // no GET before MULTI
		{{"INCR", "k"}},                         // not a lock command
		{{"SET", "k", "v"}, {"DEL", "k"}},       // two commands
		{{"PEXPIRE", "k", "100", "NX"}},         // an option
		{{"HSET", "k", "f", "v"}, {"GET", "k"}}, // refused while queuing
	} {
		conn.do("WATCH", "k")
		conn.do("MULTI")
		for _, cmd := range body {
			conn.do(cmd...)
		}
		if got := conn.do("EXEC"); !strings.HasPrefix(got, "-EXECABORT Transaction discarded") {
			t.Errorf("EXEC of %q = %s; want -EXECABORT Transaction discarded …", body, got)
		}
	}
	wantNoCommands(t, mons, "refused transactions")
}

// TestTransactionErrorsAsOneRedis sends the same MULTI, EXEC, DISCARD,
// WATCH and UNWATCH misuse to one redis-server and to the proxy.
func TestTransactionErrorsAsOneRedis(t *testing.T) {
	session := [][]string{
		{"EXEC"}, {"DISCARD"}, {"UNWATCH"}, {"WATCH"}, {"MULTI", "x"},
		{"MULTI"}, {"MULTI"}, {"WATCH", "k"}, {"GET", "k"}, {"NOSUCHCOMMAND", "a"}, {"EXEC"},
		{"MULTI"}, {"DEL"}, {"DISCARD"}, {"EXEC"},
		{"MULTI"}, {"EXEC"},
		{"MULTI"}, {"DEL", "k"}, {"DISCARD"}, {"DISCARD"},
		{"WATCH", "k"}, {"GET", "k"}, {"MULTI"}, {"PEXPIRE", "k", "ten"}, {"EXEC"},
		{"WATCH", "k"}, {"MULTI"}, {"UNWATCH"}, {"DISCARD"},
	}
	run := func(addr string) []string {
		c := dialRaw(t, addr)
		var out []string
		for _, cmd := range session {
			out = append(out, strings.Join(cmd, " ")+" => "+c.do(cmd...))
		}
		return out
	}
	want := run(startRedis(t).Addr)
	_, p := setup(t, 3, proxy.Config{})
	got := run(p.Addr)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("through the proxy: %s\n      one redis-server: %s", got[i], want[i])
		}
	}
}
