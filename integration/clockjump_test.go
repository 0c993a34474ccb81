package integration

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// clockRelay is a loopback TCP relay in front of one redis-server that
// passes every command and reply through unchanged, except that it adds
// its skew to the node's clock in replies to TIME: it plays a master
// whose wall clock jumped, or runs fast.
type clockRelay struct {
	Addr string
	skew atomic.Pointer[func() time.Duration]
	// uptime, when set, also moves INFO's uptime_in_seconds by the skew:
	// a process whose wall clock stepped after it started (Redis takes its
	// uptime from the wall clock).
	uptime atomic.Bool
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	open   map[net.Conn]bool
}

// startClockRelay relays a free loopback port to upstream, with no skew,
// until the test ends.
func startClockRelay(t testing.TB, upstream string) *clockRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("relay listen: %v", err)
	}
	r := &clockRelay{Addr: ln.Addr().String(), ln: ln, open: map[net.Conn]bool{}}
	r.setSkew(func() time.Duration { return 0 })
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Go(func() { r.serve(c, upstream) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		r.mu.Lock()
		for c := range r.open {
			c.Close()
		}
		r.open = nil
		r.mu.Unlock()
		r.wg.Wait()
	})
	return r
}

// setSkew makes f, called at each TIME reply, the skew of the node's clock.
func (r *clockRelay) setSkew(f func() time.Duration) { r.skew.Store(&f) }

// track adds c to the open connections, or closes it if the relay is
// closing; false then.
func (r *clockRelay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open == nil {
		c.Close()
		return false
	}
	r.open[c] = true
	return true
}

// serve relays client c to upstream. Requests are read one command at a
// time, so each reply can be matched to its command in order.
func (r *clockRelay) serve(c net.Conn, upstream string) {
	up, err := net.Dial("tcp", upstream)
	if err != nil {
		c.Close()
		return
	}
	if !r.track(c) || !r.track(up) {
		c.Close()
		up.Close()
		return
	}
	pending := make(chan string, 1024) // per command sent: its name
	var once sync.Once
	done := make(chan struct{})
	stop := func() {
		once.Do(func() {
			close(done)
			c.Close()
			up.Close()
			r.mu.Lock()
			delete(r.open, c) // a no-op on the nil map once closing
			delete(r.open, up)
			r.mu.Unlock()
		})
	}
	r.wg.Go(func() { // replies
		defer stop()
		in := bufio.NewReader(up)
		for {
			var raw bytes.Buffer
			text, items, err := readValue(in, &raw)
			if err != nil {
				return
			}
			var name string
			select {
			case name = <-pending:
			case <-done:
				return
			}
			out := raw.Bytes()
			switch {
			case name == "TIME" && len(items) == 2:
				out = skewTime(items, (*r.skew.Load())())
			case name == "INFO" && r.uptime.Load() && text != "":
				out = skewUptime(text, (*r.skew.Load())())
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	})
	defer stop()
	in := bufio.NewReader(c)
	for {
		var raw bytes.Buffer
		_, items, err := readValue(in, &raw)
		if err != nil {
			return
		}
		select {
		case pending <- commandName(items):
		case <-done:
			return
		}
		if _, err := up.Write(raw.Bytes()); err != nil {
			return
		}
	}
}

// readValue reads one RESP2 value from in, copying its bytes to raw. It
// returns a simple string's, error's, integer's or bulk string's text, or
// an array's elements' texts ("" for a nested array or a nil).
func readValue(in *bufio.Reader, raw *bytes.Buffer) (string, []string, error) {
	line, err := in.ReadString('\n')
	if err != nil {
		return "", nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return "", nil, fmt.Errorf("bad RESP line %q", line)
	}
	raw.WriteString(line)
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':':
		return body, nil, nil
	case '$', '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return "", nil, fmt.Errorf("bad RESP length %q", line)
		}
		if line[0] == '$' {
			if n < 0 {
				return "", nil, nil
			}
			b := make([]byte, n+2)
			if _, err := io.ReadFull(in, b); err != nil {
				return "", nil, err
			}
			raw.Write(b)
			return string(b[:n]), nil, nil
		}
		items := []string{}
		for range n { // a nil array (n < 0) has none
			s, _, err := readValue(in, raw)
			if err != nil {
				return "", nil, err
			}
			items = append(items, s)
		}
		return "", items, nil
	}
	return "", nil, fmt.Errorf("unknown RESP type %q", line)
}

// skewTime is the reply to TIME whose seconds and microseconds are items,
// moved by d.
func skewTime(items []string, d time.Duration) []byte {
	sec, _ := strconv.ParseInt(items[0], 10, 64)
	usec, _ := strconv.ParseInt(items[1], 10, 64)
	tm := time.Unix(sec, usec*1000).Add(d)
	s, us := strconv.FormatInt(tm.Unix(), 10), strconv.Itoa(tm.Nanosecond()/1000)
	return fmt.Appendf(nil, "*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(s), s, len(us), us)
}

// commandName is the upper-cased name of the command items, or "".
func commandName(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return strings.ToUpper(items[0])
}

// skewUptime is the INFO reply text with its uptime_in_seconds moved by d.
func skewUptime(text string, d time.Duration) []byte {
	lines := strings.Split(text, "\r\n")
	for i, l := range lines {
		if v, ok := strings.CutPrefix(l, "uptime_in_seconds:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			lines[i] = "uptime_in_seconds:" + strconv.FormatInt(n+int64(d/time.Second), 10)
		}
	}
	out := strings.Join(lines, "\r\n")
	return fmt.Appendf(nil, "$%d\r\n%s\r\n", len(out), out)
}

func TestClockJumpRelayParsing(t *testing.T) {
	tests := []struct {
		in    string
		text  string
		items []string
	}{
		{"+OK\r\n", "OK", nil},
		{"-ERR no\r\n", "ERR no", nil},
		{":42\r\n", "42", nil},
		{"$5\r\nhe\r\nl\r\n", "he\r\nl", nil}, // the length, not the CRLF, ends it
		{"$0\r\n\r\n", "", nil},
		{"$-1\r\n", "", nil},
		{"*-1\r\n", "", []string{}},
		{"*0\r\n", "", []string{}},
		{"*2\r\n$4\r\nTIME\r\n$-1\r\n", "", []string{"TIME", ""}},
		{"*3\r\n:1\r\n*2\r\n+a\r\n*1\r\n$1\r\nb\r\n-E\r\n", "", []string{"1", "", "E"}},
	}
	for _, tt := range tests {
		// A second value behind each must be left unread.
		in := bufio.NewReader(strings.NewReader(tt.in + "+next\r\n"))
		var raw bytes.Buffer
		text, items, err := readValue(in, &raw)
		if err != nil || text != tt.text || fmt.Sprint(items) != fmt.Sprint(tt.items) || (items == nil) != (tt.items == nil) || raw.String() != tt.in {
			t.Errorf("readValue(%q) = %q, %q, raw %q, %v; want %q, %q", tt.in, text, items, raw.String(), err, tt.text, tt.items)
		}
		if rest, _ := in.ReadString('\n'); rest != "+next\r\n" {
			t.Errorf("readValue(%q) left %q; want +next", tt.in, rest)
		}
	}
	got := string(skewTime([]string{"1700000000", "999999"}, 1500*time.Millisecond))
	if want := "*2\r\n$10\r\n1700000002\r\n$6\r\n499999\r\n"; got != want {
		t.Errorf("skewTime = %q; want %q", got, want)
	}
}

// clockConfig is the engine config of the clock tests: quarantines last
// max_ttl + drift = 2.022s, and each node is probed every 100ms.
func clockConfig() quorum.Config {
	cfg := safetyConfig()
	cfg.ClockJumpLimit = 50 * time.Millisecond
	return cfg
}

// startClockCluster starts n masters and a monitored proxy that reaches
// node 0 through a clock relay.
func startClockCluster(t *testing.T, n int) (*cluster, *clockRelay, *proxyProc) {
	skipLong(t)
	c := startNodes(t, n)
	relay := startClockRelay(t, c.addrs[0])
	addrs := append([]string{relay.Addr}, c.addrs[1:]...)
	return c, relay, mustStartMonitored(t, clockConfig(), addrs...)
}

// wantNoQuorum wants SET NX of key through p to fail with NOQUORUM while
// nodes 3 and 4 hold key for someone else: of nodes 0-2, which all grant,
// node 0's grant must not count.
func wantNoQuorum(t *testing.T, c *cluster, p *proxyProc, key string) {
	t.Helper()
	for _, i := range []int{3, 4} {
		if err := c.direct[i].Set(t.Context(), key, "other", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	err := p.Client.SetNX(t.Context(), key, "t", time.Second).Err()
	if err == nil || errors.Is(err, redis.Nil) || !strings.HasPrefix(err.Error(), "NOQUORUM") {
		t.Errorf("SET NX %s with node0 quarantined = %v; want a NOQUORUM error", key, err)
	}
	if v, ok := c.value(t, 0, key); ok {
		t.Errorf("node0 holds %s = %q after the failed acquire; want it released", key, v)
	}
}

// wantJump wants reason to be a clock jump of about skew: the engine
// reports what it measured, which the round trips blur.
func wantJump(t *testing.T, reason string, skew time.Duration) {
	t.Helper()
	d, err := time.ParseDuration(strings.TrimPrefix(strings.TrimPrefix(reason, "clock jumped "), "+"))
	if !strings.HasPrefix(reason, "clock jumped ") || err != nil || d < skew-250*time.Millisecond || d > skew+250*time.Millisecond {
		t.Errorf("node0 reason = %q; want clock jumped %v (within 250ms)", reason, skew)
	}
}

func TestClockJumpQuarantines(t *testing.T) {
	c, relay, p := startClockCluster(t, 5)
	cfg := clockConfig()
	if err := p.Client.SetNX(t.Context(), "before", "t", time.Second).Err(); err != nil {
		t.Fatalf("SET NX before the jump: %v", err)
	}

	relay.setSkew(func() time.Duration { return 5 * time.Second })
	jumped := time.Now()
	f := waitState(t, p.Client, 0, "quarantined", 3*time.Second)
	t.Logf("quarantined %v after the jump: %v", time.Since(jumped).Round(time.Millisecond), f)
	wantJump(t, f["reason"], 5*time.Second)
	until, err := time.Parse(time.RFC3339Nano, f["until"])
	if err != nil {
		t.Fatalf("until %q: %v", f["until"], err)
	}
	quarantine := cfg.MaxTTL + 22*time.Millisecond // max_ttl + drift
	if lo, hi := jumped.Add(quarantine), time.Now().Add(quarantine); until.Before(lo) || until.After(hi) {
		t.Errorf("until = %v; want in [%v, %v] (max_ttl + drift after the jump was seen)", until, lo, hi)
	}
	wantNoQuorum(t, c, p, "k")
	for i := 1; i < 5; i++ {
		if st := nodeInfo(t, p.Client, i)["state"]; st != "up" {
			t.Errorf("node%d state = %s; want up", i, st)
		}
	}

	// The clock stays 5s ahead but no longer moves against the proxy's:
	// once the quarantine ends, node0's grant counts again.
	waitState(t, p.Client, 0, "up", quarantine+3*time.Second)
	if time.Now().Before(until) {
		t.Errorf("node0 up at %v; want not before %v", time.Now(), until)
	}
	if err := p.Client.SetNX(t.Context(), "k", "t", time.Second).Err(); err != nil {
		t.Errorf("SET NX after the quarantine: %v", err)
	}
	if got := c.holding(t, "k", "t"); fmt.Sprint(got) != "[0 1 2]" {
		t.Errorf("nodes holding k = %v; want [0 1 2]", got)
	}
}

func TestClockJumpFastClockQuarantines(t *testing.T) {
	c, relay, p := startClockCluster(t, 5)
	// 10% fast: 10ms more per 100ms probe, far under the 50ms limit for
	// any one probe, but 50ms more than the drift allows within ~0.6s.
	fast := time.Now()
	relay.setSkew(func() time.Duration { return time.Since(fast) / 10 })
	f := waitState(t, p.Client, 0, "quarantined", 5*time.Second)
	t.Logf("quarantined %v after the clock ran fast: %v", time.Since(fast).Round(time.Millisecond), f)
	if !strings.HasPrefix(f["reason"], "clock rate off by +") {
		t.Errorf("node0 reason = %q; want clock rate off by +...", f["reason"])
	}
	wantNoQuorum(t, c, p, "k")
}

func TestClockJumpNoFalsePositive(t *testing.T) {
	c, relay, p := startClockCluster(t, 5)
	// A few seconds of steady lock traffic through the proxy, and so
	// through the relay, with INFO polled throughout: no node may be
	// quarantined, however the round trips vary.
	deadline := time.Now().Add(4 * time.Second)
	var wg sync.WaitGroup
	var acquired atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
				key := fmt.Sprintf("w%d-%d", w, i)
				if p.Client.SetNX(t.Context(), key, "t", time.Second).Err() == nil {
					acquired.Add(1)
				}
			}
		})
	}
	polls := 0
	for time.Now().Before(deadline) {
		for i := range c.addrs {
			if f := nodeInfo(t, p.Client, i); f["state"] != "up" {
				t.Fatalf("node%d = %v with no skew; want up", i, f)
			}
		}
		polls++
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	t.Logf("%d acquires, %d INFO polls, no quarantine", acquired.Load(), polls)
	if acquired.Load() == 0 {
		t.Fatal("no acquire succeeded")
	}
	// The same relay and proxy do see a jump: the quiet above was not
	// blindness.
	relay.setSkew(func() time.Duration { return -time.Second })
	f := waitState(t, p.Client, 0, "quarantined", 3*time.Second)
	wantJump(t, f["reason"], -time.Second)
}
