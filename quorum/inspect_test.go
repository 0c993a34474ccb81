package quorum

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestInspectReportsQuorumToken(t *testing.T) {
	tests := []struct {
		name    string
		nodes   func() []*fakeNode
		want    State
		wantErr error
	}{
		// Read at 10ms, the quorum-th largest remaining TTL is 190ms; the
		// elapsed 10ms and the drift (1.9ms + 2ms) come off again.
		{"conservative validity", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a", delay: 10 * ms}).with("k", "mine", 300*ms),
				(&fakeNode{addr: "b", delay: 10 * ms}).with("k", "mine", 200*ms),
				(&fakeNode{addr: "c", delay: 10 * ms}).with("k", "mine", 100*ms),
			}
		}, State{Held: true, Token: "mine", Validity: 176100 * time.Microsecond}, nil},
		{"held on a quorum", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "other", 5*time.Second),
				(&fakeNode{addr: "b"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c"}).with("k", "mine", time.Second),
			}
		}, State{Held: true, Token: "mine", Validity: 988 * ms}, nil},
		{"silent node charged", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c", silent: true}),
			}
		}, State{Held: true, Token: "mine", Validity: 938 * ms}, nil},
		{"five nodes, two failed", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 300*ms),
				(&fakeNode{addr: "b", err: errBoom}),
				(&fakeNode{addr: "c"}).with("k", "mine", 500*ms),
				(&fakeNode{addr: "d", err: errBoom}),
				(&fakeNode{addr: "e"}).with("k", "mine", 400*ms),
			}
		}, State{Held: true, Token: "mine", Validity: 295 * ms}, nil},
		{"no expiry on a quorum", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", -1),
				(&fakeNode{addr: "b"}).with("k", "mine", 100*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", -1),
			}
		}, State{Held: true, Token: "mine", Validity: -1}, nil},
		// 500ms is the longest TTL two nodes reach: 500 - (5 + 2).
		{"no expiry on a minority", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", -1),
				(&fakeNode{addr: "b"}).with("k", "mine", 500*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", 300*ms),
			}
		}, State{Held: true, Token: "mine", Validity: 493 * ms}, nil},
		{"tokens disagree", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "x", time.Second),
				(&fakeNode{addr: "b"}).with("k", "y", time.Second),
				{addr: "c"},
			}
		}, State{}, nil},
		{"three tokens", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "x", time.Second),
				(&fakeNode{addr: "b"}).with("k", "y", time.Second),
				(&fakeNode{addr: "c"}).with("k", "z", time.Second),
			}
		}, State{}, nil},
		{"missing everywhere", func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		}, State{}, nil},
		{"validity used up", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a", delay: ms}).with("k", "mine", 3*ms),
				(&fakeNode{addr: "b", delay: ms}).with("k", "mine", 3*ms),
				(&fakeNode{addr: "c", delay: ms}).with("k", "mine", 3*ms),
			}
		}, State{}, nil},
		{"failures decide", func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "mine", time.Second), {addr: "b"}, {addr: "c", silent: true}}
		}, State{}, ErrUnavailable},
		{"split with a failure", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "x", time.Second),
				(&fakeNode{addr: "b"}).with("k", "y", time.Second),
				(&fakeNode{addr: "c", silent: true}),
			}
		}, State{}, ErrUnavailable},
		{"two missing, one failed", func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c", err: errBoom}}
		}, State{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := tt.nodes()
				e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
				got, err := e.Inspect(t.Context(), "k")
				checkSentinel(t, `Inspect("k")`, err, tt.wantErr)
				if got != tt.want {
					t.Errorf(`Inspect("k") = %+v; want %+v`, got, tt.want)
				}
			})
		})
	}
}

func TestDeleteCountsWhatAQuorumHad(t *testing.T) {
	keys := []string{"k1", "k2"}
	tests := []struct {
		name    string
		nodes   func() []*fakeNode
		want    int
		wantErr error
	}{
		{"all had both", func() []*fakeNode {
			fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
			for _, f := range fs {
				f.with("k1", "x", time.Second).with("k2", "y", -1)
			}
			return fs
		}, 2, nil},
		{"counts differ", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k1", "x", time.Second).with("k2", "x", time.Second),
				(&fakeNode{addr: "b"}).with("k1", "y", time.Second),
				{addr: "c"},
			}
		}, 1, nil},
		{"none had any", func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		}, 0, nil},
		{"one silent", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k1", "x", time.Second).with("k2", "x", time.Second),
				(&fakeNode{addr: "b"}).with("k1", "x", time.Second).with("k2", "x", time.Second),
				(&fakeNode{addr: "c", silent: true}),
			}
		}, 2, nil},
		{"failures decide", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k1", "x", time.Second),
				{addr: "b", err: errBoom},
				{addr: "c", silent: true},
			}
		}, 0, ErrUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := tt.nodes()
				e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
				got, err := e.Delete(t.Context(), keys)
				checkSentinel(t, "Delete(k1, k2)", err, tt.wantErr)
				if got != tt.want {
					t.Errorf("Delete(k1, k2) = %d; want %d", got, tt.want)
				}
				for _, f := range answering(fs) {
					for _, k := range keys {
						if tok, ok := f.token(k); ok {
							t.Errorf("node %s still has %s = %q; want it deleted", f.addr, k, tok)
						}
					}
					if c := f.callsTo("delete"); len(c) != 1 || !slices.Equal(c[0].keys, keys) {
						t.Errorf("node %s got delete calls %+v; want one for %v", f.addr, c, keys)
					}
				}
			})
		})
	}
}
