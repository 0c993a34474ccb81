package integration

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/testpki"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// tlsProxy is a proxy over three real masters serving a plain and a TLS
// port at once.
type tlsProxy struct {
	plain, tls string // addresses
	certs      *tlsfiles.Server
	ca         *testpki.CA
	client     testpki.Pair // a client certificate signed by ca
	// certFile and keyFile are the files the proxy serves from: install
	// copies another certificate there.
	certFile, keyFile string
	cluster           *cluster
}

// startTLSProxy serves cfg over three new masters on a plain and a TLS
// loopback port; auth is tls_auth_clients.
func startTLSProxy(t *testing.T, cfg proxy.Config, auth string) *tlsProxy {
	t.Helper()
	ca := testpki.NewCA(t, "proxy-ca")
	tp := &tlsProxy{ca: ca, client: ca.Issue(t, "client"), cluster: startNodes(t, 3)}
	dir := t.TempDir()
	tp.certFile, tp.keyFile = filepath.Join(dir, "proxy.pem"), filepath.Join(dir, "proxy-key.pem")
	tp.install(t, ca.Issue(t, "proxy-first", "127.0.0.1"))
	var err error
	tp.certs, err = tlsfiles.NewServer(tlsfiles.ServerConfig{CertFile: tp.certFile, KeyFile: tp.keyFile, CAFile: ca.CertFile, AuthClients: tlsfiles.ClientAuth(auth)})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CommandTimeout == 0 {
		cfg.CommandTimeout = commandTimeout
	}
	e := newEngine(t, engineConfig(), tp.cluster.addrs...)
	serveProxyOn(t, cfg, e, proxy.JoinListeners(plain, tls.NewListener(secure, tp.certs.Config())))
	tp.plain, tp.tls = plain.Addr().String(), secure.Addr().String()
	return tp
}

// install copies p's files over the ones the proxy serves from.
func (tp *tlsProxy) install(t *testing.T, p testpki.Pair) {
	t.Helper()
	for from, to := range map[string]string{p.CertFile: tp.certFile, p.KeyFile: tp.keyFile} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// clientTLS is a go-redis TLS config trusting the proxy's CA, with the
// client certificate if withCert.
func (tp *tlsProxy) clientTLS(t *testing.T, withCert bool) *tls.Config {
	t.Helper()
	cc := tlsfiles.ClientConfig{CAFile: tp.ca.CertFile, ServerName: "127.0.0.1"}
	if withCert {
		cc.CertFile, cc.KeyFile = tp.client.CertFile, tp.client.KeyFile
	}
	c, err := tlsfiles.Client(cc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var tlsUsers = []acl.UserConfig{
	{Name: "app", Password: "app-pw", Allow: []string{"lock", "read"}, Keys: []string{"orders:*"}},
	{Name: "reader", Password: "reader-pw", Allow: []string{"read"}},
}

// TestClientTLSWithUsers: go-redis, redis-cli and redis-py lock through
// the proxy's TLS port with a client certificate (tls_auth_clients yes)
// and a named user; without a certificate the handshake is refused; the
// user's NOPERM and WRONGPASS replies arrive as errors.
func TestClientTLSWithUsers(t *testing.T) {
	tp := startTLSProxy(t, proxy.Config{Users: tlsUsers}, "yes")
	ctx := t.Context()

	app := newClient(t, tp.tls, func(o *redis.Options) {
		o.TLSConfig, o.Username, o.Password = tp.clientTLS(t, true), "app", "app-pw"
	})
	if ok, err := app.SetNX(ctx, "orders:1", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("go-redis over TLS as app: SET NX = %v, %v; want OK", ok, err)
	}
	if v, err := app.Get(ctx, "orders:1").Result(); err != nil || v != "tok" {
		t.Errorf("GET orders:1 = %q, %v; want tok", v, err)
	}
	if err := app.Get(ctx, "invoices:1").Err(); errText(err) != "NOPERM this user has no permissions to access one of the keys used as arguments" {
		t.Errorf("GET invoices:1 as app = %v; want the key NOPERM", err)
	}
	if err := app.Del(ctx, "orders:1").Err(); errText(err) != "NOPERM this user has no permissions to run the 'del' command" {
		t.Errorf("DEL as app = %v; want the command NOPERM", err)
	}
	if got, err := app.Eval(ctx, distlockRelease, []string{"orders:1"}, "tok").Int(); err != nil || got != 1 {
		t.Errorf("release as app = %d, %v; want 1", got, err)
	}
	tp.cluster.wantFreeEverywhere(t, "orders:1")

	// HELLO 3 AUTH (go-redis's first try with Protocol 3), then whatever
	// the proxy's RESP version answer makes it fall back to.
	resp3 := newClient(t, tp.tls, func(o *redis.Options) {
		o.TLSConfig, o.Username, o.Password, o.Protocol = tp.clientTLS(t, true), "reader", "reader-pw", 3
	})
	if err := resp3.Get(ctx, "anything").Err(); err != redis.Nil {
		t.Errorf("GET as reader with Protocol 3 = %v; want redis.Nil", err)
	}
	if err := resp3.SetNX(ctx, "orders:2", "tok", time.Second).Err(); errText(err) != "NOPERM this user has no permissions to run the 'set' command" {
		t.Errorf("SET as reader = %v; want the command NOPERM", err)
	}

	wrong := newClient(t, tp.tls, func(o *redis.Options) {
		o.TLSConfig, o.Username, o.Password = tp.clientTLS(t, true), "app", "reader-pw"
	})
	if err := wrong.Ping(ctx).Err(); errText(err) != "WRONGPASS invalid username-password pair or user is disabled." {
		t.Errorf("PING with a wrong password = %v; want WRONGPASS", err)
	}

	noCert := newClient(t, tp.tls, func(o *redis.Options) {
		o.TLSConfig, o.Username, o.Password = tp.clientTLS(t, false), "app", "app-pw"
	})
	if err := noCert.Ping(ctx).Err(); err == nil {
		t.Errorf("PING over TLS without a client certificate succeeded; want the handshake refused")
	}

	// redis-cli --tls, with and without a certificate.
	cli := func(args ...string) (string, error) {
		base := []string{"--tls", "--cacert", tp.ca.CertFile, "-h", "127.0.0.1", "-p", port(tp.tls), "--user", "app", "--pass", "app-pw", "--no-auth-warning"}
		out, err := exec.CommandContext(ctx, "redis-cli", append(base, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redis-cli: %v", err)
	}
	if out, err := cli("--cert", tp.client.CertFile, "--key", tp.client.KeyFile, "SET", "orders:cli", "tok", "NX", "PX", "5000"); err != nil || out != "OK" {
		t.Errorf("redis-cli --tls SET = %q, %v; want OK", out, err)
	}
	if out, err := cli("--cert", tp.client.CertFile, "--key", tp.client.KeyFile, "GET", "other"); out != "NOPERM this user has no permissions to access one of the keys used as arguments" {
		t.Errorf("redis-cli --tls GET other = %q, %v; want the key NOPERM", out, err)
	}
	if out, _ := cli("SET", "orders:cli2", "tok", "NX", "PX", "5000"); out == "OK" {
		t.Errorf("redis-cli --tls without a client certificate = %q; want a refusal", out)
	}
	if v, err := app.Get(ctx, "orders:cli2").Result(); err != redis.Nil {
		t.Errorf("orders:cli2 = %q, %v; want nothing set by the refused client", v, err)
	}

	// redis-py (Debian's, under /usr/bin/python3) with ssl=True.
	py := `
import sys, redis
from redis.exceptions import NoPermissionError
ca, cert, key, port = sys.argv[1:5]
r = redis.Redis(host="127.0.0.1", port=int(port), ssl=True, ssl_ca_certs=ca, ssl_certfile=cert,
                ssl_keyfile=key, username="app", password="app-pw", socket_timeout=5)
lock = r.lock("orders:py", timeout=5, blocking_timeout=1)
assert lock.acquire() is True, "acquire"
assert r.get("orders:py") is not None, "get"
assert lock.extend(2) is True, "extend"
lock.release()
assert r.get("orders:py") is None, "released"
try:
    r.get("other")
    raise SystemExit("GET other was allowed")
except NoPermissionError as e:
    print("NOPERM:", e)
print("ok")
`
	out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c", py, tp.ca.CertFile, tp.client.CertFile, tp.client.KeyFile, port(tp.tls)).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "ok") {
		t.Errorf("redis-py over TLS: %v\n%s", err, out)
	}
}

// port returns the port of a host:port address.
func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

// TestClientTLSReloadKeepsConnections swaps the certificate files and
// reloads: a connection opened before keeps working on its session, and
// a new one gets the new certificate.
func TestClientTLSReloadKeepsConnections(t *testing.T) {
	tp := startTLSProxy(t, proxy.Config{}, "no")
	ctx := t.Context()
	open := newClient(t, tp.tls, func(o *redis.Options) { o.TLSConfig, o.PoolSize = tp.clientTLS(t, false), 1 })
	id, err := open.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", tp.tls, tp.clientTLS(t, false))
		if err != nil {
			t.Fatalf("dial after reload: %v", err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "proxy-first" {
		t.Fatalf("certificate served = %q; want proxy-first", got)
	}

	tp.install(t, tp.ca.Issue(t, "proxy-second", "127.0.0.1"))
	if err := tp.certs.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := served(); got != "proxy-second" {
		t.Errorf("certificate served after reload = %q; want proxy-second", got)
	}
	if ok, err := open.SetNX(ctx, "reload:lock", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Errorf("SET NX on the connection opened before the reload = %v, %v; want OK", ok, err)
	}
	if again, err := open.ClientID(ctx).Result(); err != nil || again != id {
		t.Errorf("CLIENT ID after reload = %d, %v; want %d (the same connection)", again, err, id)
	}
}

// TestUsersRepliesMatchRedis sends the same commands to the proxy and to a
// real redis-server with the same user, side by side: NOPERM for a
// command and for a key, and WRONGPASS, read the same.
func TestUsersRepliesMatchRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{AllowForceDel: true, Users: []acl.UserConfig{
		{Name: "app", Password: "app-pw", Allow: []string{"lock", "read"}, Keys: []string{"orders:*"}},
	}})
	real := startRedis(t, "--user", "app", "on", ">app-pw", "~orders:*", "resetchannels", "-@all", "+set", "+get", "+pttl", "+ttl", "+exists", "+eval", "+evalsha")
	for _, cmd := range [][]string{
		{"AUTH", "app", "wrong"},
		{"AUTH", "nobody", "app-pw"},
		{"AUTH", "app-pw"},
		{"AUTH", "app", "app-pw"},
		{"GET", "other"},
		{"EXISTS", "orders:1", "other"},
		{"SET", "other", "tok", "NX", "PX", "1000"},
		{"EVAL", distlockRelease, "1", "other", "tok"},
		{"DEL", "orders:1"},
		{"GET"},
		{"GET", "orders:1"},
	} {
		proxyConn, redisConn := dialRaw(t, p.Addr), dialRaw(t, real.Addr)
		if cmd[0] != "AUTH" {
			proxyConn.do("AUTH", "app", "app-pw")
			redisConn.do("AUTH", "app", "app-pw")
		}
		got, want := proxyConn.do(cmd...), redisConn.do(cmd...)
		if cmd[0] == "AUTH" && len(cmd) == 2 {
			// Redis's default user has no password: its own error. The
			// proxy's default user is off once users exist.
			want = "-WRONGPASS invalid username-password pair or user is disabled."
		}
		if got != want {
			t.Errorf("%.40q: proxy = %s; redis-server = %s", cmd, got, want)
		}
	}
}
