package proxy

import (
	"bufio"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/testpki"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
)

// TestServePlainAndTLS serves one server on a plain and a TLS listener at
// once: both answer, the framing guard reads the decrypted bytes (the
// pre-auth limits apply over TLS), and Close stops both.
func TestServePlainAndTLS(t *testing.T) {
	ca := testpki.NewCA(t, "test")
	pair := ca.Issue(t, "proxy", "127.0.0.1")
	certs, err := tlsfiles.NewServer(tlsfiles.ServerConfig{CertFile: pair.CertFile, KeyFile: pair.KeyFile, AuthClients: "no"})
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
	s, _ := newTestServer(t, 1, Config{RequirePass: "pw"})
	serveOn(t, s, JoinListeners(plain, tls.NewListener(secure, certs.Config())))

	client, err := tlsfiles.Client(tlsfiles.ClientConfig{CAFile: ca.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	dialTLS := func() *rawConn {
		c, err := tls.Dial("tcp", secure.Addr().String(), client)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &rawConn{c: c, r: bufio.NewReader(c)}
	}
	for name, rc := range map[string]*rawConn{"plain": dial(t, plain.Addr().String()), "tls": dialTLS()} {
		if got := rc.do(t, "PING"); got != noAuth {
			t.Errorf("%s: PING before AUTH = %q; want %q", name, got, noAuth)
		}
		if got := rc.do(t, "AUTH", "pw"); got != "+OK\r\n" {
			t.Errorf("%s: AUTH = %q; want +OK", name, got)
		}
		if got := rc.do(t, "SET", name, "tok", "NX", "PX", "5000"); got != "+OK\r\n" {
			t.Errorf("%s: SET = %q; want +OK", name, got)
		}
	}
	pre := dialTLS()
	if got := pre.do(t, "EXISTS", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"); !strings.HasPrefix(got, "-ERR Protocol error") {
		t.Errorf("11 arguments before AUTH over TLS = %q; want a protocol error", got)
	}
	if !pre.closed() {
		t.Errorf("connection still open after a protocol error over TLS")
	}
}

// TestJoinListenersClose: Close closes every listener, and Accept then
// returns net.ErrClosed.
func TestJoinListenersClose(t *testing.T) {
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	j := JoinListeners(a, b)
	for _, ln := range []net.Listener{b, a} {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, err := j.Accept()
		if err != nil {
			t.Fatalf("Accept: %v", err)
		}
		if got.LocalAddr().String() != ln.Addr().String() {
			t.Errorf("Accept = a connection to %s; want one to %s", got.LocalAddr(), ln.Addr())
		}
		got.Close()
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := j.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close = %v; want net.ErrClosed", err)
	}
	for _, ln := range []net.Listener{a, b} {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
			t.Errorf("dial %s after Close succeeded; want refused", ln.Addr())
		}
	}
}
