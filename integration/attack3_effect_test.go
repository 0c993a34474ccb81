package integration

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestEffectTokenPastArgv1023IsServed: a script served by effect whose
// token is its 1100th argument (max_args raised) and whose reply is an
// array takes the lock as one Redis does: [1], then [0] for a second
// caller, the key held on every master. The wrapper reports such a key field by field (its place among the own
// tokens does not fit the one-number form); that form must carry the
// marker count the decoder reads after the holders.
func TestEffectTokenPastArgv1023IsServed(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{Limits: proxy.Limits{MaxArgs: 2048}}) // max_args raised, as config.toml allows
	ctx := t.Context()
	// No catalogue shape: served by effect, and its reply an array.
	const body = `if redis.call("set", KEYS[1], ARGV[#ARGV], "NX", "PX", ARGV[1]) then return {1} end
return {0}`
	args := func(token string) []any {
		a := []any{"30000"}
		for i := 2; i < 1100; i++ {
			a = append(a, "pad"+strconv.Itoa(i))
		}
		return append(a, token)
	}
	v, err := p.Client.Eval(ctx, body, []string{"big:k"}, args("tok-a")...).Result()
	if err != nil || fmt.Sprint(v) != "[1]" {
		t.Fatalf("EVAL with the token as ARGV[1100] = %v, %v; want [1] (as one Redis)", v, err)
	}
	if v, err := p.Client.Eval(ctx, body, []string{"big:k"}, args("tok-b")...).Result(); err != nil || fmt.Sprint(v) != "[0]" {
		t.Errorf("a second caller's EVAL = %v, %v; want [0] (held)", v, err)
	}
	c.wantHeldEverywhere(t, "big:k", "tok-a", 30*time.Second)
}
