package integration

import (
	"strconv"
	"sync"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack8 C1: CLIENT KILL reads a listing's killed mark and sets it under
// two separate locks (9fb213a): two CLIENT KILL ID of one client at once
// can both see it alive and both answer 1. One Redis kills a client once.
// (A race: it fails in most runs of 5000 tries, not every one.)
func TestAttack8ConcurrentClientKillCountsOnce(t *testing.T) {
	_, p := setup(t, 1, proxy.Config{})
	k1, k2 := dialResp(t, p.Addr), dialResp(t, p.Addr)
	for i := range 5000 {
		victim := dialResp(t, p.Addr)
		v, err := victim.do(cmdOf("CLIENT", "ID"))
		if err != nil {
			t.Fatal(err)
		}
		id := v.text
		var wg sync.WaitGroup
		var got [2]int64
		for n, k := range []*respConn{k1, k2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := k.do(cmdOf("CLIENT", "KILL", "ID", id))
				if err == nil {
					got[n], _ = strconv.ParseInt(v.text, 10, 64)
				}
			}()
		}
		wg.Wait()
		if got[0]+got[1] != 1 {
			t.Fatalf("run %d: two CLIENT KILL ID %s at once answered %d and %d; one Redis kills it once (1 and 0)", i, id, got[0], got[1])
		}
		victim.c.Close()
	}
}
