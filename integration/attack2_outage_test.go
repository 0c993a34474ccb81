package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2ReadsDuringAnOutageAreErrors: locks a quorum holds (masters
// 0 and 1; master 2 missed each write: a string, a Redisson hash, a
// semaphore's zset), then masters 0 and 1 down. Every read and
// compare-and-set through the proxy must be an error naming how many
// answered, never the silent nil / 0 / none / empty of master 2 alone.
func TestAttack2ReadsDuringAnOutageAreErrors(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	ctx := t.Context()
	for _, i := range []int{0, 1} {
		d := c.direct[i]
		if err := d.Set(ctx, "out2:s", "tok", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		d.HSet(ctx, "out2:h", "owner:1", 1)
		d.PExpire(ctx, "out2:h", 30*time.Second)
		d.Do(ctx, "ZADD", "out2:z", time.Now().Add(30*time.Second).UnixMilli(), "holder1")
		d.PExpire(ctx, "out2:z", 30*time.Second)
	}
	c.kill(0)
	c.kill(1)
	for _, cmd := range [][]any{
		{"GET", "out2:s"}, {"EXISTS", "out2:s"}, {"PTTL", "out2:s"}, {"TTL", "out2:s"}, {"TYPE", "out2:s"},
		{"STRLEN", "out2:s"}, {"DIGEST", "out2:s"}, {"OBJECT", "ENCODING", "out2:s"},
		{"DELIFEQ", "out2:s", "tok"}, {"DELEX", "out2:s", "IFEQ", "tok"}, {"SET", "out2:s", "tok", "IFEQ", "tok", "PX", "10000"},
		{"SET", "out2:s", "other", "IFEQ", "other", "PX", "10000", "GET"},
		{"TYPE", "out2:h"}, {"HGETALL", "out2:h"}, {"HGET", "out2:h", "owner:1"}, {"HLEN", "out2:h"},
		{"TYPE", "out2:z"}, {"ZRANGE", "out2:z", "0", "-1"}, {"ZCARD", "out2:z"},
		{"DBSIZE"},
	} {
		v, err := p.Client.Do(ctx, cmd...).Result()
		if err == nil || !strings.Contains(err.Error(), "of 3 nodes") {
			t.Errorf("%v with masters 0 and 1 down = %v, %v; want an error naming how many answered", cmd, fmt.Sprint(v), err)
		}
	}
}
