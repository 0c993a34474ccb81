package pubsub

import (
	"testing"
	"time"
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
			c := newCollapser(3, 10*time.Second, maxCounted)
			start := time.Now()
			for i, x := range tt.copies {
				if got := c.note(start.Add(x.at), x.node, x.m); got != tt.want[i] {
					t.Errorf("copy %d (node %d, %q at %v) delivered = %v; want %v", i, x.node, x.m.Payload, x.at, got, tt.want[i])
				}
			}
		})
	}
}

func TestCollapserStaysBounded(t *testing.T) {
	c := newCollapser(3, time.Hour, 100)
	now := time.Now()
	for i := range 1000 {
		c.note(now, 0, Message{Topic: Topic{Channel, "ch"}, Channel: "ch", Payload: string(rune(i))})
	}
	if n := len(c.cur) + len(c.prev); n > 200 {
		t.Errorf("%d messages counted with max 100; want at most 200", n)
	}
}
