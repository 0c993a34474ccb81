package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// rueidis (RESP3 only) and its rueidislock, side by side: against one
// redis-server and through the proxy over 5 masters. By default rueidis
// turns client-side caching on with CLIENT TRACKING, which the proxy
// refuses (it sees no node's writes, so it could send no invalidation):
// rueidis then refuses to start and says DisableCache must be true. With
// DisableCache both sides must tell the same story.
func TestRueidisSideBySide(t *testing.T) {
	ref := startRedis(t)
	_, p := setup(t, 5, proxy.Config{})

	_, refErr := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{ref.Addr}})
	if refErr != nil {
		t.Errorf("rueidis with default options against redis-server: %v", refErr)
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr}})
	if err == nil {
		c.Close()
		t.Errorf("rueidis with default options through the proxy started; want CLIENT TRACKING refused")
	} else if !strings.Contains(err.Error(), "DisableCache must be true") {
		t.Errorf("rueidis with default options through the proxy: %v; want it to ask for DisableCache", err)
	}

	want := rueidisStory(t, ref.Addr)
	got := rueidisStory(t, p.Addr)
	// ForceWithContext's takeover is refused through the proxy (docs/compatibility.md,
	// "Differences from one Redis": EVAL of a script that is not a
	// recognised lock script): those two steps read differently.
	differs := map[string]string{
		"ForceWithContext: true ok":          "ForceWithContext: false script refused: it removes or overwrites another token's hold; nothing of it was kept",
		"the holder's context ends: true ok": "the holder keeps the lock: true ok",
	}
	if len(got) != len(want) {
		t.Fatalf("through the proxy:\n%s\nagainst redis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if w, ok := differs[want[i]]; ok && got[i] == w {
			continue
		}
		if got[i] != want[i] {
			t.Errorf("step %d: %q through the proxy, %q against redis-server", i, got[i], want[i])
		}
	}
	for _, s := range want {
		t.Log(s)
	}
}

// rueidisStory runs the lock code a rueidis user writes against addr and
// returns what each step saw, in words that do not depend on timing.
func rueidisStory(t *testing.T, addr string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	opt := rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true}
	c, err := rueidis.NewClient(opt)
	if err != nil {
		t.Fatalf("rueidis.NewClient(%s, DisableCache): %v", addr, err)
	}
	defer c.Close()
	var story []string
	say := func(step string, v any, err error) {
		story = append(story, fmt.Sprintf("%s: %v %v", step, v, errWord(err)))
	}

	set := func(token string) (string, error) {
		return c.Do(ctx, c.B().Set().Key("rue-lock").Value(token).Nx().Px(5*time.Second).Build()).ToString()
	}
	v, err := set("tok")
	say("SET NX PX", v, err)
	v, err = set("other")
	say("contended SET NX PX", v, err)
	v, err = c.Do(ctx, c.B().Get().Key("rue-lock").Build()).ToString()
	say("GET", v, err)
	ms, err := c.Do(ctx, c.B().Pttl().Key("rue-lock").Build()).AsInt64()
	say("PTTL in (0, 5s]", ms > 0 && ms <= 5000, err)
	// NewLuaScript sends EVALSHA, and EVAL on NOSCRIPT.
	release := rueidis.NewLuaScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)
	n, err := release.Exec(ctx, c, []string{"rue-lock"}, []string{"other"}).AsInt64()
	say("release by a non-owner", n, err)
	n, err = release.Exec(ctx, c, []string{"rue-lock"}, []string{"tok"}).AsInt64()
	say("release", n, err)
	n, err = release.Exec(ctx, c, []string{"rue-lock"}, []string{"tok"}).AsInt64()
	say("stale release", n, err)

	// rueidislock: its locks are 3 keys of which 2 must be held, taken by
	// SET NX PXAT scripts and kept by PEXPIREAT scripts every half
	// validity.
	newLocker := func() rueidislock.Locker {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: opt, KeyValidity: time.Second})
		if err != nil {
			t.Fatalf("rueidislock.NewLocker(%s): %v", addr, err)
		}
		return l
	}
	l1, l2 := newLocker(), newLocker()
	defer l1.Close()
	defer l2.Close()
	ctx1, cancel1, err := l1.TryWithContext(ctx, "rl")
	say("TryWithContext", ctx1 != nil, err)
	_, _, err = l2.TryWithContext(ctx, "rl")
	say("contended TryWithContext is ErrNotLocked", errors.Is(err, rueidislock.ErrNotLocked), nil)
	// The lock outlives its 1s validity while its holder keeps it.
	select {
	case <-ctx1.Done():
		say("held past its validity", false, ctx1.Err())
	case <-time.After(1500 * time.Millisecond):
		say("held past its validity", true, nil)
	}
	// A waiter in the same locker is let in when the holder cancels.
	go func() {
		time.Sleep(200 * time.Millisecond)
		cancel1()
	}()
	ctx3, cancel3, err := l1.WithContext(ctx, "rl")
	say("WithContext after the holder cancelled", ctx3 != nil, err)
	if ctx3 == nil { // the story goes on, told as failed, not as a panic
		ctx3, cancel3 = context.WithCancel(ctx)
		cancel3()
	}
	// ForceWithContext through another locker takes the lock over (an
	// unconditional SET PXAT script); the first holder learns it lost the
	// lock when its next extend fails. The proxy refuses to overwrite
	// another token's hold, so there the holder keeps it.
	_, cancel4, err := l2.ForceWithContext(ctx, "rl")
	say("ForceWithContext", err == nil, err)
	if cancel4 != nil {
		defer cancel4()
	}
	if err == nil {
		select {
		case <-ctx3.Done():
			say("the holder's context ends", true, nil)
		case <-time.After(10 * time.Second):
			say("the holder's context ends", false, nil)
		}
	} else {
		say("the holder keeps the lock", ctx3.Err() == nil, nil)
	}
	cancel3()
	if cancel4 != nil {
		cancel4()
	}
	// Cancelling releases the keys.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := c.Do(ctx, c.B().Exists().Key("rueidislock:0:rl", "rueidislock:1:rl", "rueidislock:2:rl").Build()).AsInt64()
		if n == 0 || err != nil || time.Now().After(deadline) {
			say("keys released after cancel", n, err)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return story
}

// errWord is err's text, or "ok" for nil; rueidis's nil reply is its
// own error value.
func errWord(err error) string {
	switch {
	case err == nil:
		return "ok"
	case rueidis.IsRedisNil(err):
		return "nil"
	}
	return err.Error()
}
