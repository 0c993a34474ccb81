package integration

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack14 (fence18e, FENCE asks a quorum first; a net, held): two
// proxies over 3 masters take holds in turn, each FENCEd twice, past two
// moves of the window asked first (every 256 tokens), while a master is
// restarted EMPTY: first the one the window left behind (its counter the
// lowest, never asked), then another left behind, then one of the
// window's. Every hold's token is above every earlier one, and a
// repeated FENCE of a hold through the same proxy gives its token again
// (through the other proxy it may not, F7: counted and logged).
func TestAttack14FenceAcrossWindowMovesAndRestartsThroughTwoProxies(t *testing.T) {
	c := startNodes(t, 3)
	qcfg := safetyConfig() // max_ttl 2s
	qcfg.MinTTL = time.Second
	qcfg.NodeTimeout = 200 * time.Millisecond
	ps := []*redis.Client{mustStartMonitored(t, qcfg, c.addrs...).Client, mustStartMonitored(t, qcfg, c.addrs...).Client}
	ctx := t.Context()
	const key = "attack14:fence"
	last, n, crossed := int64(0), 0, 0
	hold := func(when string) {
		t.Helper()
		p := ps[n%2]
		token := fmt.Sprintf("holder-%d", n)
		n++
		if err := p.SetNX(ctx, key, token, 1500*time.Millisecond).Err(); err != nil {
			t.Fatalf("%s: SET NX: %v", when, err)
		}
		f, err := p.Do(ctx, "FENCE", key, token).Int64()
		if err != nil {
			t.Fatalf("%s, hold %d: FENCE: %v (a minority is lost at most)", when, n, err)
		}
		again, err := p.Do(ctx, "FENCE", key, token).Int64()
		other, oerr := ps[n%2].Do(ctx, "FENCE", key, token).Int64() // the other proxy: F7 when it differs
		p.Eval(ctx, distlockRelease, []string{key}, token)
		if err != nil || again != f {
			t.Fatalf("%s, hold %d: FENCE again through the same proxy = %d, %v; want %d", when, n, again, err, f)
		}
		if oerr == nil && other != f {
			crossed++
		}
		if f <= last {
			t.Fatalf("%s, hold %d: FENCE = %d after %d", when, n, f, last)
		}
		last = f
	}
	counter := func(i int) int64 {
		v, _ := strconv.ParseInt(c.direct[i].HGet(ctx, quorum.CountersKey, "c").Val(), 10, 64)
		return v
	}
	pick := func(lowest bool) int {
		j := 0
		for i := 1; i < 3; i++ {
			if (counter(i) < counter(j)) == lowest && counter(i) != counter(j) {
				j = i
			}
		}
		return j
	}
	restart := func(i int, upTo int) {
		t.Helper()
		t.Logf("hold %d: counters %d %d %d; master %d restarted empty", n, counter(0), counter(1), counter(2), i)
		c.procs[i] = restartRedis(t, c.procs[i])
		waitState(t, ps[0], i, "quarantined", 5*time.Second)
		for n < upTo {
			hold(fmt.Sprintf("master %d restarted", i))
		}
		waitState(t, ps[0], i, "up", 10*time.Second)
		deadline := time.Now().Add(2500 * time.Millisecond) // its counters' wait: max_ttl + drift since the mark
		for time.Now().Before(deadline) {
			hold(fmt.Sprintf("master %d up, its counters waiting", i))
		}
	}
	for n < 200 {
		hold("before the restarts")
	}
	restart(pick(true), 260)
	for n < 420 {
		hold("after the first restart")
	}
	restart(pick(true), 480)
	for n < 620 {
		hold("after the second restart")
	}
	restart(pick(false), 680)
	for n < 760 {
		hold("after the third restart")
	}
	t.Logf("%d holds, the last token %d; counters %d %d %d; %d holds got another T through the other proxy (F7)", n, last, counter(0), counter(1), counter(2), crossed)
}
