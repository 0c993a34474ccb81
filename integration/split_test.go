package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// With 2 of 5 masters down, a SET NX at the moment a holder's key
// expires finds the 3 others split: one has dropped the key, two still
// hold it for a few more milliseconds. The nodes that are down could
// have decided either way, so one try is undecided; the proxy tries once
// more a moment later and answers as one Redis would after the expiry,
// instead of NOQUORUM. The same holds for a lock script served by effect.
func TestAcquireAtAHoldersExpiryWithTwoDown(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	c.kill(3)
	c.kill(4)
	hold := func(key string) {
		c.direct[0].Del(t.Context(), key)
		for i := 1; i <= 2; i++ {
			if err := c.direct[i].Set(t.Context(), key, "other", 300*time.Millisecond).Err(); err != nil {
				t.Fatalf("SET on node %d: %v", i, err)
			}
		}
	}
	hold("k")
	start := time.Now()
	if ok, err := p.Client.SetNX(t.Context(), "k", "mine", 10*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX at the holder's expiry = %v, %v; want OK", ok, err)
	}
	t.Logf("SET NX answered OK after %v", time.Since(start))
	if holders := c.holding(t, "k", "mine"); len(holders) != 3 {
		t.Errorf("mine held on nodes %v; want the 3 up", holders)
	}

	// go-zero's acquire, served by its effect.
	hold("g")
	if v, err := goZeroLockScript.Run(t.Context(), p.Client, []string{"g"}, "mine", "10000").Result(); err != nil || v != "OK" {
		t.Fatalf("go-zero acquire at the holder's expiry = %v, %v; want OK", v, err)
	}
	if holders := c.holding(t, "g", "mine"); len(holders) != 3 {
		t.Errorf("go-zero: mine held on nodes %v; want the 3 up", holders)
	}

	// A holder that stays: split again after the pause, NOQUORUM as before.
	c.direct[0].Del(t.Context(), "s")
	for i := 1; i <= 2; i++ {
		c.direct[i].Set(t.Context(), "s", "other", time.Minute)
	}
	if err := p.Client.SetNX(t.Context(), "s", "mine", 10*time.Second).Err(); err == nil || !strings.Contains(err.Error(), "NOQUORUM") {
		t.Errorf("SET NX against a split that stays = %v; want NOQUORUM", err)
	}
	if holders := c.holding(t, "s", "mine"); len(holders) != 0 {
		t.Errorf("mine left on nodes %v after NOQUORUM; want none", holders)
	}
}
