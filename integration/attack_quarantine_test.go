package integration

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A lock held on masters 0-2 (3 of 5: masters 3 and 4 were down when it
// was taken); masters 0 and 1 restart empty and are quarantined. No one
// else can take the lock (a SET NX gets NOQUORUM: the quarantined
// masters may have held it), so reads must not say it is free: GET,
// PTTL, EXISTS and TYPE answer an error, never nil / -2 / 0 / none.
func TestAttackQuarantinedMastersAreNotFree(t *testing.T) {
	c := startNodes(t, 5)
	p := mustStartMonitored(t, safetyConfig(), c.addrs...)
	ctx := t.Context()
	for _, i := range []int{0, 1, 2} {
		c.direct[i].Set(ctx, "q:lock", "tokA", 1900*time.Millisecond)
	}
	for _, i := range []int{0, 1} {
		c.procs[i] = restartRedis(t, c.procs[i])
		c.direct[i] = direct(t, c.procs[i].Addr)
	}
	for _, i := range []int{0, 1} {
		waitState(t, p.Client, i, "quarantined", 5*time.Second)
	}
	cl := p.Client
	if err := cl.SetNX(ctx, "q:lock", "tokB", time.Second).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("SET NX by B = %v; want NOQUORUM (the quarantined masters may hold it)", err)
	}
	if v, err := cl.Get(ctx, "q:lock").Result(); err == nil || errors.Is(err, redis.Nil) {
		t.Errorf("GET = %q, %v; want an error, not free", v, err)
	}
	if v, err := cl.PTTL(ctx, "q:lock").Result(); err == nil {
		t.Errorf("PTTL = %v, %v; want an error, not -2", v, err)
	}
	if v, err := cl.Exists(ctx, "q:lock").Result(); err == nil {
		t.Errorf("EXISTS = %v, %v; want an error, not 0", v, err)
	}
	if v, err := cl.Type(ctx, "q:lock").Result(); err == nil {
		t.Errorf("TYPE = %v, %v; want an error, not none", v, err)
	}
	// A key no master holds is free, quarantine or not.
	if v, err := cl.Get(ctx, "q:free").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("GET of a free key = %q, %v; want nil", v, err)
	}
}
