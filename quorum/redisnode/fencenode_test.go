package redisnode

import (
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestCounterEntryResultRefusesBadReplies(t *testing.T) {
	for _, vals := range [][]any{
		{int64(2), "1"},
		{int64(9), "1", int64(0), int64(0), int64(0), int64(0), "0", "", ""},
		{int64(2), "x", int64(0), int64(0), int64(0), int64(0), "0", "", ""},
		{int64(2), 1.5, int64(0), int64(0), int64(0), int64(0), "0", "", ""},
		{int64(2), "1", int64(0), int64(0), int64(0), int64(0), "0", int64(1), ""},
		{int64(2), "1", int64(0), int64(0), int64(0), int64(0), "0", "", nil},
	} {
		if _, err := counterEntryResult(vals, 9); err == nil {
			t.Errorf("counterEntryResult(%v) = nil error; want one", vals)
		}
	}
}

func TestTookResult(t *testing.T) {
	for s, want := range map[string]quorum.CounterEntry{
		"42 9950":    {State: quorum.CounterSeeded, Value: 42, Held: true, TTL: 9950 * time.Millisecond, Answer: 42},
		"42 9950 57": {State: quorum.CounterSeeded, Value: 57, Held: true, TTL: 9950 * time.Millisecond, Hold: 42, Answer: 42},
	} {
		if got, err := tookResult(s); err != nil || got != want {
			t.Errorf("tookResult(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "42", "42 ", " 9950", "0 9950", "42 0", "42 -1", "x 9950", "42 9950 ", "42 9950 0", "42 9950 x", "42 9950 1 2"} {
		if got, err := tookResult(s); err == nil {
			t.Errorf("tookResult(%q) = %+v; want an error", s, got)
		}
	}
}
