package redisnode

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// nodeMilli is the node's clock now, in milliseconds, read by TIME.
func nodeMilli(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	now, err := admin.Time(t.Context()).Result()
	if err != nil {
		t.Fatalf("TIME: %v", err)
	}
	return now.UnixMilli()
}

// TestLockWritesPastTheirDeadlineDoNothing: each owner-checked lock write
// (release, extend, undo, FENCE's write-back) run on the node after the last millisecond it
// carries does nothing there and answers LATE, as its body and as its
// digest; one in time, or with no limit (0), works (attack17 F4).
func TestLockWritesPastTheirDeadlineDoNothing(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	ctx := t.Context()
	l := quorum.Lock{Keys: []string{"k"}, Token: "mine"}
	// taken is an acquire that took k again from "mine" (60s left).
	taken := []quorum.Entry{{Present: true, Token: "mine", TTL: time.Minute}}
	writes := []struct {
		name string
		run  func(until int64) error
		// done reports whether the write took effect on k, set to "mine"
		// with a TTL of 30s before it ran.
		done func() bool
	}{
		{"release", func(until int64) error {
			_, err := n.Release(ctx, l, until)
			return err
		}, func() bool { return admin.Exists(ctx, "k").Val() == 0 }},
		{"release by digest", func(until int64) error {
			_, err := runCall(ctx, n.p, pipeRelease(l, untilArg(until)))
			return err
		}, func() bool { return admin.Exists(ctx, "k").Val() == 0 }},
		{"extend", func(until int64) error {
			_, err := n.Extend(ctx, l, 5*time.Second, quorum.ExtendSet, 0, until)
			return err
		}, func() bool { return admin.PTTL(ctx, "k").Val() <= 5*time.Second }},
		{"extend by digest", func(until int64) error {
			_, err := runCall(ctx, n.p, pipeExtend(l, 5*time.Second, quorum.ExtendSet, 0, untilArg(until)))
			return err
		}, func() bool { return admin.PTTL(ctx, "k").Val() <= 5*time.Second }},
		{"undo of a key taken free", func(until int64) error {
			_, err := n.Undo(ctx, l, []quorum.Entry{{}}, until)
			return err
		}, func() bool { return admin.Exists(ctx, "k").Val() == 0 }},
		{"FENCE's write-back", func(until int64) error {
			admin.Del(ctx, quorum.HoldPrefix+"k")
			_, err := n.WriteCounter(ctx, "k", "mine", quorum.FenceField, 5, false, until)
			return err
		}, func() bool { return admin.Get(ctx, quorum.HoldPrefix+"k").Val() == "5 mine" }},
		{"undo of a key taken again", func(until int64) error {
			_, err := n.Undo(ctx, l, taken, until)
			return err
		}, func() bool { return admin.PTTL(ctx, "k").Val() > 30*time.Second }},
	}
	if err := admin.HSet(ctx, quorum.CountersKey, "seeded", "1").Err(); err != nil { // for the write-back
		t.Fatal(err)
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			for _, tt := range []struct {
				name  string
				until func(now int64) int64
				late  bool
			}{
				{"a second past its deadline", func(now int64) int64 { return now - 1000 }, true},
				{"a millisecond past its deadline", func(now int64) int64 { return now - 1 }, true},
				{"in time", func(now int64) int64 { return now + 10000 }, false},
				{"with no limit", func(int64) int64 { return 0 }, false},
			} {
				if err := admin.Set(ctx, "k", "mine", 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				err := w.run(tt.until(nodeMilli(t, admin)))
				switch {
				case tt.late && !redis.HasErrorPrefix(err, "LATE"):
					t.Errorf("%s: err = %v; want a LATE reply", tt.name, err)
				case tt.late && w.done():
					t.Errorf("%s: the write took effect", tt.name)
				case !tt.late && err != nil:
					t.Errorf("%s: err = %v; want none", tt.name, err)
				case !tt.late && !w.done():
					t.Errorf("%s: the write did not take effect", tt.name)
				}
			}
		})
	}
}

// TestUntilArgIsFixedWidth: the deadline field has the same width for
// every value, so a fan-out's copies are patched in place, and reads as
// the value in Lua's tonumber.
func TestUntilArgIsFixedWidth(t *testing.T) {
	for _, tt := range []struct {
		ms   int64
		want string
	}{
		{0, "0000000000000"},
		{-5, "0000000000000"},
		{1, "0000000000001"},
		{1795000000123, "1795000000123"},
		{99999999999999, "9999999999999"},
	} {
		if got := untilArg(tt.ms); got != tt.want {
			t.Errorf("untilArg(%d) = %q; want %q", tt.ms, got, tt.want)
		}
		c := pipeRelease(quorum.Lock{Keys: []string{"k"}, Token: "t"}, noUntilArg)
		putUntil(c.Command.Cmd, tt.ms)
		want := pipeRelease(quorum.Lock{Keys: []string{"k"}, Token: "t"}, tt.want)
		if string(c.Command.Cmd) != string(want.Command.Cmd) {
			t.Errorf("putUntil(%d) = %q; want %q", tt.ms, c.Command.Cmd, want.Command.Cmd)
		}
	}
}

// TestEffectUndoPastItsDeadlineDoesNothing: a wrapped script's undo (a
// Redisson hold's field, with the marker the run added) past its
// deadline leaves the key whole and answers LATE; in time, or with no
// limit, it removes the run's own holder and its marker.
func TestEffectUndoPastItsDeadlineDoesNothing(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	ctx := t.Context()
	u := quorum.KeyUndo{Tokens: []string{"uuid:1"}, Markers: []quorum.Marker{{Entry: "mode", Value: "write"}}}
	for _, tt := range []struct {
		name  string
		until func(now int64) int64
		late  bool
	}{
		{"a second past its deadline", func(now int64) int64 { return now - 1000 }, true},
		{"in time", func(now int64) int64 { return now + 10000 }, false},
		{"with no limit", func(int64) int64 { return 0 }, false},
	} {
		if err := admin.HSet(ctx, "k", "uuid:1", 1, "mode", "write", "other", 1).Err(); err != nil {
			t.Fatal(err)
		}
		err := n.UndoEffect(ctx, "k", u, tt.until(nodeMilli(t, admin)))
		got := admin.HGetAll(ctx, "k").Val()
		switch {
		case tt.late && !redis.HasErrorPrefix(err, "LATE"):
			t.Errorf("%s: err = %v; want a LATE reply", tt.name, err)
		case tt.late && len(got) != 3:
			t.Errorf("%s: the key holds %v; want it whole", tt.name, got)
		case !tt.late && err != nil:
			t.Errorf("%s: err = %v; want none", tt.name, err)
		case !tt.late && len(got) != 1:
			t.Errorf("%s: the key holds %v; want only other's field", tt.name, got)
		}
		admin.Del(ctx, "k")
	}
}

// TestRenewalsPastTheirDeadlineDoNothing: Redisson's watchdog renewals
// (RenewLocks, RenewRead) past their deadline leave the lock's expiry
// and answer LATE; in time, or with no limit, they renew (attack18 A6).
func TestRenewalsPastTheirDeadlineDoNothing(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	ctx := t.Context()
	for _, tt := range []struct {
		name  string
		until func(now int64) int64
		late  bool
	}{
		{"a second past its deadline", func(now int64) int64 { return now - 1000 }, true},
		{"in time", func(now int64) int64 { return now + 10000 }, false},
		{"with no limit", func(int64) int64 { return 0 }, false},
	} {
		if err := admin.HSet(ctx, "k", "uuid:1", 1).Err(); err != nil {
			t.Fatal(err)
		}
		admin.PExpire(ctx, "k", 30*time.Second)
		got, err := n.RenewLocks(ctx, []string{"k"}, []string{"2000", "uuid:1"}, tt.until(nodeMilli(t, admin)))
		pttl := admin.PTTL(ctx, "k").Val()
		switch {
		case tt.late && !redis.HasErrorPrefix(err, "LATE"):
			t.Errorf("RenewLocks %s: err = %v; want a LATE reply", tt.name, err)
		case tt.late && pttl <= 2*time.Second:
			t.Errorf("RenewLocks %s: PTTL = %v; want the 30s left", tt.name, pttl)
		case !tt.late && (err != nil || len(got) != 1 || got[0] != 1):
			t.Errorf("RenewLocks %s = %v, %v; want [1]", tt.name, got, err)
		case !tt.late && pttl > 2*time.Second:
			t.Errorf("RenewLocks %s: PTTL = %v; want renewed to 2s", tt.name, pttl)
		}
		_, err = n.RenewRead(ctx, []string{"k", "k"}, []string{"2000", "1", "uuid:1"}, tt.until(nodeMilli(t, admin)))
		if tt.late != redis.HasErrorPrefix(err, "LATE") {
			t.Errorf("RenewRead %s: err = %v; want LATE: %v", tt.name, err, tt.late)
		}
		admin.Del(ctx, "k")
	}
}

// TestFenceWriteBackKeepsTheTokensHigherRecord: a FENCE write-back that
// lands after the same token's next hold recorded a higher T leaves
// that record (and follows the key's TTL); a lower record of the token,
// or another token's, is written over (attack18 A7 across proxies).
func TestFenceWriteBackKeepsTheTokensHigherRecord(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	ctx := t.Context()
	if err := admin.HSet(ctx, quorum.CountersKey, "seeded", "1").Err(); err != nil {
		t.Fatal(err)
	}
	rec := quorum.HoldPrefix + "k"
	for _, tt := range []struct {
		name, before string
		v            int64
		want         string
	}{
		{"a higher record of the token", "25 mine", 23, "25 mine"},
		{"a higher record, more digits", "100 mine", 99, "100 mine"},
		{"the same record", "23 mine", 23, "23 mine"},
		{"a lower record of the token", "22 mine", 23, "23 mine"},
		{"a lower record, fewer digits", "9 mine", 23, "23 mine"},
		{"another token's higher record", "25 other", 23, "23 mine"},
		{"another token ending in the token", "25 xmine", 23, "23 mine"},
		{"the token as a prefix of the record's", "25 mine2", 23, "23 mine"},
		{"no record", "", 23, "23 mine"},
	} {
		if err := admin.Set(ctx, "k", "mine", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		admin.Del(ctx, rec)
		if tt.before != "" {
			if err := admin.Set(ctx, rec, tt.before, time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
		w, err := n.WriteCounter(ctx, "k", "mine", quorum.FenceField, tt.v, false, 0)
		if err != nil || w != quorum.CounterWritten {
			t.Errorf("%s: WriteCounter = %v, %v; want written", tt.name, w, err)
		}
		if got := admin.Get(ctx, rec).Val(); got != tt.want {
			t.Errorf("%s: record %q; want %q", tt.name, got, tt.want)
		}
		if pttl := admin.PTTL(ctx, rec).Val(); pttl <= 20*time.Second {
			t.Errorf("%s: record's TTL %v; want the key's (30s)", tt.name, pttl)
		}
	}
}

// TestWrappedRunsPastTheirDeadlineDoNothing: a wrapped run (Redisson's
// renewExpiration, a PEXPIRE served by its effect) past the last
// millisecond it carries does nothing and answers LATE, as a library
// call (loading the library, and with it loaded), as a script and on
// the batch path (its field patched into a copy of the FCALL); one in
// time, or with no limit (0), runs (attack18 A6).
func TestWrappedRunsPastTheirDeadlineDoNothing(t *testing.T) {
	p := startRedis(t)
	n, admin := p.node(t), p.Client(t)
	script := p.node(t)
	script.p.noFunctions.Store(true)
	ctx := t.Context()
	const renew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
	eff := quorum.New(quorum.Config{MaxTTL: time.Minute}, n).Wrap(renew, nil)
	call := func(until int64) quorum.EffectCall {
		return quorum.EffectCall{Keys: []string{"k"}, Args: []string{"2000", "uuid:1"}, Until: until}
	}
	forms := []struct {
		name string
		run  func(until int64) (quorum.NodeEffect, error)
	}{
		{"library", func(until int64) (quorum.NodeEffect, error) {
			return n.RunEffect(ctx, eff, call(until), nil)
		}},
		{"script", func(until int64) (quorum.NodeEffect, error) {
			return script.RunEffect(ctx, eff, call(until), nil)
		}},
		{"batch", func(until int64) (quorum.NodeEffect, error) {
			c, ok := n.FCall(eff.Wrapped(), call(0))
			if !ok || !c.Command.Dated {
				t.Fatalf("FCall = %v, dated %v; want a dated call", ok, c.Command.Dated)
			}
			replies := make([]quorum.Reply, 1)
			n.Fan(ctx, time.Now().Add(5*time.Second), []quorum.Batch{n}, []int{0}, c.Command, []int64{until}, false, replies)
			v, err := c.Result(replies[0].V, replies[0].Err)
			if err != nil {
				return quorum.NodeEffect{}, err
			}
			return n.EffectOf(eff.Wrapped(), v, nil, call(0), nil)
		}},
	}
	for _, f := range forms {
		for _, tt := range []struct {
			name  string
			until func(now int64) int64
			late  bool
		}{
			{"a second past its deadline", func(now int64) int64 { return now - 1000 }, true},
			{"with no limit", func(int64) int64 { return 0 }, false},
			{"a millisecond past its deadline", func(now int64) int64 { return now - 1 }, true},
			{"in time", func(now int64) int64 { return now + 10000 }, false},
		} {
			if err := admin.HSet(ctx, "k", "uuid:1", 1).Err(); err != nil {
				t.Fatal(err)
			}
			admin.PExpire(ctx, "k", 30*time.Second)
			ne, err := f.run(tt.until(nodeMilli(t, admin)))
			pttl := admin.PTTL(ctx, "k").Val()
			switch {
			case tt.late && !redis.HasErrorPrefix(err, "LATE"):
				t.Errorf("%s, %s: err = %v; want a LATE reply", f.name, tt.name, err)
			case tt.late && pttl < 20*time.Second:
				t.Errorf("%s, %s: the run cut the key to %v", f.name, tt.name, pttl)
			case !tt.late && (err != nil || ne.Reply.Int != 1):
				t.Errorf("%s, %s: %+v, %v; want the reply 1", f.name, tt.name, ne, err)
			case !tt.late && pttl > 2*time.Second:
				t.Errorf("%s, %s: the key's TTL is %v; want the run's 2s", f.name, tt.name, pttl)
			}
			admin.Del(ctx, "k")
		}
	}
}
