package redisnode

import (
	"slices"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestAcquireAnswerDecodesTheReentry(t *testing.T) {
	again := quorum.Entry{Present: true, Token: "app:1", TTL: 1500 * time.Millisecond}
	tests := []struct {
		name    string
		reply   any
		keys    int
		want    quorum.Acquired
		wantErr bool
	}{
		{"denied", int64(0), 1, quorum.Acquired{}, false},
		{"granted, every key free", int64(1), 2, quorum.Acquired{Granted: true}, false},
		{"one key taken again", []any{[]any{"app:1", int64(1500)}}, 1, quorum.Acquired{Granted: true, Before: []quorum.Entry{again}}, false},
		{"taken again beside a free key", []any{int64(0), []any{"app:1", int64(1500)}}, 2, quorum.Acquired{Granted: true, Before: []quorum.Entry{{}, again}}, false},
		{"taken again, no expiry", []any{[]any{"app:1", int64(-1)}}, 1,
			quorum.Acquired{Granted: true, Before: []quorum.Entry{{Present: true, Token: "app:1", TTL: -time.Millisecond}}}, false},
		{"unknown code", int64(2), 1, quorum.Acquired{}, true},
		{"negative code", int64(-1), 1, quorum.Acquired{}, true},
		{"a bulk string", "OK", 1, quorum.Acquired{}, true},
		{"nil", nil, 1, quorum.Acquired{}, true},
		{"too few items", []any{int64(0)}, 2, quorum.Acquired{}, true},
		{"too many items", []any{int64(0), []any{"a", int64(1)}}, 1, quorum.Acquired{}, true},
		{"no key taken again", []any{int64(0), int64(0)}, 2, quorum.Acquired{}, true},
		{"an item code 1", []any{int64(1)}, 1, quorum.Acquired{}, true},
		{"a pair too short", []any{[]any{"app:1"}}, 1, quorum.Acquired{}, true},
		{"a pair too long", []any{[]any{"app:1", int64(1), int64(2)}}, 1, quorum.Acquired{}, true},
		{"a value not a string", []any{[]any{int64(7), int64(1500)}}, 1, quorum.Acquired{}, true},
		{"a nil value", []any{[]any{nil, int64(1500)}}, 1, quorum.Acquired{}, true},
		{"a pttl not an integer", []any{[]any{"app:1", "1500"}}, 1, quorum.Acquired{}, true},
		{"a pttl of a missing key", []any{[]any{"app:1", int64(-2)}}, 1, quorum.Acquired{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := acquireAnswer(tt.reply, nil, tt.keys)
			if (err != nil) != tt.wantErr || !slices.Equal(got.Before, tt.want.Before) || got.Granted != tt.want.Granted {
				t.Errorf("acquireAnswer(%#v, %d keys) = %+v, %v; want %+v, error %v", tt.reply, tt.keys, got, err, tt.want, tt.wantErr)
			}
			if err != nil && (got.Granted || got.Before != nil) {
				t.Errorf("acquireAnswer(%#v) = %+v with error %v; want the zero answer", tt.reply, got, err)
			}
		})
	}
}
