package redisnode

import (
	"fmt"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// TestLatchScriptsOnRedis runs the latch's node scripts on a real
// redis-server, branch by branch: nothing on a node whose counters are
// missing or pending; the set only where no count is; a decrement per
// call of the count its set's nonce names, the count deleted at 0; the first claim stays; the undo only of
// its own set; delete.
func TestLatchScriptsOnRedis(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	ctx := t.Context()
	want := func(what string, got quorum.LatchAnswer, err error, state quorum.CounterState, v int64) {
		t.Helper()
		if err != nil || got.State != state || got.Value != v {
			t.Errorf("%s = %+v, %v; want state %d, %d", what, got, err, state, v)
		}
	}
	// claim is a claim on a seeded node, answered v.
	claim := func(what, name string, c, nonce, ballot, v int64) {
		t.Helper()
		a, err := n.LatchClaim(ctx, name, c, nonce, ballot)
		want(what, a, err, quorum.CounterSeeded, v)
	}
	field := func(f string) (string, bool) {
		v, err := admin.HGet(ctx, quorum.CountersKey, f).Result()
		return v, err == nil
	}

	a, err := n.LatchSet(ctx, "x", 2, 7)
	want("set, counters missing", a, err, quorum.CounterMissing, 0)
	d, err := n.LatchDecrement(ctx, "x", 0)
	if err != nil || d != (quorum.LatchDecremented{}) {
		t.Errorf("countDown, counters missing = %+v, %v; want nothing", d, err)
	}
	admin.HSet(ctx, quorum.CountersKey, "pending", "1")
	a, err = n.LatchClaim(ctx, "x", 5, 0, 0)
	want("claim, counters pending", a, err, quorum.CounterPending, 0)
	if l := admin.HLen(ctx, quorum.CountersKey).Val(); l != 1 {
		t.Fatalf("a node not seeded has %d fields; want its mark only", l)
	}

	admin.Del(ctx, quorum.CountersKey)
	admin.HSet(ctx, quorum.CountersKey, "seeded", "1", "m:x", "3") // an older latch's claim
	a, err = n.LatchSet(ctx, "x", 2, 7)
	want("set", a, err, quorum.CounterSeeded, 1)
	if v, _ := field("m:x"); v != "0" {
		t.Errorf("the set left the claim %q; want 0 (none, this latch's to take)", v)
	}
	a, err = n.LatchSet(ctx, "x", 5, 8)
	want("set over a count", a, err, quorum.CounterSeeded, 0)
	if a.Nonce != 7 {
		t.Errorf("set over a count answered its nonce %d; want 7", a.Nonce)
	}
	if err := n.LatchUndo(ctx, "x", 8, false); err != nil {
		t.Fatal(err)
	}
	if v, _ := field("l:x"); v != "2" {
		t.Fatalf("another set's undo left the count %q; want 2", v)
	}
	decr := func(what string, nonce, old, new int64) {
		t.Helper()
		d, err := n.LatchDecrement(ctx, "x", nonce)
		if err != nil || d != (quorum.LatchDecremented{State: quorum.CounterSeeded, Old: old, New: new}) {
			t.Errorf("%s = %+v, %v; want %d -> %d", what, d, err, old, new)
		}
	}
	decr("countDown of another set's count", 8, 2, 2)
	decr("countDown", 7, 2, 1)
	if v, _ := field("l:x"); v != "1" {
		t.Fatalf("count after one countDown = %q; want 1", v)
	}
	decr("the last countDown", 7, 1, 0)
	if _, ok := field("l:x"); ok {
		t.Error("the count is still there at 0")
	}
	if _, ok := field("n:x"); ok {
		t.Error("the set's nonce is still there at 0")
	}
	decr("countDown of an open latch", 0, 0, 0)
	decr("countDown of an open latch, a set's nonce", 7, 0, 0)
	claim("a claim in another set's slot", "x", 11, 8, 7, 0)
	claim("the first claim", "x", 11, 7, 7, 11)
	if v, _ := field("m:x"); v != "11" {
		t.Errorf("claim field %q; want 11", v)
	}
	claim("a second claim", "x", 12, 7, 0, 11)

	a, err = n.LatchSet(ctx, "y", 3, 9)
	want("set y", a, err, quorum.CounterSeeded, 1)
	if err := n.LatchUndo(ctx, "y", 9, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := field("l:y"); ok {
		t.Error("the undo left its own set's count")
	}
	n.LatchSet(ctx, "y", 3, 10)
	a, err = n.LatchDelete(ctx, "y")
	want("delete", a, err, quorum.CounterSeeded, 1)
	a, err = n.LatchDelete(ctx, "y")
	want("delete of none", a, err, quorum.CounterSeeded, 0)
	if l := admin.HLen(ctx, quorum.CountersKey).Val(); l != 6 {
		t.Errorf("counters have %d fields; want 6 (seeded, x's claim, its slot and its ballot, 0 since a claim of none was answered it, y's tombstone and its memory of votes): %v", l, admin.HGetAll(ctx, quorum.CountersKey).Val())
	}
	if v, _ := field("o:y"); v != "-1" {
		t.Errorf("delete left the slot tag %q; want the tombstone -1", v)
	}
	n.LatchSet(ctx, "y", 3, 11)
	n.LatchClaim(ctx, "y", 10, 11, 11) // a vote for ballot 11
	n.LatchDelete(ctx, "y")
	if a, err = n.LatchClaim(ctx, "y", 12, 11, 11); a.Value != 0 || err != nil {
		t.Errorf("a claim after a delete = %+v, %v; want nobody's", a, err)
	}
	for _, read := range []int64{0, -1} {
		if a, err = n.LatchClaim(ctx, "y", 12, read, 11); a.Value != 0 || err != nil {
			t.Errorf("a claim of ballot 11 that read %d, after a delete = %+v, %v; want nobody's (U1b)", read, a, err)
		}
	}
	if _, ok := field("m:y"); ok {
		t.Error("a claim after a delete took the tombstone's slot")
	}
	a, err = n.LatchDelete(ctx, "u")
	want("delete of a latch never set", a, err, quorum.CounterSeeded, 0)
	if _, ok := field("o:u"); ok {
		t.Error("a delete of a latch never set left a tombstone")
	}

	// A node that missed the set (no field of the slot) gets a slot of
	// the ballot from a claim that read no tag there; a claim of another
	// ballot, or one that read a tag, is nobody's; a late set of the
	// ballot keeps the claim.
	claim("a claim that read a tag, on a node with no slot", "s", 20, 21, 21, 0)
	claim("a claim with no ballot, on a node with no slot", "s", 20, 0, 0, 0)
	if l := admin.HLen(ctx, quorum.CountersKey).Val(); l != 6 {
		t.Errorf("claims that create nothing left %d fields; want 6", l)
	}
	claim("a claim that creates the slot", "s", 20, 0, 21, 20)
	if v, _ := field("o:s"); v != "21" {
		t.Errorf("the created slot's tag %q; want the ballot 21", v)
	}
	claim("a second claim of the ballot that read no tag", "s", 22, 0, 21, 20)
	claim("a second claim that read the created tag", "s", 22, 21, 21, 20)
	claim("a claim of another ballot", "s", 23, 0, 24, 0)
	a, err = n.LatchSet(ctx, "s", 2, 21)
	want("the ballot's set landing late", a, err, quorum.CounterSeeded, 1)
	if v, _ := field("m:s"); v != "20" {
		t.Errorf("the late set left the claim %q; want 20 kept", v)
	}
	if v, _ := field("l:s"); v != "2" {
		t.Errorf("the late set left the count %q; want 2", v)
	}
	admin.HSet(ctx, quorum.CountersKey, "o:r", "5", "m:r", "6") // an older latch's slot, its claim given
	if a, _ = n.LatchSet(ctx, "r", 2, 25); a.Bare {
		t.Error("a set over a slot answered that it found none")
	}
	n.LatchUndo(ctx, "r", 25, false)
	a, err = n.LatchClaim(ctx, "r", 26, 0, 27)
	want("a claim where a denied set was undone", a, err, quorum.CounterSeeded, 0)
	if v, _ := field("m:r"); v != "0" {
		t.Errorf("a claim took the undone set's slot: %q (U1)", v)
	}
	a, err = n.LatchClaim(ctx, "r", 26, 0, 5)
	want("a claim of the replaced slot's ballot", a, err, quorum.CounterSeeded, 6)
	// A denied set that found no field of the slot leaves none (L6):
	// a claim that read no tag there creates it; one taken before the
	// undo stays.
	if a, _ = n.LatchSet(ctx, "q", 1, 30); !a.Bare {
		t.Error("a set where the node had no slot answered that it had one")
	}
	n.LatchUndo(ctx, "q", 30, true)
	for _, f := range []string{"l:q", "n:q", "m:q", "o:q"} {
		if v, ok := field(f); ok {
			t.Errorf("the undo of a set that found no slot left %s %q", f, v)
		}
	}
	claim("a claim where a set that found no slot was undone", "q", 31, 0, 32, 31)
	n.LatchSet(ctx, "p", 1, 33)
	a, err = n.LatchClaim(ctx, "p", 34, 33, 33)
	want("a claim in a denied set's slot, before its undo", a, err, quorum.CounterSeeded, 34)
	n.LatchUndo(ctx, "p", 33, true)
	if v, _ := field("m:p"); v != "34" {
		t.Errorf("the undo took a claim given before it: %q (U1)", v)
	}

	// The reset of an older latch's count, by the nonce the set found.
	admin.HSet(ctx, quorum.CountersKey, "l:z", "5", "n:z", "3", "o:z", "3", "m:z", "4")
	reset := func(what string, old int64, want string) {
		t.Helper()
		if err := n.LatchReset(ctx, "z", 2, 9, old); err != nil {
			t.Fatal(err)
		}
		if v, _ := field("l:z"); v != want {
			t.Errorf("%s: count %q; want %q", what, v, want)
		}
	}
	reset("reset by another nonce", 8, "5")
	reset("reset", 3, "2")
	if v, _ := field("n:z"); v != "9" {
		t.Errorf("reset left the nonce %q; want 9", v)
	}
	if v, _ := field("m:z"); v != "0" {
		t.Errorf("reset left the older slot's claim %q; want 0, this latch's to take (attack15 L5)", v)
	}
	if p, q := admin.HGet(ctx, quorum.CountersKey, "p:z").Val(), admin.HGet(ctx, quorum.CountersKey, "q:z").Val(); p != "3" || q != "4" {
		t.Errorf("reset kept the older slot's vote %q of ballot %q; want 4 of 3", q, p)
	}
	// A claim given for this latch's ballot beside the older count stays.
	admin.HSet(ctx, quorum.CountersKey, "l:k", "5", "n:k", "3", "o:k", "3", "m:k", "4", "b:k", "9")
	if err := n.LatchReset(ctx, "k", 2, 9, 3); err != nil {
		t.Fatal(err)
	}
	if v, _ := field("m:k"); v != "4" {
		t.Errorf("reset changed a claim given for its ballot to %q; want 4 kept", v)
	}
	if v, ok := field("b:k"); ok {
		t.Errorf("reset left the claim's ballot %q; want none (the slot's tag is it)", v)
	}
	admin.HDel(ctx, quorum.CountersKey, "l:k", "n:k", "o:k", "m:k")
	reset("a second reset, its nonce gone", 3, "2")
	admin.HDel(ctx, quorum.CountersKey, "l:z", "n:z", "m:z", "o:z", "p:z", "q:z")
	reset("reset of no count", 0, "")

	// A node seeded after a restart answers nobody's claim (0) for a
	// latch not set there since, and takes claims again once one is, or
	// once a set's reset lands.
	admin.HSet(ctx, quorum.CountersKey, "m:w", "-1", "l:v", "4", "n:v", "5", "m:v", "-1")
	claim("claim on a restarted node", "w", 13, 0, 0, 0)
	a, err = n.LatchClaim(ctx, "w", 13, 0, 14)
	want("claim of a ballot on a restarted node", a, err, quorum.CounterSeeded, 0)
	if v, _ := field("m:w"); v != "-1" {
		t.Errorf("a restarted node took a claim of a latch not set since: %q", v)
	}
	n.LatchSet(ctx, "w", 1, 14)
	claim("claim on a restarted node after a set", "w", 13, 14, 14, 13)
	if err := n.LatchReset(ctx, "v", 2, 15, 5); err != nil {
		t.Fatal(err)
	}
	a, err = n.LatchClaim(ctx, "v", 16, 15, 15)
	want("claim on a restarted node after a reset", a, err, quorum.CounterSeeded, 16)

	// review28 F0: a new set replaces an opened slot whose vote was given;
	// a claim of the opened latch's ballot that read the new slot is
	// answered that vote, one of the new set's ballot takes the new slot.
	n.LatchSet(ctx, "f", 1, 40)
	n.LatchDecrement(ctx, "f", 40)
	claim("the opening claim", "f", 41, 40, 40, 41)
	a, err = n.LatchSet(ctx, "f", 5, 42)
	want("a new set of the opened latch", a, err, quorum.CounterSeeded, 1)
	claim("a claim of the opened latch's ballot, in the new slot", "f", 43, 42, 40, 41)
	claim("a claim of the new set's ballot", "f", 43, 42, 42, 43)
	a, err = n.LatchClaim(ctx, "f", 44, 42, 0)
	want("a claim of no ballot beside two votes", a, err, quorum.CounterSeeded, 0)
	// L3: a vote of an older ballot, in its own slot, is kept by it; the
	// node votes for the new ballot, the slot's tag left. A claim of none
	// answered a vote makes it answer any.
	n.LatchSet(ctx, "k", 1, 80)
	n.LatchDecrement(ctx, "k", 80)
	claim("the older opening's claim", "k", 81, 80, 80, 81)
	claim("a claim of a new set's ballot in the older slot", "k", 82, 80, 83, 82)
	claim("a claim of the older ballot after", "k", 84, 80, 80, 81)
	claim("a second claim of the new ballot", "k", 85, 80, 83, 82)
	if v, _ := field("o:k"); v != "80" {
		t.Errorf("the new ballot's vote left the slot tag %q; want the older 80 (the evidence)", v)
	}
	n.LatchSet(ctx, "j", 1, 90)
	n.LatchDecrement(ctx, "j", 90)
	n.LatchClaim(ctx, "j", 91, 90, 90)
	claim("a claim of no ballot", "j", 92, 90, 0, 91)
	a, err = n.LatchClaim(ctx, "j", 93, 90, 94)
	want("a claim of another ballot after one of none", a, err, quorum.CounterSeeded, 91)
	// A vote given in a slot of another tag is kept by its ballot: a
	// newer set keeps it for that ballot, a late set of that ballot takes
	// it as its slot's claim.
	admin.HSet(ctx, quorum.CountersKey, "o:g", "50", "m:g", "0", "o:h", "60", "m:h", "0")
	claim("a claim in an older latch's slot", "g", 51, 50, 52, 51)
	n.LatchSet(ctx, "g", 1, 53)
	a, err = n.LatchClaim(ctx, "g", 54, 53, 52)
	want("a claim of that ballot after a newer set", a, err, quorum.CounterSeeded, 51)
	// A vote given for no ballot, kept, answers a claim of any.
	n.LatchSet(ctx, "e", 1, 70)
	n.LatchDecrement(ctx, "e", 70)
	claim("a claim of no ballot", "e", 71, 70, 0, 71)
	n.LatchSet(ctx, "e", 1, 72)
	a, err = n.LatchClaim(ctx, "e", 73, 72, 72)
	want("a claim of the new set's ballot beside a vote of none", a, err, quorum.CounterSeeded, 71)
	n.LatchClaim(ctx, "h", 61, 60, 62)
	n.LatchSet(ctx, "h", 1, 62)
	if v, _ := field("m:h"); v != "61" {
		t.Errorf("the ballot's late set left the claim %q; want 61, given for it", v)
	}

	// attack15 L4: a tombstone remembers the ballots its node voted for
	// ("d:"): a claim of one of them, or of none, is nobody's there; one
	// of another ballot gets a slot of it, with its claim.
	n.LatchSet(ctx, "t", 1, 100)
	n.LatchClaim(ctx, "t", 101, 100, 100)
	n.LatchDelete(ctx, "t")
	claim("a claim at a tombstone, of a ballot its node voted for", "t", 102, -1, 100, 0)
	claim("a claim at a tombstone, of no ballot", "t", 102, -1, 0, 0)
	claim("a claim at a tombstone, of a ballot its node never voted for", "t", 103, -1, 104, 103)
	if v, _ := field("o:t"); v != "104" {
		t.Errorf("the claim at the tombstone left the slot tag %q; want its ballot 104", v)
	}
	claim("a second claim of that ballot", "t", 105, 104, 104, 103)
	n.LatchDelete(ctx, "t")
	for _, b := range []int64{100, 104} {
		a, err = n.LatchClaim(ctx, "t", 106, -1, b)
		want(fmt.Sprintf("a claim of ballot %d at the second tombstone", b), a, err, quorum.CounterSeeded, 0)
	}
	a, err = n.LatchClaim(ctx, "t", 107, -1, 108)
	want("a claim of a third ballot at the second tombstone", a, err, quorum.CounterSeeded, 107)
	// A vote kept by its ballot that a set replaces is remembered.
	n.LatchSet(ctx, "i", 1, 110)
	n.LatchDecrement(ctx, "i", 110)
	n.LatchClaim(ctx, "i", 111, 110, 110)
	n.LatchSet(ctx, "i", 1, 112) // keeps the vote for 110 ("p:")
	n.LatchDecrement(ctx, "i", 112)
	n.LatchClaim(ctx, "i", 113, 112, 112)
	n.LatchSet(ctx, "i", 1, 114) // keeps the vote for 112, remembers 110
	if p, _ := field("p:i"); p != "112" {
		t.Errorf("the third set kept a vote of ballot %q; want 112", p)
	}
	n.LatchDelete(ctx, "i")
	for _, b := range []int64{110, 112} {
		a, err = n.LatchClaim(ctx, "i", 115, -1, b)
		want(fmt.Sprintf("a claim of ballot %d, voted for two sets ago", b), a, err, quorum.CounterSeeded, 0)
	}
	// An upgrade: a tombstone the scripts before "d:" left remembers any
	// ballot, and a set over it carries that on.
	admin.HSet(ctx, quorum.CountersKey, "o:old", "-1")
	a, err = n.LatchClaim(ctx, "old", 120, -1, 121)
	want("a claim at a tombstone with no memory", a, err, quorum.CounterSeeded, 0)
	n.LatchSet(ctx, "old", 1, 122)
	if v, _ := field("d:old"); v != "-1" {
		t.Errorf("a set over a tombstone with no memory left the memory %q; want -1 (any)", v)
	}
	n.LatchClaim(ctx, "old", 123, 122, 122)
	n.LatchDelete(ctx, "old")
	a, err = n.LatchClaim(ctx, "old", 124, -1, 125)
	want("a claim at a later tombstone of a node with no memory", a, err, quorum.CounterSeeded, 0)
	// The rest of L3: a node keeping a vote of one ballot ("p:") and
	// holding one of another votes for a third, the kept one forgotten,
	// its ballot remembered apart ("x:"): a claim of it, or of none, is
	// nobody's from then on.
	admin.HSet(ctx, quorum.CountersKey, "o:a3", "130", "m:a3", "131", "p:a3", "132", "q:a3", "133")
	claim("a claim of a third ballot", "a3", 134, 130, 136, 134)
	claim("a claim of the forgotten ballot", "a3", 137, 130, 132, 0)
	claim("a claim of the slot's ballot", "a3", 137, 130, 130, 131)
	claim("a second claim of the third ballot", "a3", 137, 130, 136, 134)
	a, err = n.LatchClaim(ctx, "a3", 137, 130, 0)
	want("a claim of no ballot beside the memory", a, err, quorum.CounterSeeded, 0)
	if x, _ := field("x:a3"); x == "" {
		t.Error("no x:a3: the forgotten vote's ballot is not remembered apart")
	}
	if d, ok := field("d:a3"); ok {
		t.Errorf("d:a3 %q; want none while the slot lives", d)
	}
	n.LatchDelete(ctx, "a3")
	if x, _ := field("x:a3"); x != "" {
		t.Errorf("a delete left x:a3 %q", x)
	}
	claim("a claim of the forgotten ballot at the tombstone", "a3", 138, -1, 132, 0)
	a, err = n.LatchClaim(ctx, "a3", 138, -1, 140)
	want("a claim of another ballot at the tombstone", a, err, quorum.CounterSeeded, 138)
	// A seed's memory of any ("d:" -1) is not such a memory: a claim of
	// none that read the seed's slot, left to take, gets the vote
	// (TestRedissonLatchMasterRestartedBetweenCountDowns).
	admin.HSet(ctx, quorum.CountersKey, "l:s3", "1", "n:s3", "150", "o:s3", "150", "m:s3", "0", "d:s3", "-1")
	claim("a claim of none on a seeded node", "s3", 151, 150, 0, 151)
}
