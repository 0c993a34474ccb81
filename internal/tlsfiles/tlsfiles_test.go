package tlsfiles

import (
	"crypto/tls"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/testpki"
)

// serve accepts TLS connections on a loopback port with cfg, and echoes
// each line back, until the test ends.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() { // waited for by the cleanup above
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends when the client closes
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects and completes a round trip, which is where TLS 1.3
// reports a refused client certificate.
func dial(addr string, cfg *tls.Config) (*tls.Conn, error) {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	if err := roundTrip(c); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func roundTrip(c *tls.Conn) error {
	if _, err := c.Write([]byte("x")); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err
}

func clientCfg(t *testing.T, ca *testpki.CA, pair *testpki.Pair) *tls.Config {
	t.Helper()
	cfg := ClientConfig{CAFile: ca.CertFile}
	if pair != nil {
		cfg.CertFile, cfg.KeyFile = pair.CertFile, pair.KeyFile
	}
	c, err := Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.ServerName = "127.0.0.1"
	if pair != nil {
		// Send the certificate even when its CA is not one the server
		// names, which Go's client would otherwise not do.
		cert := c.Certificates[0]
		c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return c
}

func TestServerClientAuth(t *testing.T) {
	ca := testpki.NewCA(t, "test")
	other := testpki.NewCA(t, "other")
	server := ca.Issue(t, "proxy", "127.0.0.1")
	client := ca.Issue(t, "client")
	stranger := other.Issue(t, "stranger")
	tests := []struct {
		auth                ClientAuth
		none, good, strange bool // whether each client gets through
	}{
		{"yes", false, true, false},
		{"", false, true, false}, // "yes" when a CA is set, as Redis
		{"optional", true, true, false},
		{"no", true, true, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.auth), func(t *testing.T) {
			s, err := NewServer(ServerConfig{CertFile: server.CertFile, KeyFile: server.KeyFile, CAFile: ca.CertFile, AuthClients: tt.auth})
			if err != nil {
				t.Fatal(err)
			}
			addr := serve(t, s.Config())
			for _, c := range []struct {
				name string
				pair *testpki.Pair
				want bool
			}{{"no certificate", nil, tt.none}, {"CA's certificate", &client, tt.good}, {"other CA's certificate", &stranger, tt.strange}} {
				conn, err := dial(addr, clientCfg(t, ca, c.pair))
				if (err == nil) != c.want {
					t.Errorf("%s: dial err = %v; want success %v", c.name, err, c.want)
				}
				if conn != nil {
					conn.Close()
				}
			}
		})
	}
}

func TestServerRefusesOldTLS(t *testing.T) {
	ca := testpki.NewCA(t, "test")
	server := ca.Issue(t, "proxy", "127.0.0.1")
	s, err := NewServer(ServerConfig{CertFile: server.CertFile, KeyFile: server.KeyFile, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	old := clientCfg(t, ca, nil)
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if c, err := dial(addr, old); err == nil {
		c.Close()
		t.Fatalf("dial with TLS 1.1 succeeded; want refused (TLS 1.2 minimum)")
	}
	if c, err := dial(addr, clientCfg(t, ca, nil)); err != nil {
		t.Fatalf("dial with TLS 1.2+: %v", err)
	} else {
		c.Close()
	}
}

// TestServerReload swaps the certificate files and reloads: new
// handshakes get the new certificate, a connection opened before keeps
// working, and a reload of broken files keeps the last good ones.
func TestServerReload(t *testing.T) {
	ca := testpki.NewCA(t, "test")
	first := ca.Issue(t, "first", "127.0.0.1")
	second := ca.Issue(t, "second", "127.0.0.1")
	dir := t.TempDir()
	certFile, keyFile := dir+"/cert.pem", dir+"/key.pem"
	install := func(p testpki.Pair) {
		t.Helper()
		for from, to := range map[string]string{p.CertFile: certFile, p.KeyFile: keyFile} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(first)
	s, err := NewServer(ServerConfig{CertFile: certFile, KeyFile: keyFile, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	peer := func(c *tls.Conn) string { return c.ConnectionState().PeerCertificates[0].Subject.CommonName }

	open, err := dial(addr, clientCfg(t, ca, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if got := peer(open); got != "first" {
		t.Fatalf("certificate before reload = %q; want first", got)
	}

	install(second)
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	again, err := dial(addr, clientCfg(t, ca, nil))
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if got := peer(again); got != "second" {
		t.Errorf("certificate after reload = %q; want second", got)
	}
	if err := roundTrip(open); err != nil {
		t.Errorf("connection opened before the reload: %v; want it still served", err)
	}

	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "tls_key_file") {
		t.Errorf("Reload of a broken key = %v; want an error naming tls_key_file", err)
	}
	last, err := dial(addr, clientCfg(t, ca, nil))
	if err != nil {
		t.Fatalf("dial after a failed reload: %v; want the last good certificate served", err)
	}
	last.Close()
	if got := peer(last); got != "second" {
		t.Errorf("certificate after a failed reload = %q; want second", got)
	}
}

func TestServerConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  ServerConfig
		want string // "" for valid
	}{
		{"complete", ServerConfig{CertFile: "c", KeyFile: "k", CAFile: "ca", AuthClients: "yes"}, ""},
		{"no client auth without CA", ServerConfig{CertFile: "c", KeyFile: "k", AuthClients: "no"}, ""},
		{"no key", ServerConfig{CertFile: "c"}, "tls_cert_file and tls_key_file are required"},
		{"bad auth", ServerConfig{CertFile: "c", KeyFile: "k", AuthClients: "maybe"}, `tls_auth_clients ("maybe") must be yes, optional or no`},
		{"yes without CA", ServerConfig{CertFile: "c", KeyFile: "k", AuthClients: "yes"}, "needs tls_ca_file"},
		{"optional without CA", ServerConfig{CertFile: "c", KeyFile: "k", AuthClients: "optional"}, "needs tls_ca_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != (tt.want == "") || err != nil && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v; want %q", err, tt.want)
			}
		})
	}
}

func TestClient(t *testing.T) {
	ca := testpki.NewCA(t, "test")
	other := testpki.NewCA(t, "other")
	server := ca.Issue(t, "node", "127.0.0.1")
	s, err := NewServer(ServerConfig{CertFile: server.CertFile, KeyFile: server.KeyFile, AuthClients: "no"})
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, s.Config())
	if c, err := dial(addr, clientCfg(t, other, nil)); err == nil {
		c.Close()
		t.Errorf("dial trusting another CA succeeded; want a verification error")
	}
	wrongName, err := Client(ClientConfig{CAFile: ca.CertFile, ServerName: "redis.example"})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := dial(addr, wrongName); err == nil {
		c.Close()
		t.Errorf("dial expecting another server name succeeded; want a verification error")
	}
	if _, err := Client(ClientConfig{CertFile: "c"}); err == nil {
		t.Errorf("Client with a certificate and no key = nil error; want one")
	}
	if _, err := Client(ClientConfig{CAFile: server.KeyFile}); err == nil || !strings.Contains(err.Error(), "node_tls_ca_file") {
		t.Errorf("Client with a CA file holding no certificate = %v; want an error naming node_tls_ca_file", err)
	}
}
