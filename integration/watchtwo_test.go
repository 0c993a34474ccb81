package integration

import (
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// watchRace runs, on two connections to addr, the transaction
// StackExchange.Redis's LockExtend sends, interleaved: both WATCH and
// GET the key, then the first runs MULTI, body, EXEC, then the second.
// It returns every reply, in order.
func watchRace(t *testing.T, addr string, first, second []string) []string {
	t.Helper()
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	var got []string
	got = append(got, a.do("SET", "k", "tok", "NX", "PX", "10000"))
	for _, c := range []*rawConn{a, b} {
		got = append(got, c.do("WATCH", "k"), c.do("GET", "k"))
	}
	for i, c := range []*rawConn{a, b} {
		body := first
		if i == 1 {
			body = second
		}
		got = append(got, c.do("MULTI"), c.do(body...), c.do("EXEC"))
	}
	return got
}

// Two connections' WATCH k, GET k, MULTI, PEXPIRE k (or DEL k), EXEC of
// one key: the first EXEC's write fails the second, as on one Redis
// (both succeeded through the proxy). Run side by side against one real
// redis-server.
func TestWatchedKeyWrittenByAnotherConnectionAbortsExec(t *testing.T) {
	ref := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	for _, tt := range []struct {
		name          string
		first, second []string
	}{
		{"extend, then extend", []string{"PEXPIRE", "k", "20000"}, []string{"PEXPIRE", "k", "30000"}},
		{"extend, then release", []string{"PEXPIRE", "k", "20000"}, []string{"DEL", "k"}},
		{"release, then extend", []string{"DEL", "k"}, []string{"PEXPIRE", "k", "20000"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			direct(t, ref.Addr).Del(t.Context(), "k")
			p.Client.Do(t.Context(), "EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "k", "tok")
			want := watchRace(t, ref.Addr, tt.first, tt.second)
			got := watchRace(t, p.Addr, tt.first, tt.second)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("reply %d: proxy %q; one Redis %q (all: proxy %q, Redis %q)", i, got[i], want[i], got, want)
					break
				}
			}
		})
	}
}

// Two EXECs of one watched key sent at once: exactly one runs, as one
// Redis runs one and aborts the other.
func TestConcurrentExecsOfOneWatchedKeyRunOnce(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	a, b := dialRaw(t, p.Addr), dialRaw(t, p.Addr)
	for round := range 20 {
		a.do("SET", "k", "tok", "NX", "PX", "10000")
		for _, c := range []*rawConn{a, b} {
			c.do("WATCH", "k")
			c.do("GET", "k")
			c.do("MULTI")
			c.do("PEXPIRE", "k", "20000")
		}
		a.send(encodeCommand("EXEC"))
		b.send(encodeCommand("EXEC"))
		ra, rb := a.reply(), b.reply()
		if (ra == "[:1]") == (rb == "[:1]") {
			t.Fatalf("round %d: EXEC replies %q and %q; want one [:1] and one (nil)", round, ra, rb)
		}
		p.Client.Do(t.Context(), "EVAL", `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`, "1", "k", "tok")
	}
}
