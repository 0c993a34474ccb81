package redisnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// replyError fakes a Redis error reply: it satisfies redis.Error.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

var _ redis.Error = replyError("")

func TestSetNXResult(t *testing.T) {
	readonly := replyError("READONLY You can't write against a read only replica.")
	tests := []struct {
		name    string
		err     error
		want    bool
		wantErr error // nil: no error
	}{
		{"OK is granted", nil, true, nil},
		{"nil reply is denied", redis.Nil, false, nil},
		{"wrapped nil reply is denied", fmt.Errorf("set: %w", redis.Nil), false, nil},
		{"error reply is a failure", readonly, false, readonly},
		{"OOM is a failure", replyError("OOM command not allowed"), false, replyError("OOM command not allowed")},
		{"timeout is a failure", context.DeadlineExceeded, false, context.DeadlineExceeded},
		{"I/O error is a failure", io.EOF, false, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := setNXResult(tt.err)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("setNXResult(%v) = %v, %v; want %v, %v", tt.err, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestFoundResult(t *testing.T) {
	tests := []struct {
		name    string
		vals    []any
		keys    int
		want    []quorum.Found
		wantErr bool
	}{
		{"one deleted", []any{int64(1)}, 1, []quorum.Found{quorum.FoundDeleted}, false},
		{"one other", []any{int64(0)}, 1, []quorum.Found{quorum.FoundOther}, false},
		{"one missing", []any{int64(-1)}, 1, []quorum.Found{quorum.FoundMissing}, false},
		{"each code", []any{int64(1), int64(0), int64(-1)}, 3, []quorum.Found{quorum.FoundDeleted, quorum.FoundOther, quorum.FoundMissing}, false},
		{"no keys", []any{}, 0, []quorum.Found{}, false},
		{"too few codes", []any{int64(1)}, 2, nil, true},
		{"too many codes", []any{int64(1), int64(1)}, 1, nil, true},
		{"unknown code", []any{int64(1), int64(2)}, 2, nil, true},
		{"negative unknown code", []any{int64(-2)}, 1, nil, true},
		{"not an integer", []any{"1"}, 1, nil, true},
		{"an integer after one that is not", []any{int64(1), "0"}, 2, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := foundResult(tt.vals, tt.keys)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("foundResult(%v, %d) = %v, %v; want %v, error %v", tt.vals, tt.keys, got, err, tt.want, tt.wantErr)
			}
		})
	}
	// A release of one key, every cycle's, allocates no answer.
	one := any([]any{int64(1)})
	if n := testing.AllocsPerRun(100, func() { releaseAnswer(one, nil, 1) }); n != 0 {
		t.Errorf("releaseAnswer of one key allocated %v times; want 0", n)
	}
}

func TestEntryResult(t *testing.T) {
	tests := []struct {
		name    string
		vals    []any
		want    quorum.Entry
		wantErr bool
	}{
		{"missing", []any{nil, int64(-2)}, quorum.Entry{}, false},
		{"present", []any{"tok", int64(1500)}, quorum.Entry{Present: true, Token: "tok", TTL: 1500 * time.Millisecond}, false},
		{"no expiry", []any{"tok", int64(-1)}, quorum.Entry{Present: true, Token: "tok", TTL: -time.Millisecond}, false},
		{"empty token", []any{"", int64(10)}, quorum.Entry{Present: true, TTL: 10 * time.Millisecond}, false},
		{"too short", []any{"tok"}, quorum.Entry{}, true},
		{"too long", []any{"tok", int64(1), int64(2)}, quorum.Entry{}, true},
		{"pttl not an integer", []any{"tok", "1500"}, quorum.Entry{}, true},
		{"value not a string", []any{int64(7), int64(1500)}, quorum.Entry{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := entryResult(tt.vals)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("entryResult(%v) = %+v, %v; want %+v, error %v", tt.vals, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLatchAnswerResult(t *testing.T) {
	tests := []struct {
		name    string
		vals    []any
		want    quorum.LatchAnswer
		wantErr bool
	}{
		{"state and value", []any{int64(1), int64(5)}, quorum.LatchAnswer{State: 1, Value: 5}, false},
		{"a value as text", []any{int64(1), "5"}, quorum.LatchAnswer{State: 1, Value: 5}, false},
		{"with nonce and bare", []any{int64(1), int64(5), "7", int64(1)}, quorum.LatchAnswer{State: 1, Value: 5, Nonce: 7, Bare: true}, false},
		{"too short", []any{int64(1)}, quorum.LatchAnswer{}, true},
		{"too long", []any{int64(1), int64(5), int64(7), int64(1), int64(0)}, quorum.LatchAnswer{}, true},
		{"state not an integer", []any{"1", int64(5)}, quorum.LatchAnswer{}, true},
		{"value not a number", []any{int64(1), "x"}, quorum.LatchAnswer{}, true},
		{"value of another type", []any{int64(1), []any{}}, quorum.LatchAnswer{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := latchAnswerResult(tt.vals)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("latchAnswerResult(%v) = %+v, %v; want %+v, error %v", tt.vals, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestMarkResult(t *testing.T) {
	tests := []struct {
		name    string
		vals    []any
		want    quorum.CounterEntry
		wantErr bool
	}{
		{"state and mark", []any{int64(1), "12"}, quorum.CounterEntry{State: 1, Value: 12}, false},
		{"too short", []any{int64(1)}, quorum.CounterEntry{}, true},
		{"mark not text", []any{int64(1), int64(12)}, quorum.CounterEntry{}, true},
		{"mark not a number", []any{int64(1), "x"}, quorum.CounterEntry{}, true},
		{"state not an integer", []any{"1", "12"}, quorum.CounterEntry{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := markResult(tt.vals)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("markResult(%v) = %+v, %v; want %+v, error %v", tt.vals, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestUnlockResults(t *testing.T) {
	five := quorum.Value{Kind: quorum.ValueInt, Int: 5}
	reads := []struct {
		name    string
		vals    []any
		want    quorum.ReadRelease
		wantErr bool
	}{
		{"latched, a number", []any{int64(0), "5"}, quorum.ReadRelease{Latched: true, Latch: five}, false},
		{"latched, no number", []any{int64(0), "x"}, quorum.ReadRelease{Latched: true}, false},
		{"latched, nil", []any{int64(0), nil}, quorum.ReadRelease{Latched: true}, false},
		{"released, free", []any{int64(1), int64(1)}, quorum.ReadRelease{Free: true}, false},
		{"held", []any{int64(2), int64(0)}, quorum.ReadRelease{Held: true}, false},
		{"unknown kind", []any{int64(3), int64(0)}, quorum.ReadRelease{}, true},
		{"too short", []any{int64(1)}, quorum.ReadRelease{}, true},
	}
	for _, tt := range reads {
		t.Run("read "+tt.name, func(t *testing.T) {
			got, err := readReleaseResult(tt.vals)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("readReleaseResult(%v) = %+v, %v; want %+v, error %v", tt.vals, got, err, tt.want, tt.wantErr)
			}
		})
	}
	writes := []struct {
		name    string
		vals    []any
		want    quorum.WriteRelease
		wantErr bool
	}{
		{"latched, a number", []any{int64(0), "5"}, quorum.WriteRelease{Latched: true, Latch: five}, false},
		{"latched, no number", []any{int64(0), "x"}, quorum.WriteRelease{Latched: true}, false},
		{"released, flag", []any{int64(3), int64(1)}, quorum.WriteRelease{Outcome: 3, Flag: true}, false},
		{"not held", []any{int64(1), int64(0)}, quorum.WriteRelease{Outcome: 1}, false},
		{"unknown kind", []any{int64(4), int64(0)}, quorum.WriteRelease{}, true},
		{"too long", []any{int64(1), int64(0), int64(0)}, quorum.WriteRelease{}, true},
	}
	for _, tt := range writes {
		t.Run("write "+tt.name, func(t *testing.T) {
			got, err := writeReleaseResult(tt.vals)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("writeReleaseResult(%v) = %+v, %v; want %+v, error %v", tt.vals, got, err, tt.want, tt.wantErr)
			}
		})
	}
}
