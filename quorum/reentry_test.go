package quorum

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestAcquireAnswerDecodesTheReentry(t *testing.T) {
	again := Entry{Present: true, Token: "app:1", TTL: 1500 * ms}
	tests := []struct {
		name    string
		reply   any
		keys    int
		want    Acquired
		wantErr bool
	}{
		{"denied", int64(0), 1, Acquired{}, false},
		{"granted, every key free", int64(1), 2, Acquired{Granted: true}, false},
		{"one key taken again", []any{[]any{"app:1", int64(1500)}}, 1, Acquired{Granted: true, Before: []Entry{again}}, false},
		{"taken again beside a free key", []any{int64(0), []any{"app:1", int64(1500)}}, 2, Acquired{Granted: true, Before: []Entry{{}, again}}, false},
		{"taken again, no expiry", []any{[]any{"app:1", int64(-1)}}, 1,
			Acquired{Granted: true, Before: []Entry{{Present: true, Token: "app:1", TTL: -ms}}}, false},
		{"unknown code", int64(2), 1, Acquired{}, true},
		{"negative code", int64(-1), 1, Acquired{}, true},
		{"a bulk string", "OK", 1, Acquired{}, true},
		{"nil", nil, 1, Acquired{}, true},
		{"too few items", []any{int64(0)}, 2, Acquired{}, true},
		{"too many items", []any{int64(0), []any{"a", int64(1)}}, 1, Acquired{}, true},
		{"no key taken again", []any{int64(0), int64(0)}, 2, Acquired{}, true},
		{"an item code 1", []any{int64(1)}, 1, Acquired{}, true},
		{"a pair too short", []any{[]any{"app:1"}}, 1, Acquired{}, true},
		{"a pair too long", []any{[]any{"app:1", int64(1), int64(2)}}, 1, Acquired{}, true},
		{"a value not a string", []any{[]any{int64(7), int64(1500)}}, 1, Acquired{}, true},
		{"a nil value", []any{[]any{nil, int64(1500)}}, 1, Acquired{}, true},
		{"a pttl not an integer", []any{[]any{"app:1", "1500"}}, 1, Acquired{}, true},
		{"a pttl of a missing key", []any{[]any{"app:1", int64(-2)}}, 1, Acquired{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := acquireAnswer(tt.reply, nil, tt.keys)
			if (err != nil) != tt.wantErr || !sameBefore(got.Before, tt.want.Before) || got.Granted != tt.want.Granted {
				t.Errorf("acquireAnswer(%#v, %d keys) = %+v, %v; want %+v, error %v", tt.reply, tt.keys, got, err, tt.want, tt.wantErr)
			}
			if err != nil && (got.Granted || got.Before != nil) {
				t.Errorf("acquireAnswer(%#v) = %+v with error %v; want the zero answer", tt.reply, got, err)
			}
		})
	}
}

// A failed re-entrant acquire gives back only what it took: on a master
// that granted by taking the token's earlier grant again, the earlier
// value comes back with its TTL as it was when taken; a key it took free
// there is deleted; a master that denied is not called, and one that
// failed is not undone (its write may have taken an earlier grant again).
func TestAcquireFailedReentrySetsEarlierGrantBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k1", "app:1", 800*ms),
			(&fakeNode{addr: "b"}).with("k1", "web:1", time.Second),
			(&fakeNode{addr: "c", lost: true}).with("k1", "app:1", 800*ms),
		}
		e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
		l := Lock{Keys: []string{"k1", "k2"}, Token: "app:2", PrefixLen: 4}
		_, err := e.Acquire(t.Context(), l, 5*time.Second)
		checkSentinel(t, "Acquire", err, ErrUnavailable)
		// a answered at once, its k1 had 800ms left; the undo came 50ms
		// later (c's deadline) and set 800ms again: 50ms longer.
		if tok, _ := fs[0].token("k1"); tok != "app:1" || fs[0].ttl("k1") != 800*ms {
			t.Errorf("node a holds k1 = %q with TTL %v; want the earlier grant app:1 back with 800ms", tok, fs[0].ttl("k1"))
		}
		if tok, ok := fs[0].token("k2"); ok {
			t.Errorf("node a holds k2 = %q; want it deleted (taken free)", tok)
		}
		if ops := fs[1].ops(); len(ops) != 1 {
			t.Errorf("node b (denied) got calls %v; want the acquire only", ops)
		}
		if ops := fs[2].ops(); len(ops) != 1 {
			t.Errorf("node c (failed, a re-entrant lock) got calls %v; want the acquire only", ops)
		}
		if tok, _ := fs[2].token("k1"); tok != "app:2" || fs[2].ttl("k1") != 5*time.Second-50*ms {
			t.Errorf("node c holds k1 = %q with TTL %v; want app:2 left to its TTL", tok, fs[2].ttl("k1"))
		}
	})
}

// A set-back is conditional: a key that no longer holds the new token
// (released, or taken by another since) is left as it is.
func TestAcquireUndoSetsBackOnlyWhatStillHoldsTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := (&fakeNode{addr: "a"}).with("k", "app:1", time.Second)
		l := Lock{Keys: []string{"k"}, Token: "app:2", PrefixLen: 4}
		a, err := f.Acquire(t.Context(), l, time.Second)
		if err != nil || !a.Granted || len(a.Before) != 1 {
			t.Fatalf("Acquire = %+v, %v; want granted with one Before", a, err)
		}
		f.with("k", "web:1", time.Second)
		if n, err := f.Undo(t.Context(), l, a.Before); n != 0 || err != nil {
			t.Errorf("Undo over another token = %d, %v; want 0, nil", n, err)
		}
		if tok, _ := f.token("k"); tok != "web:1" {
			t.Errorf("k = %q after the undo; want web:1 left alone", tok)
		}
	})
}
