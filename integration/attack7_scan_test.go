package integration

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack7 B5 (what 0ccf096 left of attack6 A6). A SCAN cursor now names
// nodes by their place among the addresses sorted, with four bits of a
// hash of the list, and a cursor of another list is refused. Four bits
// let one list in 16 pass for another: two proxies naming the same
// masters by other spellings (attack4 A1's and attack6 A8's premise:
// nothing makes proxies spell the masters alike) whose lists share those
// bits sort them in another order, read each other's cursors as other
// nodes, and a scan through both ends without keys a quorum holds, with
// no error. The test picks, among spellings of 127.0.0.1, a second list
// whose four bits equal the first's and whose order differs. Fixed since
// by sorting the addresses in one spelling of their IPs (and 8 bits).
func TestAttack7ScanCursorThroughProxiesWhoseListsShareTheHashBits(t *testing.T) {
	c := startNodes(t, 3)
	ports := make([]string, 3)
	for i, a := range c.addrs {
		ports[i] = a[strings.LastIndex(a, ":")+1:]
	}
	hosts := []string{"127.0.0.1", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0::ffff:127.0.0.1]", "[0:0::ffff:7f00:1]", "[0:0:0:0:0:ffff:127.0.0.1]"}
	list := func(h [3]string) []string {
		return []string{h[0] + ":" + ports[0], h[1] + ":" + ports[1], h[2] + ":" + ports[2]}
	}
	first := list([3]string{hosts[0], hosts[0], hosts[0]})
	var second []string
	for _, a := range hosts {
		for _, b := range hosts {
			for _, d := range hosts {
				l := list([3]string{a, b, d})
				if second == nil && listBits(l) == listBits(first) && !slices.Equal(sortedPlaces(l), sortedPlaces(first)) {
					second = l
				}
			}
		}
	}
	if second == nil {
		t.Fatalf("no spelling of %v shares its list bits in another order (216 tried)", first)
	}
	t.Logf("P1 %v, P2 %v: list bits %d", first, second, listBits(first))
	cfg := proxy.Config{CommandTimeout: commandTimeout}
	p1 := startProxy(t, cfg, engineConfig(), first...)
	p2 := startProxy(t, cfg, engineConfig(), second...)
	ctx := t.Context()
	const n = 60
	for i := range n {
		k := fmt.Sprintf("k%02d", i)
		if err := p1.Client.SetNX(ctx, k, "t", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.direct[i%3].Del(ctx, k).Err(); err != nil { // held on the other two
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	var cur uint64
	for call := 0; ; call++ {
		cl := []*redis.Client{p1.Client, p2.Client}[call%2]
		keys, next, err := cl.Scan(ctx, cur, "", 5).Result()
		if err != nil {
			t.Logf("SCAN %d (call %d): %v (a refusal: the lists told apart)", cur, call, err)
			return
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cur = next; cur == 0 || call > 1000 {
			break
		}
	}
	if len(seen) != n {
		t.Errorf("a SCAN through two proxies naming the same masters otherwise (%v, %v) found %d of the %d keys a quorum holds, with no error", first, second, len(seen), n)
	}
}

// listBits is the four bits of a node list's hash a SCAN cursor carries
// (quorum/scan.go scanOrder: fnv-1a of the sorted addresses, each ended
// by a zero byte).
func listBits(addrs []string) uint8 {
	s := slices.Sorted(slices.Values(addrs))
	h := fnv.New32a()
	for _, a := range s {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	return uint8(h.Sum32() & 0xf)
}

// sortedPlaces is the configuration index of the node at each place.
func sortedPlaces(addrs []string) []int {
	order := []int{0, 1, 2}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(addrs[a], addrs[b]) })
	return order
}
