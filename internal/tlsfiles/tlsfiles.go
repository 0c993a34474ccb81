// Package tlsfiles builds TLS configurations from certificate, key and CA
// files, and re-reads them on demand: the client listener's certificates
// are swapped on a reload without dropping a connection, since each new
// handshake takes whatever set is current.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
)

// ClientAuth is what the listener asks of clients, as Redis's
// tls-auth-clients: "yes" (a certificate signed by the CA is required),
// "optional" (verified if given) or "no". Empty means "yes" when a CA file
// is set and "no" otherwise.
type ClientAuth string

// ServerConfig is the client listener's files.
type ServerConfig struct {
	CertFile, KeyFile string // the proxy's certificate chain and key (PEM). Required.
	// CAFile holds the CAs (PEM) that client certificates are verified
	// against. Required unless AuthClients is "no".
	CAFile      string
	AuthClients ClientAuth
}

// Validate reports the first setting that cannot work, naming the key as
// it appears in config.toml. It does not read the files.
func (c ServerConfig) Validate() error {
	switch {
	case c.CertFile == "" || c.KeyFile == "":
		return errors.New("tls_cert_file and tls_key_file are required with tls_listen")
	case c.AuthClients != "" && c.AuthClients != "yes" && c.AuthClients != "optional" && c.AuthClients != "no":
		return fmt.Errorf("tls_auth_clients (%q) must be yes, optional or no", string(c.AuthClients))
	case c.CAFile == "" && (c.AuthClients == "yes" || c.AuthClients == "optional"):
		return fmt.Errorf("tls_auth_clients (%q) needs tls_ca_file to verify client certificates", string(c.AuthClients))
	}
	return nil
}

// Server is the client listener's TLS configuration, reloadable. Its
// method Config's result never changes; Reload swaps what it hands each
// new handshake.
type Server struct {
	cfg ServerConfig
	cur atomic.Pointer[tls.Config]
}

// NewServer reads the files cfg names.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload re-reads the certificate, key and CA files. New handshakes use
// them; open connections keep the session they have. On an error the
// previous files stay in use.
func (s *Server) Reload() error {
	cert, err := tls.LoadX509KeyPair(s.cfg.CertFile, s.cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("tls_cert_file %s, tls_key_file %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
	}
	c := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	if s.cfg.CAFile != "" {
		pool, err := readPool(s.cfg.CAFile)
		if err != nil {
			return fmt.Errorf("tls_ca_file: %w", err)
		}
		c.ClientCAs = pool
		switch s.cfg.AuthClients {
		case "", "yes":
			c.ClientAuth = tls.RequireAndVerifyClientCert
		case "optional":
			c.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	s.cur.Store(c)
	return nil
}

// Config returns the configuration to serve with: each handshake takes
// the files last read.
func (s *Server) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return s.cur.Load(), nil
		},
	}
}

// ClientConfig is the node connections' files.
type ClientConfig struct {
	// CAFile holds the CAs (PEM) the nodes' certificates are verified
	// against. Empty means the system's roots.
	CAFile string
	// CertFile and KeyFile are the proxy's client certificate (PEM), for
	// nodes that ask for one. Both or neither.
	CertFile, KeyFile string
	// ServerName is the name the nodes' certificates must carry. Empty
	// means each node's host as written in nodes.
	ServerName string
}

// Client returns the configuration to dial the nodes with. The files are
// read once.
func Client(cfg ClientConfig) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("node_tls_cert_file and node_tls_key_file go together")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("node_tls_cert_file %s, node_tls_key_file %s: %w", cfg.CertFile, cfg.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	if cfg.CAFile != "" {
		pool, err := readPool(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("node_tls_ca_file: %w", err)
		}
		c.RootCAs = pool
	}
	return c, nil
}

func readPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}
