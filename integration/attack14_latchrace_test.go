package integration

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// attack14 (a net): two proxies over 3 masters; each round sets a
// latch(1) through one, two countDowns race through both (one too many),
// and a new trySetCount(1) of the same name follows at once. Each round:
// exactly one zero message (one Redis: the first DECR sends it, the
// second reads -1), the new latch set (1) and reading 1, and no zero
// message for it. Every third round first checks that the opened latch
// kept its claim slot tag on every master (the seed's evidence: review27,
// no reclaim).
func TestAttack14LatchCountDownsThenANewSetThroughTwoProxies(t *testing.T) {
	c := startNodes(t, 3)
	p1 := startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...)
	p2 := startProxy(t, latchConfig(), latchEngineConfig(time.Minute), c.addrs...)
	for round := range 30 {
		name := fmt.Sprintf("latch:attack14:race%d", round)
		l1, l2 := newLatchClient(p1.Client, name), newLatchClient(p2.Client, name)
		sub := l1.subscribe(t)
		var mu sync.Mutex
		var got []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for m := range sub.Channel() {
				mu.Lock()
				got = append(got, m.Payload)
				mu.Unlock()
			}
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			v, err := l1.trySetCount(t, 1)
			if v == 1 && err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: trySetCount(1) = %d, %v", round, v, err)
			}
		}
		var wg sync.WaitGroup
		for _, l := range []latchClient{l1, l2} {
			wg.Go(func() {
				if err := l.countDown(t); err != nil {
					t.Errorf("round %d: countDown: %v", round, err)
				}
			})
		}
		wg.Wait()
		if round%3 == 0 { // an opened latch keeps its claim slot until delete
			for i, d := range c.direct {
				if n, _ := d.HExists(t.Context(), quorum.CountersKey, "o:"+name).Result(); !n {
					t.Errorf("round %d: master %d has no claim slot tag of the opened latch; want the set's (the seed's evidence)", round, i)
				}
			}
		}
		setter := []latchClient{l2, l1}[round%2]
		if v, err := setter.trySetCount(t, 1); v != 1 || err != nil {
			t.Fatalf("round %d: the new latch's trySetCount(1) = %d, %v; want 1 (the old one opened)", round, v, err)
		}
		if v, err := l1.getCount(t); v != 1 || err != nil {
			t.Fatalf("round %d: the new latch's getCount = %d, %v; want 1", round, v, err)
		}
		time.Sleep(150 * time.Millisecond)
		sub.Close()
		<-done
		mu.Lock()
		zeros := 0
		for _, m := range got {
			if m == "0" {
				zeros++
			}
		}
		if zeros != 1 {
			t.Errorf("round %d: messages %q: %d zero messages for one latch(1) and its new latch (one Redis: 1)", round, got, zeros)
		}
		mu.Unlock()
	}
}
