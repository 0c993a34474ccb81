package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2ScanUnavailableIsAnError: a lock a quorum holds (masters 0
// and 1; master 2 missed its SET), then masters 0 and 1 down: a SCAN
// through the proxy walks only master 2, which has no such key. It must
// be an error naming how many answered, not a silent empty list (one
// Redis holding the lock would list it).
func TestAttack2ScanUnavailableIsAnError(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	for _, i := range []int{0, 1} {
		if err := c.direct[i].Set(ctx, "scan2:k", "tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if keys := scanAll(t, p.Client, "scan2:*", 100, nil); len(keys) != 1 || keys[0] != "scan2:k" {
		t.Fatalf("SCAN with every master up = %v; want [scan2:k]", keys)
	}
	c.kill(0)
	c.kill(1)
	var keys []string
	var err error
	for cur := uint64(0); ; {
		var ks []string
		ks, cur, err = p.Client.Scan(ctx, cur, "scan2:*", 100).Result()
		keys = append(keys, ks...)
		if err != nil || cur == 0 {
			break
		}
	}
	if err == nil || !strings.HasPrefix(err.Error(), "NOQUORUM") || !strings.Contains(err.Error(), "of 3 nodes") {
		t.Errorf("SCAN with two of three down = %v, %v; want a NOQUORUM error naming how many answered", keys, err)
	}
}
