package pubsub

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/leakcheck"
	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }

// sink records what it is delivered.
type sink struct {
	mu   sync.Mutex
	got  []Message
	more chan struct{}
}

func newSink() *sink { return &sink{more: make(chan struct{}, 100)} }

func (s *sink) Deliver(m Message) {
	s.mu.Lock()
	s.got = append(s.got, m)
	s.mu.Unlock()
	s.more <- struct{}{}
}

// wantCount waits for n messages in all, then a moment more to catch
// extra copies, and returns what came.
func (s *sink) wantCount(t *testing.T, n int) []Message {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		have := len(s.got)
		s.mu.Unlock()
		if have >= n {
			break
		}
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("got %d messages within 5s; want %d", have, n)
		}
	}
	time.Sleep(300 * time.Millisecond) // copies of one publish arrive together
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) != n {
		t.Errorf("got %d messages %v; want %d", len(s.got), s.got, n)
	}
	return slices.Clone(s.got)
}

// do sends one command to addr on a new connection and returns its reply.
func do(t *testing.T, addr string, args ...string) value {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(appendCommand(nil, args...)); err != nil {
		t.Fatal(err)
	}
	v, err := readValue(bufio.NewReader(c), 0)
	if err != nil {
		t.Fatalf("%s %q: %v", addr, args, err)
	}
	return v
}

func publishOn(t *testing.T, addrs []string, channel, payload string) {
	t.Helper()
	for _, a := range addrs {
		do(t, a, "PUBLISH", channel, payload)
	}
}

// numsub is how many subscribers channel has on the node at addr.
func numsub(t *testing.T, addr, channel string) int64 {
	t.Helper()
	v := do(t, addr, "PUBSUB", "NUMSUB", channel)
	return v.items[1].n
}

func startNodes(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		addrs = append(addrs, redistest.Start(t).Addr)
	}
	return addrs
}

func newHub(t *testing.T, addrs []string) *Hub {
	h := New(Config{Nodes: addrs, RetryInterval: 50 * time.Millisecond, pingInterval: 200 * time.Millisecond})
	t.Cleanup(func() { h.Close() })
	return h
}

func subscribe(t *testing.T, h *Hub, s Sink, topics ...Topic) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	h.Subscribe(ctx, s, topics...)
}

func TestHubDeliversEachPublishOnce(t *testing.T) {
	addrs := startNodes(t, 3)
	// Every node is up, so Subscribe must wait for all three however slow
	// a loaded machine makes the last; Grace, for a node that does not
	// answer, is left out of it (TestHubSubscribeDoesNotWaitForAFrozenNode).
	h := New(Config{Nodes: addrs, RetryInterval: 50 * time.Millisecond, pingInterval: 200 * time.Millisecond, grace: time.Minute})
	t.Cleanup(func() { h.Close() })
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"})
	for i, a := range addrs {
		if n := numsub(t, a, "ch"); n != 1 {
			t.Fatalf("node %d: NUMSUB ch = %d once Subscribe returned; want 1", i, n)
		}
	}
	publishOn(t, addrs, "ch", "0") // one release, run on all three nodes
	s.wantCount(t, 1)
	publishOn(t, addrs, "ch", "0") // a second release, same payload
	s.wantCount(t, 2)
	publishOn(t, addrs[2:], "ch", "1") // a publish only one node saw
	got := s.wantCount(t, 3)
	want := Message{Topic{Channel, "ch"}, "ch", "1"}
	if got[2] != want {
		t.Errorf("third message = %+v; want %+v", got[2], want)
	}
}

// A release runs on every node and each publishes once it deleted: the
// message waits for a quorum of copies, so that a waiter it wakes finds
// the release done on a quorum (one Redis publishes after deleting).
func TestHubWaitsForAQuorumOfCopies(t *testing.T) {
	addrs := startNodes(t, 3)
	h := New(Config{Nodes: addrs, RetryInterval: 50 * time.Millisecond, pingInterval: 200 * time.Millisecond,
		grace: time.Minute, settle: time.Minute})
	t.Cleanup(func() { h.Close() })
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"})
	publishOn(t, addrs[:1], "ch", "0")
	// A marker that nodes 0 and 1 send is due once node 0's copy came,
	// and node 0 sent its copy of "0" before: when the marker is
	// delivered, "0" was counted, one copy of 3, and must wait (Settle is
	// a minute).
	publishOn(t, addrs[:2], "ch", "marker")
	if got := s.wantCount(t, 1); got[0].Payload != "marker" {
		t.Fatalf("delivered %q first; want only the marker before a quorum sent \"0\"", got[0].Payload)
	}
	publishOn(t, addrs[1:2], "ch", "0")
	if got := s.wantCount(t, 2); got[1].Payload != "0" {
		t.Errorf("second message = %q; want \"0\" once 2 of 3 nodes sent it", got[1].Payload)
	}
}

// A proxy's publish carries its tag (internal/pubid) in every node's
// copy: the hub counts the copies by it and delivers the payload without
// it. Three publishes of "0", each sent by another two of three nodes,
// are three deliveries (attack17 F3: untagged, the third reads as late
// copies and is lost). A payload that only starts like a tag is no tag,
// and an untagged payload is delivered as it was sent.
func TestHubCountsTaggedPublishesByTheirTag(t *testing.T) {
	addrs := startNodes(t, 3)
	h := New(Config{Nodes: addrs, RetryInterval: 50 * time.Millisecond, pingInterval: 200 * time.Millisecond, grace: time.Minute})
	t.Cleanup(func() { h.Close() })
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"}, Topic{Pattern, "c*"})
	for r, sent := range [][]string{{addrs[0], addrs[1]}, {addrs[0], addrs[2]}, {addrs[1], addrs[2]}} {
		publishOn(t, sent, "ch", pubid.New()+"0")
		got := s.wantCount(t, 2*(r+1)) // the channel's and the pattern's
		for _, m := range got[2*r:] {
			if m.Payload != "0" {
				t.Fatalf("publish %d delivered payload %q; want \"0\", its tag stripped", r, m.Payload)
			}
		}
	}
	tag := pubid.New()
	publishOn(t, addrs, "ch", tag+tag+"1") // a tagged payload that starts with a tag
	publishOn(t, addrs, "ch", pubid.Prefix+"2")
	publishOn(t, addrs, "ch", "3")
	got := s.wantCount(t, 12)
	var payloads []string
	for _, m := range got[6:] {
		if m.Topic.Kind == Channel {
			payloads = append(payloads, m.Payload)
		}
	}
	if want := []string{tag + "1", pubid.Prefix + "2", "3"}; !slices.Equal(payloads, want) {
		t.Errorf("payloads %q; want %q", payloads, want)
	}
}

func TestHubPatternAndChannelDeliverApart(t *testing.T) {
	addrs := startNodes(t, 3)
	h := newHub(t, addrs)
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "lock:a"}, Topic{Pattern, "lock:*"})
	publishOn(t, addrs, "lock:a", "0")
	got := s.wantCount(t, 2)
	slices.SortFunc(got, func(a, b Message) int { return int(a.Topic.Kind) - int(b.Topic.Kind) })
	want := []Message{{Topic{Channel, "lock:a"}, "lock:a", "0"}, {Topic{Pattern, "lock:*"}, "lock:a", "0"}}
	if !slices.Equal(got, want) {
		t.Errorf("messages = %+v; want %+v", got, want)
	}
}

func TestHubSharesNodeSubscriptions(t *testing.T) {
	addrs := startNodes(t, 3)
	h := newHub(t, addrs)
	a, b := newSink(), newSink()
	subscribe(t, h, a, Topic{Channel, "ch"})
	subscribe(t, h, b, Topic{Channel, "ch"})
	if n := numsub(t, addrs[0], "ch"); n != 1 {
		t.Errorf("NUMSUB ch = %d with two sinks; want 1 shared connection", n)
	}
	publishOn(t, addrs, "ch", "0")
	a.wantCount(t, 1)
	b.wantCount(t, 1)
	h.Unsubscribe(a, Topic{Channel, "ch"})
	if n := numsub(t, addrs[0], "ch"); n != 1 {
		t.Errorf("NUMSUB ch = %d with one sink left; want 1", n)
	}
	h.Unsubscribe(b, Topic{Channel, "ch"})
	deadline := time.Now().Add(5 * time.Second)
	for _, addr := range addrs {
		for numsub(t, addr, "ch") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: still subscribed to ch 5s after the last sink left", addr)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if st := h.Stats(); st.Channels+st.Patterns+st.Shards != 0 {
		t.Errorf("Stats() = %+v after every sink left; want no topics", st)
	}
}

func TestHubDeliversWithTwoOfFiveNodesDown(t *testing.T) {
	var addrs []string
	var procs []*redistest.Server
	for range 5 {
		p := redistest.Start(t)
		procs = append(procs, p)
		addrs = append(addrs, p.Addr)
	}
	procs[0].Kill()
	procs[1].Kill()
	h := newHub(t, addrs)
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"})
	publishOn(t, addrs[2:], "ch", "0")
	s.wantCount(t, 1)
}

func TestHubSubscribesAgainAfterNodeRestart(t *testing.T) {
	p := redistest.Start(t)
	other := redistest.Start(t)
	addrs := []string{p.Addr, other.Addr}
	h := newHub(t, addrs)
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"})
	p.Kill()
	restarted, err := redistest.StartOn(t, p.Port, t.TempDir())
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for numsub(t, restarted.Addr, "ch") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("not subscribed again within 5s of the node's restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	publishOn(t, addrs[:1], "ch", "after restart")
	if got := s.wantCount(t, 1); got[0].Payload != "after restart" {
		t.Errorf("message = %+v; want the one published after the restart", got[0])
	}
}

func TestHubSubscribeDoesNotWaitForAFrozenNode(t *testing.T) {
	var addrs []string
	var procs []*redistest.Server
	for range 3 {
		p := redistest.Start(t)
		procs = append(procs, p)
		addrs = append(addrs, p.Addr)
	}
	h := newHub(t, addrs)
	subscribe(t, h, newSink(), Topic{Channel, "first"}) // every node up
	procs[0].Freeze(t)
	s := newSink()
	start := time.Now()
	subscribe(t, h, s, Topic{Channel, "ch"})
	// A quorum confirmed; the frozen node costs grace (50ms), not the 5s
	// the caller allowed.
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Subscribe with one node frozen took %v; want about grace", d)
	}
	publishOn(t, addrs[1:], "ch", "0")
	s.wantCount(t, 1)
}

func TestHubCloseEndsItsGoroutines(t *testing.T) {
	addrs := startNodes(t, 3)
	before := leakcheck.Take()
	h := New(Config{Nodes: append(addrs, "127.0.0.1:1")}) // one node never answers
	subscribe(t, h, newSink(), Topic{Channel, "ch"}, Topic{Pattern, "p*"})
	h.Close()
	if err := leakcheck.Check(before, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// TestHubPingsAnIdleNode checks that a connection with no topic, whose
// node answers PING with +PONG rather than a pub/sub reply, stays up.
func TestHubPingsAnIdleNode(t *testing.T) {
	addrs := startNodes(t, 1)
	base := pings(t, addrs[0]) // redistest's own, while it waited for the node
	var logs syncBuffer
	h := New(Config{Nodes: addrs, pingInterval: 50 * time.Millisecond, RetryInterval: 50 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { h.Close() })
	// The dial's PING and three of the pinger's.
	deadline := time.Now().Add(10 * time.Second)
	for pings(t, addrs[0]) < base+4 {
		if time.Now().After(deadline) {
			t.Fatalf("the node saw %d PINGs from the hub within 10s; want 4", pings(t, addrs[0])-base)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s := newSink()
	subscribe(t, h, s, Topic{Channel, "ch"})
	// Subscribe returned, so the hub has read the SUBSCRIBE's reply and
	// every +PONG before it on its connection.
	for numsub(t, addrs[0], "ch") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("not subscribed to ch within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	publishOn(t, addrs, "ch", "0")
	s.wantCount(t, 1)
	// A loaded machine may delay the pinger past the read deadline (three
	// intervals), and the connection is dropped for that as designed; a
	// +PONG must never be taken for a protocol error.
	if l := logs.String(); strings.Contains(l, errProtocol.Error()) {
		t.Errorf("an idle node's +PONG was taken for a protocol error: %q", l)
	} else if l != "" {
		t.Logf("logs (the pinger was held up): %q", l)
	}
}

// pings is how many PING commands the node at addr has served.
func pings(t *testing.T, addr string) int {
	t.Helper()
	info := do(t, addr, "INFO", "commandstats").str
	_, rest, ok := strings.Cut(info, "cmdstat_ping:calls=")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	return n
}

// syncBuffer is a bytes.Buffer safe for the hub's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestHubShardChannels(t *testing.T) {
	addrs := startNodes(t, 3)
	h := newHub(t, addrs)
	s := newSink()
	subscribe(t, h, s, Topic{Shard, "sh"})
	for _, a := range addrs {
		do(t, a, "SPUBLISH", "sh", "0")
		do(t, a, "PUBLISH", "sh", "not for a shard subscriber")
	}
	if got := s.wantCount(t, 1); got[0] != (Message{Topic{Shard, "sh"}, "sh", "0"}) {
		t.Errorf("message = %+v; want the SPUBLISH once", got[0])
	}
	h.Unsubscribe(s, Topic{Shard, "sh"})
	deadline := time.Now().Add(5 * time.Second)
	for do(t, addrs[0], "PUBSUB", "SHARDNUMSUB", "sh").items[1].n != 0 {
		if time.Now().After(deadline) {
			t.Fatal("still shard-subscribed 5s after the last sink left")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
