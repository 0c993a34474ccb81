package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// attack9 C2: CLIENT KILL TYPE and CLIENT LIST TYPE know only "normal",
// and count a subscribed connection as one. In Redis a connection that
// holds a subscription is of type pubsub (getClientType): TYPE normal
// neither lists nor kills it, and TYPE pubsub (also master, replica,
// slave) is a valid filter. So a runbook's "CLIENT KILL TYPE normal"
// through the proxy also closes every client's pub/sub connection
// (Redisson's unlock notifications), and "CLIENT KILL TYPE pubsub" is an
// error. Each step runs against the proxy and one redis-server 7.0.
func TestAttack9ClientKillTypeKnowsSubscribers(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	r := startRedis(t)
	for _, srv := range []struct{ name, addr string }{{"redis", r.Addr}, {"proxy", p.Addr}} {
		sub, admin := dialResp(t, srv.addr), dialResp(t, srv.addr)
		if _, err := sub.do(cmdOf("SUBSCRIBE", "attack9:chan")); err != nil {
			t.Fatal(err)
		}
		v, err := admin.do(cmdOf("CLIENT", "KILL", "TYPE", "normal"))
		if err != nil || v.text != "0" {
			t.Errorf("%s: CLIENT KILL TYPE normal beside one subscriber answered %v %v; one Redis answers 0 (a subscriber is of type pubsub)", srv.name, v, err)
		}
		v, err = admin.do(cmdOf("CLIENT", "LIST", "TYPE", "pubsub"))
		if err != nil || strings.Count(v.text, "id=") != 1 {
			t.Errorf("%s: CLIENT LIST TYPE pubsub answered %v %v; one Redis lists the subscriber", srv.name, v, err)
		}
		v, err = admin.do(cmdOf("CLIENT", "KILL", "TYPE", "pubsub"))
		if err != nil || v.text != "1" {
			t.Errorf("%s: CLIENT KILL TYPE pubsub answered %v %v; one Redis answers 1", srv.name, v, err)
		}
		v, err = admin.do(cmdOf("CLIENT", "KILL", "TYPE", "master"))
		if err != nil || v.text != "0" {
			t.Errorf("%s: CLIENT KILL TYPE master answered %v %v; one Redis answers 0", srv.name, v, err)
		}
		v, err = admin.do(cmdOf("CLIENT", "KILL", "USER", "nosuchuser"))
		if err != nil || v.text != "ERR No such user 'nosuchuser'" {
			t.Errorf("%s: CLIENT KILL USER nosuchuser answered %v %v; one Redis answers ERR No such user 'nosuchuser'", srv.name, v, err)
		}
	}
}
