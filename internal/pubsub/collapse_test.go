package pubsub

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/pubid"
)

func TestCollapserDeliversOncePerPublish(t *testing.T) {
	a := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "0"}
	b := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "1"}
	p := Message{Topic: Topic{Pattern, "c*"}, Channel: "ch", Payload: "0"}
	type cp struct {
		node int
		m    Message
		at   time.Duration
	}
	tests := []struct {
		name   string
		copies []cp
		want   []bool
	}{
		{"three copies of one publish", []cp{{0, a, 0}, {1, a, 0}, {2, a, 0}}, []bool{true, false, false}},
		{"two publishes of one payload", []cp{{0, a, 0}, {1, a, 0}, {0, a, 0}, {2, a, 0}, {1, a, 0}, {2, a, 0}},
			[]bool{true, false, true, false, false, false}},
		{"a node that missed the first publish lags", []cp{{0, a, 0}, {1, a, 0}, {2, a, 0}, {0, a, 0}, {1, a, 0}},
			[]bool{true, false, false, true, false}},
		{"other payloads count apart", []cp{{0, a, 0}, {0, b, 0}, {1, a, 0}, {1, b, 0}}, []bool{true, true, false, false}},
		{"a pattern's copy counts apart from the channel's", []cp{{0, a, 0}, {0, p, 0}, {1, p, 0}}, []bool{true, true, false}},
		{"counts last up to the window", []cp{{0, a, 0}, {1, a, 4 * time.Second}, {2, a, 8 * time.Second}}, []bool{true, false, false}},
		{"counts are forgotten after the window", []cp{{0, a, 0}, {1, a, 11 * time.Second}}, []bool{true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollapser(3, 10*time.Second, maxCounted, maxTagged)
			start := time.Now()
			for i, x := range tt.copies {
				if due, _ := c.note(start.Add(x.at), x.node, x.m, "", 1); (due == 1) != tt.want[i] || due > 1 {
					t.Errorf("copy %d (node %d, %q at %v) made %d due; want delivered = %v", i, x.node, x.m.Payload, x.at, due, tt.want[i])
				}
			}
		})
	}
}

// With need 2 of 3 nodes, a publish is due at its second copy; the first
// copy of one not yet due asks to be flushed later, and a flush delivers
// what is still undelivered up to it.
func TestCollapserWaitsForNeedCopies(t *testing.T) {
	a := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "0"}
	type step struct {
		node  int    // a copy from node, or -1 for flush(k)
		k     uint32 // flush's k
		due   int
		wait  uint32
		flush int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"due at the second copy", []step{{0, 0, 0, 1, 0}, {1, 0, 1, 0, 0}, {2, 0, 0, 0, 0}, {-1, 1, 0, 0, 0}}},
		{"one copy only: the flush delivers it", []step{{0, 0, 0, 1, 0}, {-1, 1, 0, 0, 1}, {1, 0, 0, 0, 0}, {2, 0, 0, 0, 0}}},
		{"two publishes, one node ahead", []step{{0, 0, 0, 1, 0}, {0, 0, 0, 2, 0}, {1, 0, 1, 0, 0}, {1, 0, 1, 0, 0}, {-1, 2, 0, 0, 0}}},
		{"a flush delivers every publish up to its own", []step{{0, 0, 0, 1, 0}, {0, 0, 0, 2, 0}, {-1, 2, 0, 0, 2}, {1, 0, 0, 0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollapser(3, 10*time.Second, maxCounted, maxTagged)
			now := time.Now()
			for i, s := range tt.steps {
				if s.node < 0 {
					if n := c.flush(a, "", s.k); n != s.flush {
						t.Errorf("step %d: flush(%d) = %d; want %d", i, s.k, n, s.flush)
					}
					continue
				}
				if due, wait := c.note(now, s.node, a, "", 2); due != s.due || wait != s.wait {
					t.Errorf("step %d: note(node %d) = %d, %d; want %d, %d", i, s.node, due, wait, s.due, s.wait)
				}
			}
		})
	}
}

func TestCollapserStaysBounded(t *testing.T) {
	c := newCollapser(3, time.Hour, 100, 50)
	now := time.Now()
	for i := range 1000 {
		m := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: string(rune(i))}
		c.note(now, 0, m, "", 1)
		c.note(now, 0, m, pubid.New(), 1)
	}
	if n := len(c.counts.cur) + len(c.counts.prev); n > 200 {
		t.Errorf("%d messages counted with max 100; want at most 200", n)
	}
	if n := c.remembered(); n > 100 {
		t.Errorf("%d tagged publishes counted with maxTagged 50; want at most 100", n)
	}
}

// Three publishes, each run on another two of three nodes (the
// publisher's link to the third cut): the third one's copies both come
// from nodes that each missed one publish. Tagged, each publish is
// counted apart, and each is delivered once (attack17 F3). Untagged, the
// copies are counted by their order per node: the lagging nodes' copies
// read as late copies of publishes already delivered, and the third is
// lost, as it is from a proxy that tags nothing.
func TestCollapserDeliversAPublishOnlyLaggingNodesSent(t *testing.T) {
	a := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "0"}
	for _, tt := range []struct {
		name   string
		tagged bool
		want   int
	}{{"tagged", true, 3}, {"untagged", false, 2}} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCollapser(3, 10*time.Second, maxCounted, maxTagged)
			now := time.Now()
			delivered := 0
			for _, sent := range [][2]int{{0, 1}, {0, 2}, {1, 2}} {
				tag := ""
				if tt.tagged {
					tag = pubid.New()
				}
				var wait uint32
				for _, node := range sent {
					due, w := c.note(now, node, a, tag, 2)
					delivered += due
					wait = max(wait, w)
				}
				if wait > 0 {
					delivered += c.flush(a, tag, wait) // the settle timer
				}
				now = now.Add(time.Second)
			}
			if delivered != tt.want {
				t.Errorf("3 publishes, each sent by 2 of 3 nodes, delivered %d times; want %d", delivered, tt.want)
			}
		})
	}
}

// A tagged publish is delivered once at need copies and not again for
// its late copies, even 7.5s late (attack14 P3), nor for a copy a node
// sends again (a resend: counted in order, two nodes' second copies made
// it due again); a second publish of the same payload, with its own tag,
// is delivered again; an untagged copy of the same payload counts apart
// from both.
func TestCollapserCountsATaggedPublishByItsTag(t *testing.T) {
	// Over more than 63 nodes, tagged publishes are counted as untagged
	// ones with their tag, to the same effect.
	for _, nodes := range []int{3, maxBitNodes + 1} {
		t.Run(strconv.Itoa(nodes)+" nodes", func(t *testing.T) {
			a := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "0"}
			c := newCollapser(nodes, 20*time.Second, maxCounted, maxTagged)
			now := time.Now()
			t1, t2 := pubid.New(), pubid.New()
			steps := []struct {
				node int
				tag  string
				at   time.Duration
				due  int
			}{
				{0, t1, 0, 0}, {1, t1, 0, 1}, {0, t1, time.Second, 0}, {1, t1, time.Second, 0},
				{2, t1, 7500 * time.Millisecond, 0},
				{2, t2, 8 * time.Second, 0}, {1, t2, 8 * time.Second, 1}, {0, t2, 8 * time.Second, 0},
				{0, "", 9 * time.Second, 0}, {1, "", 9 * time.Second, 1},
			}
			for i, s := range steps {
				if due, _ := c.note(now.Add(s.at), s.node, a, s.tag, 2); due != s.due {
					t.Errorf("step %d (node %d at %v): %d due; want %d", i, s.node, s.at, due, s.due)
				}
			}
			// The same publish to a pattern that matches its channel is a
			// message of its own.
			p := Message{Topic: Topic{Pattern, "c*"}, Channel: "ch", Payload: "0"}
			if due, _ := c.note(now.Add(9*time.Second), 0, p, t1, 1); due != 1 {
				t.Errorf("the pattern's copy of a publish delivered on its channel: %d due; want 1", due)
			}
		})
	}
}

// Tagged publishes at 20,000 a second, the hub's window and bounds: each
// is sent at once by two of three nodes and 9s late by the third (less
// than half the window). No late copy is delivered again: a tagged
// publish is remembered for the window whatever the rate (review31 R3;
// before, 65,536 to 131,072 other messages forgot it, about 3 to 6
// seconds at this rate).
func TestCollapserRemembersTaggedPublishesForTheWindowAtHighRate(t *testing.T) {
	const (
		rate  = 20_000
		total = 10 * rate
		lag   = 9 * time.Second
	)
	c := newHubCollapser(3)
	start := time.Now()
	at := func(j int) time.Time { return start.Add(time.Duration(j) * time.Second / rate) }
	a := Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: "0"}
	tags := make([]string, total)
	delivered, again := 0, 0
	late := 0 // the next publish whose late copy is due
	lateCopiesUntil := func(now time.Time) {
		for ; late < total && tags[late] != "" && !at(late).Add(lag).After(now); late++ {
			due, wait := c.note(at(late).Add(lag), 2, a, tags[late], 2)
			if wait > 0 {
				due += c.flush(a, tags[late], wait) // the settle timer
			}
			again += due
		}
	}
	for j := range total {
		lateCopiesUntil(at(j))
		tags[j] = pubid.New()
		for node := range 2 {
			due, _ := c.note(at(j), node, a, tags[j], 2)
			delivered += due
		}
	}
	lateCopiesUntil(at(total).Add(lag))
	if delivered != total || again != 0 {
		t.Errorf("%d publishes at %d/s: delivered %d, and %d of %d copies %v late again; want %d and 0",
			total, rate, delivered, again, late, lag, total)
	}
}

// BenchmarkCollapserTagged notes three copies of a new tagged publish
// per iteration, and reports the heap the counts hold per publish they
// remember.
func BenchmarkCollapserTagged(b *testing.B) {
	a := Message{Topic: Topic{Channel, "redisson_lock__channel:{lock}"}, Channel: "redisson_lock__channel:{lock}", Payload: "0"}
	c := newHubCollapser(3)
	now := time.Now()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		tag := pubid.New()
		for node := range 3 {
			c.note(now, node, a, tag, 2)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(c.remembered()), "heapB/publish")
}

// remembered is how many tagged publishes c counts.
func (c *collapser) remembered() int { return len(c.tagged.cur) + len(c.tagged.prev) }

// newHubCollapser is the collapser a hub over nodes uses.
func newHubCollapser(nodes int) *collapser {
	return newCollapser(nodes, Config{}.withDefaults().window, maxCounted, maxTagged)
}
