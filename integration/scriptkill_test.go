package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// busyNodes starts n masters that answer BUSY 50ms into a script (Redis
// waits 5s by default before it reads anything else), and a proxy over
// them.
func busyNodes(t *testing.T, n int) ([]string, *proxyProc) {
	t.Helper()
	var addrs []string
	for range n {
		addrs = append(addrs, startRedis(t, "--busy-reply-threshold", "50").Addr)
	}
	return addrs, startProxy(t, proxy.Config{CommandTimeout: commandTimeout}, engineConfig(), addrs...)
}

// startBusy sends one command to addr on a connection of its own, which
// does not wait for the reply, and waits until the node is busy in it.
// It returns the connection, whose reply comes when the script ends.
func startBusy(t *testing.T, addr string, args ...string) *rawConn {
	t.Helper()
	c := dialRaw(t, addr)
	c.send(encodeCommand(args...))
	probe := dialRaw(t, addr)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if strings.Contains(probe.do("PING"), "BUSY") {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never busy in %q", addr, args)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// SCRIPT KILL through the proxy stops what the masters run, as one
// Redis's stops its own script: NOTBUSY when none runs one, OK when they
// ran one (as a script or as the wrapper's function) and it stopped, and
// Redis's UNKILLABLE when one has written. It used to answer NOTBUSY
// always, while every master stayed busy.
func TestScriptKillStopsTheMastersScripts(t *testing.T) {
	addrs, p := busyNodes(t, 3)
	ctx := t.Context()
	if got, want := errText(p.Client.Do(ctx, "SCRIPT", "KILL").Err()), "NOTBUSY No scripts in execution right now."; got != want {
		t.Fatalf("SCRIPT KILL with no script running = %q; want %q", got, want)
	}

	// A loop on every master, as a script on two and as a function on one.
	loop := "local i = 0 while true do i = i + 1 end"
	lib := direct(t, addrs[2])
	if err := lib.Do(ctx, "FUNCTION", "LOAD", "#!lua name=spin\nredis.register_function('spin', function() "+loop+" end)").Err(); err != nil {
		t.Fatalf("FUNCTION LOAD: %v", err)
	}
	busy := []*rawConn{
		startBusy(t, addrs[0], "EVAL", loop, "0"),
		startBusy(t, addrs[1], "EVAL", loop, "0"),
		startBusy(t, addrs[2], "FCALL", "spin", "0"),
	}
	if got := errText(p.Client.Do(ctx, "SCRIPT", "KILL").Err()); got != "" {
		t.Fatalf("SCRIPT KILL with every master busy = %q; want OK", got)
	}
	for i, c := range busy {
		if r := c.reply(); !strings.Contains(r, "killed by user") {
			t.Errorf("node %d: the busy command's reply = %q; want it killed", i, r)
		}
		if got := errText(direct(t, addrs[i]).Ping(ctx).Err()); got != "" {
			t.Errorf("node %d: PING after the kill = %q; want PONG", i, got)
		}
	}

	// A script that wrote cannot be killed: Redis's own UNKILLABLE.
	ref := startRedis(t, "--busy-reply-threshold", "50")
	writer := "redis.call('set', 'w', '1') " + loop
	startBusy(t, ref.Addr, "EVAL", writer, "0")
	want := errText(direct(t, ref.Addr).Do(ctx, "SCRIPT", "KILL").Err())
	startBusy(t, addrs[0], "EVAL", writer, "0")
	startBusy(t, addrs[1], "EVAL", loop, "0")
	if got := errText(p.Client.Do(ctx, "SCRIPT", "KILL").Err()); got != want || !strings.HasPrefix(got, "UNKILLABLE") {
		t.Errorf("SCRIPT KILL with one master past a write = %q; want one Redis's %q", got, want)
	}
	// The killed script stops at its next check, a moment after the
	// kill's reply.
	n1, deadline := direct(t, addrs[1]), time.Now().Add(2*time.Second)
	for {
		got := errText(n1.Ping(ctx).Err())
		if got == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("node 1: PING 2s after the kill = %q; want its script killed", got)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A script that may not end is refused before any master runs it: it
// used to stop every master at once.
func TestUnboundedLoopIsRefusedBeforeAnyNode(t *testing.T) {
	addrs, p := busyNodes(t, 3)
	ctx := t.Context()
	for _, body := range []string{
		"while true do end",
		"redis.call('set', KEYS[1], ARGV[1], 'PX', 1000) for i = 1, tonumber(ARGV[2]) do end return 1",
		"local function f() pcall(f) pcall(f) end f()",
	} {
		err := p.Client.Eval(ctx, body, []string{"k"}, "tok", "1000000000000").Err()
		if got := errText(err); !strings.HasPrefix(got, "ERR unsupported script: ") {
			t.Errorf("EVAL %q = %q; want refused", body, got)
		}
	}
	for i, a := range addrs {
		if got := errText(direct(t, a).Ping(ctx).Err()); got != "" {
			t.Errorf("node %d: PING = %q; want PONG", i, got)
		}
		if n := direct(t, a).Exists(ctx, "k").Val(); n != 0 {
			t.Errorf("node %d: k exists; want nothing run", i)
		}
	}
}

// FUNCTION KILL through the proxy answers as one Redis whose client runs
// an EVAL: NOTBUSY when idle, BUSY (use SCRIPT KILL) when a master runs
// a script, which it leaves running. Clients run no functions through
// the proxy.
func TestFunctionKillAnswersAsOneRedis(t *testing.T) {
	addrs, p := busyNodes(t, 3)
	ref := startRedis(t, "--busy-reply-threshold", "50")
	ctx := t.Context()
	if got, want := errText(p.Client.Do(ctx, "FUNCTION", "KILL").Err()), errText(direct(t, ref.Addr).Do(ctx, "FUNCTION", "KILL").Err()); got != want {
		t.Errorf("FUNCTION KILL with nothing running: proxy %q; one Redis %q", got, want)
	}
	loop := "local i = 0 while true do i = i + 1 end"
	startBusy(t, ref.Addr, "EVAL", loop, "0")
	want := errText(direct(t, ref.Addr).Do(ctx, "FUNCTION", "KILL").Err())
	busy := startBusy(t, addrs[1], "EVAL", loop, "0")
	if got := errText(p.Client.Do(ctx, "FUNCTION", "KILL").Err()); got != want {
		t.Errorf("FUNCTION KILL with a master in an EVAL: proxy %q; one Redis %q", got, want)
	}
	if got := errText(p.Client.Do(ctx, "SCRIPT", "KILL").Err()); got != "" {
		t.Errorf("SCRIPT KILL after FUNCTION KILL = %q; want OK (the script still ran)", got)
	}
	busy.reply()
}
