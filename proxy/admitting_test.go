package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Admissions run maxAdmitting at a time: one that finds every place taken
// waits, and is answered an error when its command's time runs out.
func TestAdmissionsWaitForAPlace(t *testing.T) {
	c := newScriptCache(func(string, []string) *quorum.Effect { return &quorum.Effect{} })
	for range maxAdmitting {
		c.admitting <- struct{}{}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, rep, ok := c.learn(ctx, []byte(`return redis.call("get", KEYS[1])`))
	if ok || !strings.Contains(rep.Text(), "busy admitting other scripts") {
		t.Errorf("learn with every place taken = %q, %v; want the busy refusal", rep.Text(), ok)
	}
	<-c.admitting
	if _, _, rep, ok := c.learn(t.Context(), []byte(`return redis.call("get", KEYS[1])`)); !ok {
		t.Errorf("learn with a place free = %q; want admitted", rep.Text())
	}
	if len(c.admitting) != maxAdmitting-1 {
		t.Errorf("places taken after learn = %d; want %d (its own given back)", len(c.admitting), maxAdmitting-1)
	}
}
