package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2RedislockObtainOddTokenLengthOverAnotherHolder: redislock's
// obtain with a token length the catalogue cannot take (negative, zero),
// called while ANOTHER token holds the key, whose value it matches by
// that length (getrange(k, 0, -2) of "tokX" is "tok"). Side by side
// with one redis-server: the answer and what the key holds after, as one
// Redis's but for docs/compatibility.md's difference (-1: refused, not overwritten).
func TestAttack2RedislockObtainOddTokenLengthOverAnotherHolder(t *testing.T) {
	ref := direct(t, startRedis(t).Addr)
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	body := ""
	for _, sc := range lockScripts {
		if sc.name == "redislock obtain" {
			body = sc.body
		}
	}
	for i, tl := range []string{"-1", "0", "1.5"} {
		key := "cat2:" + string(rune('a'+i))
		ref.Do(ctx, "SET", key, "tokX", "NX", "PX", "10000")
		p.Client.Do(ctx, "SET", key, "tokX", "NX", "PX", "10000")
		want, werr := replyText(ref.Do(ctx, "EVAL", body, "1", key, "tok", tl, "5000"))
		got, gerr := replyText(p.Client.Do(ctx, "EVAL", body, "1", key, "tok", tl, "5000"))
		refV, _ := ref.Get(ctx, key).Result()
		pV, _ := p.Client.Get(ctx, key).Result()
		if tl == "-1" {
			// docs/compatibility.md's difference: one Redis overwrites another
			// token's lock; the proxy refuses and keeps it.
			if want != `"OK"` || refV != "tok" {
				t.Errorf("one Redis: %q %v (key %q); want OK and the key overwritten", want, werr, refV)
			}
			if !strings.HasPrefix(errText(gerr), "ERR script refused: it removes or overwrites another token's hold") || pV != "tokX" {
				t.Errorf("proxy: %q %v (key %q); want refused and tokX kept", got, gerr, pV)
			}
			continue
		}
		if got != want || scriptSuffix(errText(gerr)) != scriptSuffix(errText(werr)) || pV != refV {
			t.Errorf("token length %s: proxy %q %v (key %q); one Redis %q %v (key %q)", tl, got, gerr, pV, want, werr, refV)
		}
	}
}
