package proxy

import (
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/leakcheck"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// send writes args as one command without reading.
func (rc *rawConn) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := rc.c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// replies reads n replies.
func (rc *rawConn) replies(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		b.WriteString(rc.read(t))
	}
	return b.String()
}

func sub(kind, name string, n int) string {
	return "*3\r\n$" + strconv.Itoa(len(kind)) + "\r\n" + kind + "\r\n$" + strconv.Itoa(len(name)) + "\r\n" + name + "\r\n:" + strconv.Itoa(n) + "\r\n"
}

func TestSubscribedModeRepliesAsRedis(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	steps := []struct {
		cmd     []string
		replies int
		want    string
	}{
		{[]string{"SUBSCRIBE", "a", "b"}, 2, sub("subscribe", "a", 1) + sub("subscribe", "b", 2)},
		{[]string{"SUBSCRIBE", "a"}, 1, sub("subscribe", "a", 2)},
		{[]string{"PSUBSCRIBE", "p*", "q*"}, 2, sub("psubscribe", "p*", 3) + sub("psubscribe", "q*", 4)},
		{[]string{"PING"}, 1, "*2\r\n$4\r\npong\r\n$0\r\n\r\n"},
		{[]string{"PING", "hello"}, 1, "*2\r\n$4\r\npong\r\n$5\r\nhello\r\n"},
		{[]string{"PING", "a", "b"}, 1, "-ERR wrong number of arguments for 'ping' command\r\n"},
		{[]string{"GET", "x"}, 1, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"},
		{[]string{"SUBSCRIBE"}, 1, "-ERR wrong number of arguments for 'subscribe' command\r\n"},
	}
	for _, st := range steps {
		rc.send(t, st.cmd...)
		if got := rc.replies(t, st.replies); got != st.want {
			t.Errorf("%q = %q; want %q", st.cmd, got, st.want)
		}
	}
	// One publish, run on all three nodes: one message.
	for _, m := range minis {
		m.Publish("a", "0")
	}
	if got, want := rc.read(t), "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\n0\r\n"; got != want {
		t.Errorf("message = %q; want %q", got, want)
	}
	for _, m := range minis {
		m.Publish("pz", "1")
	}
	if got, want := rc.read(t), "*4\r\n$8\r\npmessage\r\n$2\r\np*\r\n$2\r\npz\r\n$1\r\n1\r\n"; got != want {
		t.Errorf("pmessage = %q; want %q", got, want)
	}
	for _, st := range []struct {
		cmd     []string
		replies int
		want    string
	}{
		{[]string{"UNSUBSCRIBE"}, 2, sub("unsubscribe", "a", 3) + sub("unsubscribe", "b", 2)},
		{[]string{"PUNSUBSCRIBE"}, 2, sub("punsubscribe", "p*", 1) + sub("punsubscribe", "q*", 0)},
		{[]string{"UNSUBSCRIBE"}, 1, "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"},
		{[]string{"PUNSUBSCRIBE"}, 1, "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n"},
		{[]string{"UNSUBSCRIBE", "zz"}, 1, sub("unsubscribe", "zz", 0)},
		{[]string{"PING"}, 1, "+PONG\r\n"},
		{[]string{"GET", "x"}, 1, "$-1\r\n"},
	} {
		rc.send(t, st.cmd...)
		if got := rc.replies(t, st.replies); got != st.want {
			t.Errorf("%q = %q; want %q", st.cmd, got, st.want)
		}
	}
}

func TestNoMessageAfterUnsubscribe(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	rc.send(t, "SUBSCRIBE", "a", "b")
	rc.replies(t, 2)
	rc.send(t, "UNSUBSCRIBE", "a")
	rc.replies(t, 1)
	for _, m := range minis {
		m.Publish("a", "late")
		m.Publish("b", "0")
	}
	if got, want := rc.read(t), "*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$1\r\n0\r\n"; got != want {
		t.Errorf("first message after UNSUBSCRIBE a = %q; want b's %q", got, want)
	}
}

func TestQuitWhileSubscribedRepliesAndCloses(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	rc.send(t, "SUBSCRIBE", "a")
	rc.replies(t, 1)
	if got := rc.do(t, "QUIT"); got != "+OK\r\n" {
		t.Errorf("QUIT = %q; want +OK", got)
	}
	if !rc.closed() {
		t.Errorf("connection still open after QUIT")
	}
}

// waitHubSettled waits until the hub's connection to each of n nodes is up
// with every goroutine it keeps: the pinger, started last, runs for each.
// A snapshot of goroutines taken before then counts the rest as a leak.
func waitHubSettled(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		got := strings.Count(stacks, "pubsub.(*node).ping(")
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d hub node connections up within 10s", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestClosedSubscriberLeavesNothing checks that a subscribed client that
// goes away leaves no goroutine behind and no subscription on the nodes.
func TestClosedSubscriberLeavesNothing(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	waitHubSettled(t, len(minis))
	before := leakcheck.Take()
	for range 20 {
		rc := dial(t, addr)
		rc.send(t, "SUBSCRIBE", "a", "b")
		rc.send(t, "PSUBSCRIBE", "p*")
		rc.replies(t, 3)
		for _, m := range minis {
			m.Publish("a", "0")
		}
		rc.read(t)
		rc.c.Close()
	}
	if err := leakcheck.Check(before, 5*time.Second); err != nil {
		t.Error(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for i, m := range minis {
		for len(m.PubSubChannels("")) > 0 || m.PubSubNumPat() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("node %d still has channels %v, %d patterns after every subscriber left", i, m.PubSubChannels(""), m.PubSubNumPat())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestSubscribedClientIsNotIdle checks that idle_timeout spares a client
// while it holds a subscription, as Redis spares pub/sub clients.
func TestSubscribedClientIsNotIdle(t *testing.T) {
	addr, minis := startServer(t, 3, Config{IdleTimeout: 200 * time.Millisecond})
	rc := dial(t, addr)
	rc.send(t, "SUBSCRIBE", "a")
	rc.replies(t, 1)
	time.Sleep(600 * time.Millisecond)
	for _, m := range minis {
		m.Publish("a", "0")
	}
	if got, want := rc.read(t), "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\n0\r\n"; got != want {
		t.Fatalf("message after 3 idle timeouts = %q; want %q", got, want)
	}
	rc.send(t, "UNSUBSCRIBE")
	rc.replies(t, 1)
	if !rc.closed() {
		t.Errorf("connection still open 2s after UNSUBSCRIBE with a 200ms idle_timeout")
	}
}

// TestIdleSubscribersCostOneGoroutineEach checks that a subscribed client
// that is not being written to holds only redcon's goroutine: messages
// are written by a goroutine that lives while there is something to
// write, and the node subscriptions are shared.
func TestIdleSubscribersCostOneGoroutineEach(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	const clients = 100
	waitHubSettled(t, len(minis))
	before := runtime.NumGoroutine()
	var m0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	var conns []*rawConn
	for i := range clients {
		rc := dial(t, addr)
		rc.send(t, "SUBSCRIBE", "a", "b"+strconv.Itoa(i))
		rc.replies(t, 2)
		conns = append(conns, rc)
	}
	for _, m := range minis {
		m.Publish("a", "0")
	}
	for _, rc := range conns {
		rc.read(t) // each got the message, once all are written
	}
	// The writers end once their queue is empty: wait for that, up to 10s.
	got := runtime.NumGoroutine() - before
	for deadline := time.Now().Add(10 * time.Second); got > clients+clients/10 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		got = runtime.NumGoroutine() - before
	}
	var m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m1)
	// Both ends of each connection live in this process: the figure is an
	// upper bound for the proxy's side.
	t.Logf("%d idle subscribed clients: %d more goroutines, %d KiB more heap (both ends)",
		clients, got, (int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/1024)
	if got > clients+clients/10 {
		t.Errorf("%d idle subscribed clients added %d goroutines; want about %d (one each)", clients, got, clients)
	}
}

// TestSubscribedRESP3 checks the RESP3 shapes: confirmations and messages
// are pushes, and other commands run as usual; after HELLO 2 messages are
// arrays again and other commands are refused.
func TestSubscribedRESP3(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	rc.do(t, "HELLO", "3")
	steps := []struct {
		cmd  []string
		want string
	}{
		{[]string{"SUBSCRIBE", "a"}, ">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n"},
		{[]string{"GET", "x"}, "_\r\n"},
		{[]string{"PING"}, "+PONG\r\n"},
	}
	for _, st := range steps {
		if got := rc.do(t, st.cmd...); got != st.want {
			t.Errorf("%q = %q; want %q", st.cmd, got, st.want)
		}
	}
	for _, m := range minis {
		m.Publish("a", "m3")
	}
	if got, want := rc.read(t), ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$2\r\nm3\r\n"; got != want {
		t.Errorf("message = %q; want %q", got, want)
	}
	for _, st := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"UNSUBSCRIBE"}, ">3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:0\r\n"},
		{[]string{"UNSUBSCRIBE"}, ">3\r\n$11\r\nunsubscribe\r\n_\r\n:0\r\n"},
		{[]string{"SUBSCRIBE", "b"}, ">3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:1\r\n"},
	} {
		if got := rc.do(t, st.cmd...); got != st.want {
			t.Errorf("%q = %q; want %q", st.cmd, got, st.want)
		}
	}
	rc.do(t, "HELLO", "2")
	for _, m := range minis {
		m.Publish("b", "m2")
	}
	if got, want := rc.read(t), "*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$2\r\nm2\r\n"; got != want {
		t.Errorf("message after HELLO 2 = %q; want %q", got, want)
	}
	if got := rc.do(t, "GET", "x"); !strings.HasPrefix(got, "-ERR Can't execute 'get'") {
		t.Errorf("GET after HELLO 2 while subscribed = %q; want Redis's refusal", got)
	}
}

func TestInfoCountsSubscriptions(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc := dial(t, addr)
	rc.send(t, "SUBSCRIBE", "a", "b")
	rc.send(t, "PSUBSCRIBE", "p*")
	rc.replies(t, 3)
	other := dial(t, addr)
	other.send(t, "SUBSCRIBE", "a")
	other.replies(t, 1)
	info := dial(t, addr).do(t, "INFO")
	if want := "# PubSub\r\npubsub_channels:2\r\npubsub_patterns:1\r\npubsub_shardchannels:0\r\npubsub_nodes_up:3\r\n"; !strings.Contains(info, want) {
		t.Errorf("INFO = %q; want it to hold %q", info, want)
	}
}

// TestMessageWhileSubscribingFollowsConfirmation checks that a message
// for a topic the nodes are still confirming is held, and written right
// after that topic's confirmation, never before it.
func TestMessageWhileSubscribingFollowsConfirmation(t *testing.T) {
	server, client := net.Pipe()
	defer client.Close()
	var running sync.WaitGroup
	sb := &subscriber{out: newOutbox(server, &running), active: map[pubsub.Topic]bool{}}
	a := pubsub.Topic{Kind: pubsub.Channel, Name: "a"}
	sb.active[a] = false // SUBSCRIBE a is waiting for the nodes
	sb.Deliver(pubsub.Message{Topic: a, Channel: "a", Payload: "early"})
	sb.Deliver(pubsub.Message{Topic: pubsub.Topic{Kind: pubsub.Channel, Name: "other"}, Channel: "other", Payload: "x"})

	got := make(chan string, 1)
	go func() { // the client reads what the outbox writes
		b := make([]byte, 256)
		var all []byte
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		for !strings.Contains(string(all), "early") {
			n, err := client.Read(b)
			if err != nil {
				break
			}
			all = append(all, b[:n]...)
		}
		got <- string(all)
	}()
	sb.mu.Lock()
	sb.active[a] = true
	sb.out.push(resp.Push(resp.Bulk("subscribe"), resp.Bulk("a"), resp.Int(1)), resp.RESP2, 64)
	sb.flushEarlyLocked(a)
	sb.mu.Unlock()
	want := "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nearly\r\n"
	if g := <-got; g != want {
		t.Errorf("written %q; want the confirmation, then the held message: %q", g, want)
	}
	sb.out.close()
	server.Close()
	running.Wait()
}
