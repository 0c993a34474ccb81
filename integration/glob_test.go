package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
)

// TestKeyPatternsMatchRedis checks acl.Match, which the users' key
// patterns use, against a real redis-server's own matcher (KEYS uses the
// same stringmatchlen as ACL key patterns): random patterns over a small
// alphabet rich in *, ?, [, ], ^, - and \, on random keys.
func TestKeyPatternsMatchRedis(t *testing.T) {
	c := direct(t, startRedis(t).Addr)
	ctx := t.Context()
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	word := func(alphabet string, max int) string {
		b := make([]byte, 1+rng.IntN(max))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	keys := map[string]bool{}
	for len(keys) < 60 {
		keys[word("ab:-]^\\*", 6)] = true
	}
	for k := range keys {
		if err := c.Set(ctx, k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 300 {
		pattern := word("ab:*?[]^-\\", 7)
		if i < 3 {
			pattern = []string{"*", "a*", "[a-b]*"}[i]
		}
		got, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for k := range keys {
			if acl.Match(pattern, []byte(k)) {
				want = append(want, k)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pattern %q: redis-server matches %q; acl.Match %q", pattern, got, want)
		}
	}
}
