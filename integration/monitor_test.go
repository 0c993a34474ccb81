package integration

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// monitorConn sends MONITOR on a new connection to addr and returns a
// reader of its lines.
func monitorConn(t *testing.T, addr string, login ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	rc := dialResp(t, addr)
	if len(login) == 2 {
		if v, err := rc.do(cmdOf("AUTH", login[0], login[1])); err != nil || v.String() != "+OK" {
			t.Fatalf("AUTH = %s, %v", v, err)
		}
	}
	if v, err := rc.do(cmdOf("MONITOR")); err != nil || v.String() != "+OK" {
		t.Fatalf("MONITOR = %s, %v", v, err)
	}
	return rc.c, rc.r
}

// readUntil reads monitor lines until one contains want, or 10s pass.
func readUntil(t *testing.T, c net.Conn, r *bufio.Reader, want string) []string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var lines []string
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v after %q", err, lines)
		}
		lines = append(lines, strings.TrimSuffix(l, "\r\n"))
		if strings.Contains(l, want) {
			return lines
		}
	}
}

// MONITOR shows every command as Redis prints it (the same quoting as one
// redis-server's MONITOR), tokens and passwords redacted, and each lock
// operation's outcome: the reply, the validity granted, each node's answer
// and time. Only admin users may run it.
func TestMonitorShowsCommandsRedacted(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{Users: []acl.UserConfig{
		{Name: "admin", Password: "admin-pw", Allow: []string{"lock", "read", "admin"}},
		{Name: "app", Password: "app-pw", Allow: []string{"lock", "read"}},
	}})
	ref := startRedis(t, "--requirepass", "admin-pw")
	mc, mr := monitorConn(t, p.Addr, "admin", "admin-pw")
	rmc, rmr := monitorConn(t, ref.Addr, "default", "admin-pw")

	app := dialResp(t, p.Addr)
	refApp := dialResp(t, ref.Addr)
	for _, c := range [][]string{
		{"AUTH", "app", "app-pw"}, {"SET", "lock:m", "tok-secret", "NX", "PX", "30000"}, {"GET", "lock:m"},
		{"ECHO", "a\"b\\c\n\r\t\x01é"}, {"SET", "lock:m", "tok-other", "NX", "PX", "30000"},
		{"EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "lock:m", "tok-secret"},
		{"HELLO", "2", "AUTH", "app", "app-pw"}, {"PING", "done"},
	} {
		if _, err := app.do(cmdOf(c...)); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if c[0] == "AUTH" || c[0] == "HELLO" {
			c = append([]string{c[0]}, append([]string{c[1]}, "default", "admin-pw")...)
			if c[0] == "AUTH" {
				c = []string{"AUTH", "default", "admin-pw"}
			} else {
				c = []string{"HELLO", "2", "AUTH", "default", "admin-pw"}
			}
		}
		if _, err := refApp.do(cmdOf(c...)); err != nil {
			t.Fatalf("redis %v: %v", c, err)
		}
	}
	lines := readUntil(t, mc, mr, `"done"`)
	refLines := readUntil(t, rmc, rmr, `"done"`)
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "tok-secret") || strings.Contains(all, "tok-other") || strings.Contains(all, "app-pw") {
		t.Errorf("MONITOR shows a token or a password:\n%s", all)
	}
	head := `^\+\d+\.\d{6} \[0 127\.0\.0\.1:\d+\] `
	for _, want := range []string{
		head + `"AUTH" "\(redacted\)" "\(redacted\)"$`,
		head + `"SET" "lock:m" "\(redacted\)" "NX" "PX" "30000"$`,
		head + `"redlock-proxy:outcome" "set" "ok" "validity_ms=(29\d\d\d|30000)" "node0=granted,[0-9.]+ms" "node1=granted,[0-9.]+ms" "node2=granted,[0-9.]+ms"$`,
		head + `"redlock-proxy:outcome" "set" "nil" "node0=denied,[0-9.]+ms" "node1=denied,[0-9.]+ms" "node2=denied,[0-9.]+ms"$`,
		head + `"GET" "lock:m"$`,
		head + `"EVAL" "if redis.call\(\\"get\\",KEYS\[1\]\) == ARGV\[1\] then return redis.call\(\\"del\\",KEYS\[1\]\) else return 0 end" "1" "lock:m" "\(redacted\)"$`,
		head + `"HELLO" "2" "AUTH" "\(redacted\)" "\(redacted\)"$`,
	} {
		re := regexp.MustCompile(want)
		found := false
		for _, l := range lines {
			found = found || re.MatchString(l)
		}
		if !found {
			t.Errorf("MONITOR has no line matching %s:\n%s", want, all)
		}
	}
	// The quoting is Redis's own.
	echo := func(ls []string) string {
		for _, l := range ls {
			if _, rest, ok := strings.Cut(l, `] "ECHO" `); ok {
				return rest
			}
		}
		return "(none)"
	}
	if got, want := echo(lines), echo(refLines); got != want {
		t.Errorf("MONITOR's ECHO line ends %s; one Redis: %s", got, want)
	}
	appMon := dialResp(t, p.Addr)
	appMon.do(cmdOf("AUTH", "app", "app-pw"))
	if v, _ := appMon.do(cmdOf("MONITOR")); !strings.HasPrefix(v.text, "NOPERM") {
		t.Errorf("MONITOR by a lock user = %s; want NOPERM", v)
	}
}

// A MONITOR client that never reads does not slow the proxy: its lines
// are dropped past a bound, and counted in INFO; commands go on, and a
// monitor that reads still gets every line.
func TestSlowMonitorReaderNeverSlowsProxy(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	monitorConn(t, p.Addr) // never read again
	good, gr := monitorConn(t, p.Addr)
	payload := strings.Repeat("x", 8<<10)
	const batches, perBatch = 30, 100
	lines := make(chan int, 1)
	go func() { // waited for below
		n := 0
		good.SetReadDeadline(time.Now().Add(60 * time.Second))
		for n < batches*perBatch {
			l, err := gr.ReadString('\n')
			if err != nil {
				break
			}
			if strings.Contains(l, `"echo"`) { // as go-redis sends it
				n++
			}
		}
		lines <- n
	}()
	for range batches {
		cmds, err := p.Client.Pipelined(t.Context(), func(pp redis.Pipeliner) error {
			for range perBatch {
				pp.Echo(t.Context(), payload)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ECHO batch: %v (%d replies)", err, len(cmds))
		}
	}
	if n := <-lines; n != batches*perBatch {
		t.Errorf("the reading monitor got %d ECHO lines; want %d", n, batches*perBatch)
	}
	info := p.Client.Info(t.Context(), "quorum").Val()
	m := regexp.MustCompile(`monitor_lines_dropped:(\d+)`).FindStringSubmatch(info)
	if m == nil {
		t.Fatalf("INFO quorum has no monitor_lines_dropped:\n%s", info)
	}
	// 3000 lines of 8 KiB is 24 MiB; the silent monitor holds 1 MiB
	// queued plus what one write and the socket buffers take.
	if n, _ := strconv.Atoi(m[1]); n < batches*perBatch/2 {
		t.Errorf("monitor_lines_dropped = %d; want most of the %d lines the silent monitor could not take", n, batches*perBatch)
	}
}

// SLOWLOG records the commands over slowlog_slower_than with each node's
// time and answer (a paused master's timeout shows on its entry), tokens
// redacted; LEN and RESET as Redis; a reload changes the threshold.
func TestSlowlogRecordsQuorumOperationsOverThreshold(t *testing.T) {
	c := startNodes(t, 3)
	cfg := proxy.Config{SlowlogSlowerThan: 30 * time.Millisecond, CommandTimeout: commandTimeout}
	p := startProxy(t, cfg, quorum.Config{NodeTimeout: 60 * time.Millisecond}, c.addrs...)
	ctx := t.Context()
	p.Client.SlowLogReset(ctx)
	if err := c.direct[1].Do(ctx, "CLIENT", "PAUSE", "400", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	if err := p.Client.SetNX(ctx, "lock:slow", "tok-secret", 30*time.Second).Err(); err != nil {
		t.Fatalf("SET with node 1 paused: %v", err)
	}
	logs, err := p.Client.SlowLogGet(ctx, -1).Result()
	if err != nil {
		t.Fatalf("SLOWLOG GET: %v", err)
	}
	var entry *redis.SlowLog
	for i := range logs {
		if len(logs[i].Args) > 1 && logs[i].Args[1] == "lock:slow" {
			entry = &logs[i]
		}
	}
	if entry == nil {
		t.Fatalf("SLOWLOG GET = %+v; want the SET that waited for node 1", logs)
	}
	if got := strings.Join(entry.Args, " "); got != "set lock:slow (redacted) ex 30 nx" {
		t.Errorf("slow log args = %q; want go-redis's SET with the token redacted", got)
	}
	if entry.Duration < 60*time.Millisecond || entry.ClientAddr == "" {
		t.Errorf("slow log entry = %+v; want at least node_timeout and the client's address", entry)
	}
	// The proxy's own field: each node's part.
	raw, err := p.Client.Do(ctx, "SLOWLOG", "GET", "1").Slice()
	if err != nil || len(raw) != 1 {
		t.Fatalf("SLOWLOG GET 1 = %v, %v", raw, err)
	}
	e := raw[0].([]any)
	if len(e) != 8 {
		t.Fatalf("slow log entry has %d fields; want Redis's 7 and the nodes' times", len(e))
	}
	nodes := fmt.Sprint(e[7])
	for _, want := range []string{"node0=" + c.addrs[0] + ",usec=", "node1=" + c.addrs[1] + ",usec=", ",answer=failed", ",answer=granted"} {
		if !strings.Contains(nodes, want) {
			t.Errorf("slow log nodes = %s; want %q", nodes, want)
		}
	}
	if m := regexp.MustCompile(`node1=[^,]+,usec=(\d+),calls=\d+,answer=failed`).FindStringSubmatch(nodes); m == nil {
		t.Errorf("slow log nodes = %s; want node 1 failed", nodes)
	} else if us, _ := strconv.Atoi(m[1]); us < 50000 {
		t.Errorf("node 1's time = %dus; want about node_timeout (60ms)", us)
	}
	if n, err := p.Client.SlowLogLen(ctx).Result(); err != nil || n < 1 {
		t.Errorf("SLOWLOG LEN = %d, %v", n, err)
	}
	if err := p.Client.SlowLogReset(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // node 1's pause ends

	// Over a reloaded threshold of 10s, nothing is slow; turned off,
	// nothing is logged either.
	for _, th := range []time.Duration{10 * time.Second, -1} {
		cfg.SlowlogSlowerThan = th
		if err := p.Server.Reload(cfg); err != nil {
			t.Fatal(err)
		}
		c.direct[2].Do(ctx, "CLIENT", "PAUSE", "100", "ALL")
		p.Client.SetNX(ctx, fmt.Sprintf("lock:th%d", th), "t", 30*time.Second)
		if n, _ := p.Client.SlowLogLen(ctx).Result(); n != 0 {
			t.Errorf("SLOWLOG LEN with slowlog_slower_than %v = %d; want 0", th, n)
		}
		time.Sleep(150 * time.Millisecond)
	}
	cfg.SlowlogSlowerThan = time.Nanosecond // everything
	cfg.SlowlogMaxLen = 3
	if err := p.Server.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		p.Client.Get(ctx, "lock:slow")
	}
	if n, _ := p.Client.SlowLogLen(ctx).Result(); n != 3 {
		t.Errorf("SLOWLOG LEN with slowlog_max_len 3 = %d; want 3", n)
	}
}
