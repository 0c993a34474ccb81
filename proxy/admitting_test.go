package proxy

import (
	"context"
	"errors"
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
	if _, _, err := c.learn(ctx, []byte(`return redis.call("get", KEYS[1])`)); !errors.Is(err, errAdmitBusy) {
		t.Errorf("learn with every place taken = %v; want errAdmitBusy", err)
	}
	<-c.admitting
	if _, _, err := c.learn(t.Context(), []byte(`return redis.call("get", KEYS[1])`)); err != nil {
		t.Errorf("learn with a place free = %v; want admitted", err)
	}
	if len(c.admitting) != maxAdmitting-1 {
		t.Errorf("places taken after learn = %d; want %d (its own given back)", len(c.admitting), maxAdmitting-1)
	}
}
