package integration

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// redsyncTouchWithSetNX is redsync v4.18.1's extend with SetNXOnExtend
// (the catalogue's "redsync touchWithSetNX"), byte for byte.
const redsyncTouchWithSetNX = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n"

// TestDrainRefusesNewLocksOfExtendOrAcquire: while draining, new locks
// are refused (SET NX, the catalogue's acquires, and effect scripts,
// whose new lock is given back); redsync's touch-or-SETNX extend of a
// free key is a new lock too, and must get DRAINING with nothing left on
// the masters, while its extend of a lock held before the drain is served.
func TestDrainRefusesNewLocksOfExtendOrAcquire(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	touch := redis.NewScript(redsyncTouchWithSetNX)
	if n, err := touch.Run(ctx, p.Client, []string{"held"}, "tok-held", 30000).Int(); err != nil || n != 1 {
		t.Fatalf("touch-or-SETNX before the drain = %d, %v; want 1 (taken)", n, err)
	}
	p.Server.Drain()
	v, err := touch.Run(ctx, p.Client, []string{"new"}, "tok-new", 30000).Result()
	if err == nil || !strings.HasPrefix(err.Error(), "DRAINING ") {
		t.Errorf("touch-or-SETNX of a free key while draining = %v, %v; want DRAINING", v, err)
	}
	c.wantFreeEverywhere(t, "new")
	if n, err := touch.Run(ctx, p.Client, []string{"held"}, "tok-held", 30000).Int(); err != nil || n != 1 {
		t.Errorf("touch-or-SETNX of a lock held before the drain = %d, %v; want 1 (an extend, served)", n, err)
	}
}
