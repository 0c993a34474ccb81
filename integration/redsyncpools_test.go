package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/redigo"
	redsyncrueidis "github.com/go-redsync/redsync/v4/redis/rueidis"
	redigoredis "github.com/gomodule/redigo/redis"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidiscompat"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// redsync over its other client pools, side by side with one
// redis-server: redigo (RESP2, its Script's EVALSHA with EVAL on
// NOSCRIPT) and rueidis (RESP3, with DisableCache; see
// TestRueidisSideBySide). The same story must come out of both.
func TestRedsyncPoolsSideBySide(t *testing.T) {
	ref := startRedis(t)
	_, p := setup(t, 5, proxy.Config{})
	for _, pool := range []struct {
		name string
		open func(t *testing.T, addr string) redsyncredis.Pool
	}{
		{"redigo", func(t *testing.T, addr string) redsyncredis.Pool {
			rp := &redigoredis.Pool{MaxIdle: 4, Dial: func() (redigoredis.Conn, error) {
				return redigoredis.Dial("tcp", addr, redigoredis.DialConnectTimeout(5*time.Second),
					redigoredis.DialReadTimeout(5*time.Second), redigoredis.DialWriteTimeout(5*time.Second))
			}}
			t.Cleanup(func() { rp.Close() })
			return redigo.NewPool(rp)
		}},
		{"rueidis", func(t *testing.T, addr string) redsyncredis.Pool {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
			if err != nil {
				t.Fatalf("rueidis.NewClient(%s): %v", addr, err)
			}
			t.Cleanup(c.Close)
			return redsyncrueidis.NewPool(rueidiscompat.NewAdapter(c))
		}},
	} {
		t.Run(pool.name, func(t *testing.T) {
			want := redsyncStory(t, pool.open(t, ref.Addr))
			got := redsyncStory(t, pool.open(t, p.Addr))
			t.Logf("against redis-server:\n%s", strings.Join(want, "\n"))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("through the proxy:\n%s\nagainst redis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// redsyncStory runs a redsync mutex's life over pool and returns what
// each step saw, in words that do not depend on timing.
func redsyncStory(t *testing.T, pool redsyncredis.Pool) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rs := redsync.New(pool)
	var story []string
	say := func(step string, v any) { story = append(story, fmt.Sprintf("%s: %v", step, v)) }
	kind := func(err error) string {
		var taken *redsync.ErrTaken
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &taken):
			return "ErrTaken"
		case errors.Is(err, redsync.ErrFailed):
			return "ErrFailed"
		case errors.Is(err, redsync.ErrLockAlreadyExpired):
			return "ErrLockAlreadyExpired"
		}
		return err.Error()
	}

	m := rs.NewMutex("rsp-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	say("Lock", kind(m.LockContext(ctx)))
	say("Until within the expiry", m.Until().After(time.Now()) && time.Until(m.Until()) <= 5*time.Second)
	ok, err := m.ExtendContext(ctx)
	say("Extend", fmt.Sprint(ok, " ", kind(err)))
	m2 := rs.NewMutex("rsp-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
	say("contended TryLock", kind(m2.TryLockContext(ctx)))
	ok, err = m2.UnlockContext(ctx)
	say("Unlock by a non-holder", fmt.Sprint(ok, " ", kind(err)))
	ok, err = m.UnlockContext(ctx)
	say("Unlock", fmt.Sprint(ok, " ", kind(err)))
	ok, err = m.UnlockContext(ctx)
	say("stale Unlock", fmt.Sprint(ok, " ", kind(err)))
	ok, err = m.ExtendContext(ctx)
	say("Extend after Unlock", fmt.Sprint(ok, " ", kind(err)))

	// A retrying Lock wins once the holder unlocks.
	say("TryLock", kind(m2.TryLockContext(ctx)))
	w := rs.NewMutex("rsp-lock", redsync.WithExpiry(5*time.Second), redsync.WithTries(500), redsync.WithRetryDelay(10*time.Millisecond))
	done := make(chan error, 1)
	go func() { done <- w.LockContext(ctx) }()
	time.Sleep(100 * time.Millisecond)
	ok, err = m2.UnlockContext(ctx)
	say("Unlock while another waits", fmt.Sprint(ok, " ", kind(err)))
	say("the waiter's Lock", kind(<-done))
	ok, err = w.UnlockContext(ctx)
	say("the waiter's Unlock", fmt.Sprint(ok, " ", kind(err)))
	return story
}
