package integration

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// shapeCalls are calls of a catalogue script that its quorum operation
// cannot take, each as (numkeys, keys and arguments after the body), from
// the key free and from the key held by the caller's token.
var shapeCalls = []struct {
	name string
	args []string
	only string // the script it is for, or "" for all
}{
	{"no key", []string{"0", "tok", "5000", "5000"}, ""},
	{"two keys (one read)", []string{"2", "k", "k2", "tok", "5000", "5000"}, ""},
	{"no arguments", []string{"1", "k"}, ""},
	{"the token only", []string{"1", "k", "tok"}, ""},
	{"a TTL that is no integer", []string{"1", "k", "tok", "5x", "5x"}, ""},
	{"a token length over the token's", []string{"1", "k", "tok", "99", "5000"}, "redislock obtain"},
	{"a negative token length", []string{"1", "k", "tok", "-1", "5000"}, "redislock obtain"},
	{"a token length that is no integer", []string{"1", "k", "tok", "x", "5000"}, "redislock obtain"},
}

// A catalogue script called in a shape its quorum operation cannot take
// is run by its effect and answered as one Redis answers it: the
// catalogue is a fast path only, no longer a refusal. Side by side with
// one real redis-server; error replies are compared up to Redis's
// " script: <sha>, on @user_script:N." suffix, which the proxy's lack
// (see "Which scripts are served").
func TestCatalogueShapesItCannotTakeRunAsOneRedis(t *testing.T) {
	ref := direct(t, startRedis(t).Addr)
	_, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	calls := shapeCalls
	for _, sc := range lockScripts {
		for _, call := range calls {
			if call.only != "" && call.only != sc.name {
				continue
			}
			for _, held := range []bool{false, true} {
				name := sc.name + ", " + call.name
				if held {
					name += ", held"
				}
				run := func(do func(args ...any) (string, error)) string {
					do("EVAL", `redis.call("del", KEYS[1], KEYS[2])`, "2", "k", "k2")
					if held {
						do("SET", "k", "tok", "NX", "PX", "10000")
					}
					args := []any{"EVAL", sc.body}
					for _, a := range call.args {
						args = append(args, a)
					}
					v, err := do(args...)
					if err != nil {
						return "error: " + scriptSuffix(errText(err))
					}
					return v
				}
				want := run(func(args ...any) (string, error) { return replyText(ref.Do(ctx, args...)) })
				got := run(func(args ...any) (string, error) {
					if s, _ := args[1].(string); s == `redis.call("del", KEYS[1], KEYS[2])` {
						// The proxy frees the keys by the owner's release.
						for _, k := range []string{"k", "k2"} {
							p.Client.Do(ctx, "EVAL", lockScripts[4].body, "1", k, "tok")
						}
						return "", nil
					}
					return replyText(p.Client.Do(ctx, args...))
				})
				if call.name == "no key" && got != want {
					// KEYS[1] is nil: one Redis's redis.call fails on it, the
					// wrapper refuses it as no key of the call; an error
					// either way, and nothing runs. (A loop over KEYS
					// answers alike: none.)
					if !strings.HasPrefix(want, "error: ERR Lua redis lib command arguments must be strings or integers") ||
						!strings.HasPrefix(got, "error: ERR script refused: a key argument of ") {
						t.Errorf("%s: proxy %q; one Redis %q", name, got, want)
					}
					continue
				}
				if got != want && !closeMsText(got, want) {
					t.Errorf("%s: proxy %q; one Redis %q", name, got, want)
				}
			}
		}
	}
}

// replyText renders a reply with its Go type, or its error.
func replyText(c *redis.Cmd) (string, error) {
	v, err := c.Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", err
	}
	return fmt.Sprintf("%#v", v), nil
}

// closeMsText: two PTTLs a script read, the proxy's node's a little
// later (see "Differences from one Redis").
func closeMsText(a, b string) bool {
	var x, y int64
	_, errA := fmt.Sscan(a, &x)
	_, errB := fmt.Sscan(b, &y)
	return errA == nil && errB == nil && closeMs(x, y)
}

// scriptSuffix drops Redis's " script: <sha>, on @user_script:N." from
// an error raised inside a script.
func scriptSuffix(s string) string {
	if i := strings.Index(s, " script: "); i >= 0 {
		return s[:i]
	}
	return s
}
