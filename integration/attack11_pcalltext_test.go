package integration

import (
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 R5 (LOW, Redis fidelity): a script that catches a Lua error
// with pcall and returns its text. Lua writes the chunk's name and line
// into the text; one Redis names the chunk "user_script" and counts the
// client's lines. Through the proxy the body runs in the wrapper's
// library, whose chunk was named "user_function" (renamed in error
// replies only, not in a value the script returns); it is now named as
// Redis names it. Side by side with one redis-server 7.0, as a read.
func TestAttack11CaughtErrorTextAsRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	rc := dialRawPeer(t, one.Addr, 2)
	pc := dialRawPeer(t, p.Addr, 2)
	for _, body := range []string{
		"local v = redis.call('get', KEYS[1])\nlocal ok, e = pcall(function() error(\"s\") end)\nreturn e",
		"local v = redis.call('get', KEYS[1])\n\n\nlocal ok, e = pcall(function() error(\"s\") end)\nreturn {ok, e}",
	} {
		want, err := rc.do("EVAL", body, "1", "attack11:r5")
		if err != nil {
			t.Fatalf("one Redis: %v", err)
		}
		got, err := pc.do("EVAL", body, "1", "attack11:r5")
		if err != nil {
			t.Fatalf("proxy: %v", err)
		}
		if got != want {
			t.Errorf("%q: proxy %q; one Redis (7.0) %q", body, got, want)
		}
	}
}
