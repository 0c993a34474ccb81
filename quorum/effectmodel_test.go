package quorum

import (
	"slices"
	"time"
)

// A small model of what lock-shaped scripts do on one Redis node, for the
// exhaustive checker (effectcheck_test.go). Time stands still at 0 during
// a run; every entry in a state is valid (its expiry is in the future).

// mEntry is one holder of a key: a string's value, a hash field (n: its
// re-entry count) or a sorted-set member (exp: its score, an expiry).
type mEntry struct {
	tok string
	exp int64 // ms
	n   int
}

// mKey is a key's holders, sorted by token; none is a free key.
type mKey []mEntry

// mState is one node's keys, as the call numbers them.
type mState []mKey

func (s mState) clone() mState {
	c := make(mState, len(s))
	for i, k := range s {
		c[i] = slices.Clone(k)
	}
	return c
}

func (k mKey) find(tok string) int {
	for i, e := range k {
		if e.tok == tok {
			return i
		}
	}
	return -1
}

// put sets tok's entry, keeping k sorted.
func (k mKey) put(e mEntry) mKey {
	if i := k.find(e.tok); i >= 0 {
		k[i] = e
		return k
	}
	k = append(k, e)
	slices.SortFunc(k, func(a, b mEntry) int {
		switch {
		case a.tok < b.tok:
			return -1
		case a.tok > b.tok:
			return 1
		}
		return 0
	})
	return k
}

func (k mKey) remove(tok string) mKey {
	if i := k.find(tok); i >= 0 {
		return slices.Delete(k, i, i+1)
	}
	return k
}

// mRun is one run of a model script on one node's state (changed in
// place): the caller's token, the ttl it asks for, a semaphore's limit.
type mRun struct {
	s     mState
	tok   string
	ttl   int64
	limit int
}

// mScript is a lock-shaped script: its reply, or refused when the wrapper
// would refuse it on this state (it overwrites another token's hold).
type mScript struct {
	name string
	// keys are the kinds of the call's keys; limit is a semaphore's
	// (its sorted set, the only one of its keys), 0 for none.
	keys  []mKind
	limit int
	run   func(r *mRun) (reply Value, refused bool)
}

// keyLimit is how many clients may hold key j at once; 0 for a key that
// is no lock (lock-or-enqueue's queue).
func (sc mScript) keyLimit(j int) int {
	switch {
	case sc.limit > 0:
		return sc.limit
	case sc.keys[j] == mZset:
		return 0
	}
	return 1
}

type mKind uint8

const (
	mString mKind = iota
	mHash
	mZset
)

var (
	mOK    = Value{Kind: ValueStatus, Str: "OK"}
	mNil   = Value{}
	mBulkK = Value{Kind: ValueBulk, Str: "OK"}
)

func mInt(n int64) Value { return Value{Kind: ValueInt, Int: n} }

// get is GET of a string key: its holder's token, or "".
func (r *mRun) get(j int) string {
	if len(r.s[j]) == 0 {
		return ""
	}
	return r.s[j][0].tok
}

func (r *mRun) setNX(j int) bool {
	if len(r.s[j]) > 0 {
		return false
	}
	r.s[j] = mKey{{tok: r.tok, exp: r.ttl}}
	return true
}

// The scripts of the grammar: the shapes lock clients send (the
// docs/tests.md's families) and the shapes of issue 16's findings.
var mScripts = []mScript{
	{name: "SET NX PX acquire", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		if r.setNX(0) {
			return mOK, false
		}
		return mNil, false
	}},
	{name: "idempotent acquire", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		switch v := r.get(0); {
		case v == r.tok:
			return mInt(1), false
		case v != "":
			return mInt(0), false
		}
		r.s[0] = mKey{{tok: r.tok, exp: r.ttl}}
		return mInt(1), false
	}},
	{name: "go-zero re-entrant acquire", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		if r.get(0) == r.tok {
			r.s[0] = mKey{{tok: r.tok, exp: r.ttl}}
			return mBulkK, false
		}
		if r.setNX(0) {
			return mOK, false
		}
		return mNil, false
	}},
	{name: "compare-and-delete", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		if r.get(0) == r.tok {
			r.s[0] = nil
			return mInt(1), false
		}
		return mInt(0), false
	}},
	{name: "compare-and-pexpire", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		if r.get(0) == r.tok {
			r.s[0][0].exp = r.ttl
			return mInt(1), false
		}
		return mInt(0), false
	}},
	{name: "unconditional SET PX (refused over another's hold)", keys: []mKind{mString}, run: func(r *mRun) (Value, bool) {
		if v := r.get(0); v != "" && v != r.tok {
			return Value{}, true
		}
		r.s[0] = mKey{{tok: r.tok, exp: r.ttl}}
		return mOK, false
	}},
	{name: "lock-or-enqueue", keys: []mKind{mString, mZset}, run: func(r *mRun) (Value, bool) {
		if r.setNX(0) {
			return mInt(1), false
		}
		r.s[1] = r.s[1].put(mEntry{tok: r.tok, exp: r.ttl})
		return mInt(0), false
	}},
	{name: "take every free key, return the count", keys: []mKind{mString, mString}, run: func(r *mRun) (Value, bool) {
		n := int64(0)
		for j := range r.s {
			if r.setNX(j) {
				n++
			}
		}
		return mInt(n), false
	}},
	{name: "all-or-nothing acquire of two keys (node-redlock)", keys: []mKind{mString, mString}, run: func(r *mRun) (Value, bool) {
		for j := range r.s {
			if len(r.s[j]) > 0 {
				return mInt(0), false
			}
		}
		for j := range r.s {
			r.setNX(j)
		}
		return mInt(int64(len(r.s))), false
	}},
	{name: "hand-off: release the first lock, take the second", keys: []mKind{mString, mString}, run: func(r *mRun) (Value, bool) {
		if r.get(0) != r.tok {
			return mInt(0), false
		}
		r.s[0] = nil
		if r.setNX(1) {
			return mInt(1), false
		}
		return mInt(0), false
	}},
	{name: "child lock under the caller's parent (EXISTS)", keys: []mKind{mString, mString}, run: func(r *mRun) (Value, bool) {
		if len(r.s[1]) == 0 {
			return mNil, false
		}
		if r.setNX(0) {
			return mOK, false
		}
		return mNil, false
	}},
	{name: "Redisson re-entrant hash lock", keys: []mKind{mHash}, run: func(r *mRun) (Value, bool) {
		k := r.s[0]
		if len(k) == 0 || k.find(r.tok) >= 0 {
			n := 1
			if i := k.find(r.tok); i >= 0 {
				n = k[i].n + 1
			}
			r.s[0] = mKey{{tok: r.tok, exp: r.ttl, n: n}}
			return mNil, false
		}
		return mInt(k[0].exp), false // PTTL
	}},
	{name: "Redisson unlock", keys: []mKind{mHash}, run: func(r *mRun) (Value, bool) {
		k := r.s[0]
		i := k.find(r.tok)
		if i < 0 {
			return mNil, false
		}
		if k[i].n > 1 {
			k[i].n--
			k[i].exp = r.ttl
			return mInt(0), false
		}
		r.s[0] = nil
		return mInt(1), false
	}},
	{name: "sorted-set semaphore of 1", keys: []mKind{mZset}, limit: 1, run: semAcquire},
	{name: "sorted-set semaphore of 1, release", keys: []mKind{mZset}, limit: 1, run: semRelease},
	{name: "sorted-set semaphore of 2", keys: []mKind{mZset}, limit: 2, run: semAcquire},
	{name: "sorted-set semaphore of 2, release", keys: []mKind{mZset}, limit: 2, run: semRelease},
}

// semRelease removes the caller's member: 1 when it had one.
func semRelease(r *mRun) (Value, bool) {
	if r.s[0].find(r.tok) < 0 {
		return mInt(0), false
	}
	r.s[0] = r.s[0].remove(r.tok)
	return mInt(1), false
}

// semAcquire refreshes the caller's member, or adds it while the set has
// fewer than the limit: 1 when it holds a place, 0 when the set is full.
func semAcquire(r *mRun) (Value, bool) {
	k := r.s[0]
	if k.find(r.tok) < 0 && len(k) >= r.limit {
		return mInt(0), false
	}
	r.s[0] = k.put(mEntry{tok: r.tok, exp: r.ttl})
	return mInt(1), false
}

// mEffects is what the wrapper reports of a run that changed s into t,
// for caller tok: per key, the own holders before and after, whether it
// changed, the own hold's time left, and the other tokens' holders kept.
func mEffects(s, t mState, tok string) []KeyEffect {
	out := make([]KeyEffect, len(s))
	for j := range s {
		var k KeyEffect
		if s[j].find(tok) >= 0 {
			k.BeforeOwn = []string{tok}
		}
		if i := t[j].find(tok); i >= 0 {
			k.AfterOwn = []string{tok}
			k.Hold = time.Duration(t[j][i].exp) * time.Millisecond
		}
		k.Changed = !slices.Equal(s[j], t[j])
		for _, e := range t[j] {
			if e.tok != tok && s[j].find(e.tok) >= 0 {
				k.Others++
			}
		}
		out[j] = k
	}
	return out
}

// mUndo is undoEffectScript on one key: each of tokens that holds it is
// removed.
func mUndo(k mKey, tokens []string) mKey {
	for _, t := range tokens {
		k = k.remove(t)
	}
	return k
}
