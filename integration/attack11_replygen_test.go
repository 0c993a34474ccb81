package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11ReplyExpr is a random Lua reply expression of depth at most d:
// every shape script_lua.c converts (error and status tables, doubles,
// big numbers, verbatim strings, maps, sets, arrays with holes, numbers,
// strings with CR, LF and NUL, booleans, nil), nested.
func attack11ReplyExpr(r *rand.Rand, d int) string {
	str := func() string {
		parts := []string{"a", "\\r", "\\n", "\\0", " ", "-", ":", "OK", "x\\r\\ny", "1", ""}
		var b strings.Builder
		for range r.IntN(4) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		return `"` + b.String() + `"`
	}
	num := func() string {
		nums := []string{"0", "1", "-1", "3.5", "-2.5", "1e14", "99999999999999", "2^53", "2^63", "-2^63", "1/0", "-1/0", "0/0", "-0.0", "1e300", "1/3"}
		return nums[r.IntN(len(nums))]
	}
	k := r.IntN(14)
	if d <= 0 && k >= 6 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return num()
	case 1:
		return str()
	case 2:
		return []string{"true", "false", "nil", "cjson.null"}[r.IntN(4)]
	case 3:
		return "{err=" + str() + "}"
	case 4:
		return "{ok=" + str() + "}"
	case 5:
		return "{double=" + num() + "}"
	case 6:
		return "{big_number=" + str() + "}"
	case 7:
		return "{verbatim_string={format=" + str() + ", string=" + str() + "}}"
	case 8, 9:
		var items []string
		for range r.IntN(4) {
			items = append(items, "["+fmt.Sprint(r.IntN(3)+1)+"]="+attack11ReplyExpr(r, d-1))
		}
		items = append(items, "k="+attack11ReplyExpr(r, d-1))
		return "{map={" + strings.Join(items, ", ") + "}}"
	case 10:
		var items []string
		for range r.IntN(4) {
			items = append(items, "["+str()+"]=true")
		}
		return "{set={" + strings.Join(items, ", ") + "}}"
	default:
		var items []string
		for range r.IntN(5) {
			items = append(items, attack11ReplyExpr(r, d-1))
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
}

// TestAttack11RandomScriptRepliesAsOneRedis runs random reply
// expressions (fixed seed) side by side with one redis-server 7.0, byte
// for byte, both protocols, as a read and as a take.
func TestAttack11RandomScriptRepliesAsOneRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	r := rand.New(rand.NewPCG(attack11GenSeed, 11))
	fails := 0
	for _, proto := range []int{2, 3} {
		rc := dialRawPeer(t, one.Addr, proto)
		pc := dialRawPeer(t, p.Addr, proto)
		for i := range attack11GenN {
			e := "return " + attack11ReplyExpr(r, 3)
			key := fmt.Sprintf("attack11:gen:%d:%d", proto, i)
			args := []string{"EVAL", "local v = redis.call('get', KEYS[1]) " + e, "1", key}
			if i%2 == 1 {
				args = []string{"EVAL", "redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 10000) " + e, "1", key, "tok"}
			}
			want, err := rc.do(args...)
			if err != nil {
				t.Fatalf("one Redis, %s: %v (%q)", e, err, want)
			}
			got, err := pc.do(args...)
			if err != nil {
				t.Fatalf("proxy, %s: %v", e, err)
			}
			if got != want && fails < 10 {
				fails++
				t.Errorf("RESP%d %s:\n proxy    %q\n one Redis %q", proto, args[1], got, want)
			}
		}
	}
}

var attack11GenN, attack11GenSeed = 300, uint64(11)
