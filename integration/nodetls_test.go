package integration

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
	"github.com/redlock-proxy/redlock-proxy/internal/testpki"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// startTLSRedis runs a redis-server that serves TLS only (--port 0), with
// a certificate for 127.0.0.1 signed by ca, asking clients for
// certificates signed by ca (tls-auth-clients yes). client is what the
// start-up PING dials with.
func startTLSRedis(t testing.TB, ca *testpki.CA, name string, client *tls.Config, extra ...string) *redisProc {
	t.Helper()
	pair := ca.Issue(t, name, "127.0.0.1")
	args := append([]string{
		"--tls-cert-file", pair.CertFile, "--tls-key-file", pair.KeyFile,
		"--tls-ca-cert-file", ca.CertFile, "--tls-auth-clients", "yes",
	}, extra...)
	return redistest.StartTLS(t, client, args...)
}

// lockedBuffer collects logs written from several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestNodeTLS runs the proxy over three TLS-only masters that require a
// client certificate: locks work over TLS. A master whose certificate
// another CA signed, and one the proxy presents no client certificate
// to, are down, with the reason in INFO and in the log.
func TestNodeTLS(t *testing.T) {
	ca := testpki.NewCA(t, "nodes")
	stranger := testpki.NewCA(t, "stranger")
	me := ca.Issue(t, "redlock-proxy")
	nodeTLS, err := tlsfiles.Client(tlsfiles.ClientConfig{CAFile: ca.CertFile, CertFile: me.CertFile, KeyFile: me.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	ping := nodeTLS.Clone()
	ping.ServerName = "127.0.0.1"
	good := []*redisProc{startTLSRedis(t, ca, "n0", ping), startTLSRedis(t, ca, "n1", ping), startTLSRedis(t, ca, "n2", ping)}
	// Signed by another CA: the proxy must not trust it.
	strangerPing := ping.Clone()
	strangerPing.RootCAs = nil
	strangerPing.InsecureSkipVerify = true
	rogue := startTLSRedis(t, stranger, "rogue", strangerPing,
		"--tls-ca-cert-file", ca.CertFile) // it still knows the proxy's CA
	// Trusted, but the proxy shows it no client certificate.
	noCert := startTLSRedis(t, ca, "n4", ping)

	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bare := nodeTLS.Clone()
	bare.Certificates = nil
	nodes := []quorum.Node{
		redisnode.NewRedisNode(good[0].Addr, redisnode.NodeOptions{TLS: nodeTLS}),
		redisnode.NewRedisNode(good[1].Addr, redisnode.NodeOptions{TLS: nodeTLS}),
		redisnode.NewRedisNode(good[2].Addr, redisnode.NodeOptions{TLS: nodeTLS}),
		redisnode.NewRedisNode(rogue.Addr, redisnode.NodeOptions{TLS: nodeTLS}),
		redisnode.NewRedisNode(noCert.Addr, redisnode.NodeOptions{TLS: bare}),
	}
	e := quorum.New(quorum.Config{NodeTimeout: nodeTimeout, ProbeInterval: 100 * time.Millisecond, Log: log}, nodes...)
	t.Cleanup(func() { e.Close() })
	if err := e.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	addrs := []string{good[0].Addr, good[1].Addr, good[2].Addr, rogue.Addr, noCert.Addr}
	hub := pubsub.New(pubsub.Config{Nodes: addrs, TLS: nodeTLS, RetryInterval: 100 * time.Millisecond, Log: log})
	t.Cleanup(func() { hub.Close() })
	p := serveProxy(t, proxy.Config{Log: log, CommandTimeout: commandTimeout, PubSub: hub}, e)
	c := newClient(t, p.Addr, nil)
	ctx := t.Context()

	for i := range 3 {
		if f := nodeInfo(t, c, i); f["state"] != "up" {
			t.Errorf("node%d over TLS = %v; want state=up", i, f)
		}
	}
	rf := waitState(t, c, 3, "down", 5*time.Second)
	if rf["reason"] != "tls verification failed" || !strings.Contains(rf["last_error"], "certificate signed by unknown authority") {
		t.Errorf("node3 (another CA) = %v; want reason=tls verification failed and the x509 error", rf)
	}
	// redis-server (OpenSSL) drops a client without a certificate after
	// the TLS 1.3 handshake, without an alert: the proxy sees a reset.
	if nf := waitState(t, c, 4, "down", 5*time.Second); nf["last_error"] == "" {
		t.Errorf("node4 (no client certificate) = %v; want its error in last_error", nf)
	}
	if l := logs.String(); !strings.Contains(l, "node down") || !strings.Contains(l, "unknown authority") {
		t.Errorf("log has no node down line with the verification error:\n%s", l)
	}

	// 3 of 5 up over TLS: a quorum.
	if ok, err := c.SetNX(ctx, "tls:lock", "tok", 5*time.Second).Result(); err != nil || !ok {
		t.Fatalf("SET NX over node TLS = %v, %v; want OK", ok, err)
	}
	for i, n := range good {
		v, err := newClient(t, n.Addr, func(o *redis.Options) { o.TLSConfig = ping }).Get(ctx, "tls:lock").Result()
		if err != nil || v != "tok" {
			t.Errorf("master %d holds %q, %v; want tok", i, v, err)
		}
	}
	if got, err := c.Eval(ctx, distlockRelease, []string{"tls:lock"}, "tok").Int(); err != nil || got != 1 {
		t.Errorf("release over node TLS = %d, %v; want 1", got, err)
	}

	// The pub/sub hub's own connections use node TLS too.
	ps := c.Subscribe(ctx, "tls:chan")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatalf("SUBSCRIBE over node TLS: %v", err)
	}
	if err := newClient(t, good[1].Addr, func(o *redis.Options) { o.TLSConfig = ping }).Publish(ctx, "tls:chan", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if msg, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Errorf("message over node TLS: %v", err)
	} else if m, ok := msg.(*redis.Message); !ok || m.Payload != "hello" {
		t.Errorf("message over node TLS = %v; want hello", msg)
	}
}
