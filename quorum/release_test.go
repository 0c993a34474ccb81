package quorum

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestReleaseCountsKeysAQuorumHeld(t *testing.T) {
	tests := []struct {
		name    string
		nodes   func() []*fakeNode
		keys    []string
		wait    time.Duration // virtual time to let pass before releasing
		want    Released
		wantErr error
	}{
		{"held on all", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c"}).with("k", "mine", time.Second),
			}
		}, []string{"k"}, 0, Released{Keys: 1}, nil},
		{"held on a quorum, another token on one", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b"}).with("k", "other", time.Second),
				(&fakeNode{addr: "c"}).with("k", "mine", time.Second),
			}
		}, []string{"k"}, 0, Released{Keys: 1}, nil},
		{"held on a quorum, one silent", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c", silent: true}).with("k", "mine", time.Second),
			}
		}, []string{"k"}, 0, Released{Keys: 1}, nil},
		{"held on three of five, two failed", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "b", err: errBoom}).with("k", "mine", time.Second),
				(&fakeNode{addr: "c"}).with("k", "mine", time.Second),
				(&fakeNode{addr: "d", silent: true}),
				(&fakeNode{addr: "e"}).with("k", "mine", time.Second),
			}
		}, []string{"k"}, 0, Released{Keys: 1}, nil},
		// Deleted where held, but a minority is not a lock.
		{"held on a minority", func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "mine", time.Second), {addr: "b"}, {addr: "c"}}
		}, []string{"k"}, 0, Released{}, nil},
		{"missing everywhere", func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
		}, []string{"k"}, 0, Released{Missing: 1}, nil},
		{"expired everywhere", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "mine", 10*ms),
				(&fakeNode{addr: "b"}).with("k", "mine", 10*ms),
				(&fakeNode{addr: "c"}).with("k", "mine", 10*ms),
			}
		}, []string{"k"}, 20 * ms, Released{Missing: 1}, nil},
		{"missing on the nodes that answered", func() []*fakeNode {
			return []*fakeNode{{addr: "a"}, {addr: "b"}, (&fakeNode{addr: "c", err: errBoom}).with("k", "mine", time.Second)}
		}, []string{"k"}, 0, Released{Missing: 1}, nil},
		// Someone else holds it: taken, not expired.
		{"another token on one, missing on two", func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "other", time.Second), {addr: "b"}, {addr: "c"}}
		}, []string{"k"}, 0, Released{}, nil},
		{"another token everywhere", func() []*fakeNode {
			return []*fakeNode{
				(&fakeNode{addr: "a"}).with("k", "other", time.Second),
				(&fakeNode{addr: "b"}).with("k", "other", time.Second),
				(&fakeNode{addr: "c"}).with("k", "other", time.Second),
			}
		}, []string{"k"}, 0, Released{}, nil},
		{"failures decide", func() []*fakeNode {
			return []*fakeNode{(&fakeNode{addr: "a"}).with("k", "mine", time.Second), {addr: "b"}, {addr: "c", silent: true}}
		}, []string{"k"}, 0, Released{}, ErrUnavailable},
		{"all failed", func() []*fakeNode {
			return []*fakeNode{{addr: "a", err: errBoom}, {addr: "b", err: errBoom}, {addr: "c", silent: true}}
		}, []string{"k"}, 0, Released{}, ErrUnavailable},
		{"several keys", func() []*fakeNode {
			fs := []*fakeNode{{addr: "a"}, {addr: "b"}, {addr: "c"}}
			for _, f := range fs {
				f.with("held", "mine", time.Second).with("taken", "other", time.Second)
			}
			return fs
		}, []string{"held", "gone", "taken"}, 0, Released{Keys: 1, Missing: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := tt.nodes()
				others := map[*fakeNode]map[string]string{}
				for _, f := range fs {
					others[f] = map[string]string{}
					for _, k := range tt.keys {
						if tok, ok := f.token(k); ok && tok != "mine" {
							others[f][k] = tok
						}
					}
				}
				time.Sleep(tt.wait)
				e := New(Config{NodeTimeout: 50 * ms}, asNodes(fs)...)
				l := Lock{Keys: tt.keys, Token: "mine"}
				got, err := e.Release(t.Context(), l)
				checkSentinel(t, "Release", err, tt.wantErr)
				if got != tt.want {
					t.Errorf("Release(%v) = %+v; want %+v", tt.keys, got, tt.want)
				}
				for _, k := range tt.keys {
					for _, f := range answering(fs) {
						tok, ok := f.token(k)
						if ok && tok == "mine" {
							t.Errorf("node %s still holds %s with the token; want it deleted", f.addr, k)
						}
						if want := others[f][k]; want != "" && tok != want {
							t.Errorf("node %s holds %s = %q; want another holder's %q untouched", f.addr, k, tok, want)
						}
					}
				}
				for _, f := range fs {
					if got := f.callsTo("release"); len(got) != 1 {
						t.Errorf("node %s got calls %v; want one release", f.addr, f.ops())
					}
				}
			})
		})
	}
}

// shortRelease answers a release with one code too few: a reply that
// cannot be matched to the keys.
type shortRelease struct{ *fakeNode }

func (n shortRelease) Release(ctx context.Context, l Lock, until int64) ([]Found, error) {
	found, err := n.fakeNode.Release(ctx, l, until)
	if len(found) > 0 {
		found = found[1:]
	}
	return found, err
}

func TestReleaseCountsMalformedReplyAsFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := []*fakeNode{
			(&fakeNode{addr: "a"}).with("k", "mine", time.Second),
			(&fakeNode{addr: "b"}).with("k", "mine", time.Second),
			(&fakeNode{addr: "c"}).with("k", "mine", time.Second),
		}
		e := New(Config{}, fs[0], shortRelease{fs[1]}, shortRelease{fs[2]})
		got, err := e.Release(t.Context(), mine)
		checkSentinel(t, "Release", err, ErrUnavailable)
		if oe := outcome(t, "Release", err); oe.Outcome != (Outcome{Total: 3, Granted: 1, Failed: 2}) {
			t.Errorf("Release outcome = %+v; want 1 granted, 2 failed", oe.Outcome)
		}
		if got != (Released{}) {
			t.Errorf("Release = %+v; want the zero Released", got)
		}
	})
}
