package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack11 C3 (76820e5's neighbour): CLIENT LIST's options, side by side
// with one redis-server 7.0. Redis takes TYPE only as the one option
// (argc 4) and ID with any integers (0 and negatives match no client:
// an empty list); anything else is a syntax error. The proxy takes TYPE
// and ID together, and refuses ID 0 or -1 as "Invalid client ID".
// Only the reply's type, and an error's text, are compared (the lists
// differ by nature).
func TestAttack11ClientListOptionsAsRedis(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	rc := dialRawPeer(t, one.Addr, 2)
	pc := dialRawPeer(t, p.Addr, 2)
	shape := func(s string) string {
		if strings.HasPrefix(s, "-") {
			return s
		}
		return s[:1]
	}
	for _, args := range [][]string{
		{"CLIENT", "LIST", "TYPE", "normal", "ID", "1"}, // Redis: -ERR syntax error
		{"CLIENT", "LIST", "ID", "1", "TYPE", "normal"}, // Redis: -ERR Invalid client ID (TYPE is no integer)
		{"CLIENT", "LIST", "ID", "0"},                   // Redis: an empty list
		{"CLIENT", "LIST", "ID", "-1"},                  // Redis: an empty list
	} {
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("one Redis %v: %v", args, err)
		}
		got, err := pc.do(args...)
		if err != nil {
			t.Fatalf("proxy %v: %v", args, err)
		}
		if shape(got) != shape(want) {
			t.Errorf("%s: proxy %q; one Redis (7.0) %q", strings.Join(args, " "), got, want)
		}
	}
}

// attack11 C4 (the C3 fix's neighbour): CLIENT LIST ID and CLIENT KILL ID
// read their ids by Redis's integer rule (string2ll: no sign "+", no
// leading zero, no "-0"); the proxy takes what strconv.ParseInt takes.
// One Redis: "CLIENT LIST ID +5" is "-ERR Invalid client ID", "CLIENT
// KILL ID 0999999" is "-ERR client-id should be greater than 0"; the
// proxy answers an empty list and 0.
func TestAttack11ClientIDsTakeRedisIntegersOnly(t *testing.T) {
	one := startRedis(t)
	_, p := setup(t, 3, proxy.Config{})
	rc := dialRawPeer(t, one.Addr, 2)
	pc := dialRawPeer(t, p.Addr, 2)
	for _, args := range [][]string{
		{"CLIENT", "LIST", "ID", "+5"},
		{"CLIENT", "LIST", "ID", "05"},
		{"CLIENT", "LIST", "ID", "-0"},
		{"CLIENT", "KILL", "ID", "+999999"},
		{"CLIENT", "KILL", "ID", "0999999"},
	} {
		want, err := rc.do(args...)
		if err != nil {
			t.Fatalf("one Redis %v: %v", args, err)
		}
		got, err := pc.do(args...)
		if err != nil {
			t.Fatalf("proxy %v: %v", args, err)
		}
		if got != want {
			t.Errorf("%s: proxy %q; one Redis (7.0) %q", strings.Join(args, " "), got, want)
		}
	}
}
