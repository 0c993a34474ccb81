package integration

import (
	"fmt"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 R3 (1ebfea5's neighbours): a script's status and error
// replies, side by side with one redis-server 7.0. Redis maps CR and LF
// in a status ({ok=...}, redis.status_reply) to spaces and trims nothing;
// in an error it trims CR and LF at the end only (the leading "-" stops
// the trim at the front); both stop at a NUL (sdsnew of the C string).
// The proxy's resp.Status and resp.Error (oneLine) trim line breaks at
// both ends, and keep a NUL and what follows. Each script is run with no
// key, as a take and as a read of a key.
func TestAttack11ScriptStatusAndErrorTextAsRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	exprs := []string{
		`return {ok="\nb"}`,      // Redis "+ b"
		`return {ok="a\nb\n"}`,   // Redis "+a b "
		`return {ok="\r"}`,       // Redis "+ "
		`return {err="\r\nfoo"}`, // Redis "-  foo"
		`return {1, {ok="\nz"}}`, // nested: Redis "+ z"
		`return {ok="a\0b"}`,     // Redis "+a"
		`return {err="a\0b"}`,    // Redis "-a"
		`return redis.status_reply("a\0b")`,
	}
	for _, proto := range []int{2, 3} {
		rc := dialRawPeer(t, one.Addr, proto)
		pc := dialRawPeer(t, p.Addr, proto)
		for i, e := range exprs {
			for _, form := range []string{"nokey", "take", "read"} {
				key := fmt.Sprintf("attack11:r3:%d:%d:%s", proto, i, form)
				args := []string{"EVAL", e, "0"}
				switch form {
				case "take":
					args = []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) " + e, "1", key, "tok" + key}
				case "read":
					args = []string{"EVAL", "local v = redis.call('get', KEYS[1]) " + e, "1", key}
				}
				want, err := rc.do(args...)
				if err != nil {
					t.Fatalf("one Redis, %s: %v", e, err)
				}
				got, err := pc.do(args...)
				if err != nil {
					t.Fatalf("proxy, %s: %v", e, err)
				}
				if got != want {
					t.Errorf("RESP%d %s %s: proxy %q; one Redis (7.0) %q", proto, form, e, got, want)
				}
			}
		}
	}
}
