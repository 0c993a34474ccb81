package app

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// quorumConfig is the engine's config: static keys only, since the
// engine is built once.
func (s static) quorumConfig(log *slog.Logger) quorum.Config {
	return quorum.Config{
		NodeTimeout:      s.NodeTimeout.Duration,
		DriftFactor:      s.DriftFactor,
		MinTTL:           s.MinTTL.Duration,
		MaxTTL:           s.MaxTTL.Duration,
		ProbeInterval:    s.ProbeInterval.Duration,
		ClockJumpLimit:   s.ClockJumpLimit.Duration,
		TrustFsyncAlways: s.TrustFsync,
		Log:              log,
	}
}

// proxyConfig is the server's config: live keys only, since a reload
// hands it to the running server.
func (l live) proxyConfig(log *slog.Logger) proxy.Config {
	return proxy.Config{
		RequirePass:    l.RequirePass,
		Users:          l.users(),
		DefaultTTL:     l.DefaultTTL.Duration,
		CommandTimeout: l.CommandTimeout.Duration,
		AllowForceDel:  l.AllowForceDel,
		FenceKeys:      l.FenceKeys,
		LatchKeys:      l.LatchKeys,
		MaxClients:     l.MaxClients,
		IdleTimeout:    l.IdleTimeout.Duration,
		Limits:         proxy.Limits{MaxArgs: l.MaxArgs, MaxBulk: l.MaxBulk, MaxInline: l.MaxInline, MaxCommand: l.MaxCommand},
		MaxInputTotal:  l.MaxInputTotal,
		Log:            log,

		SlowlogSlowerThan: l.SlowlogSlower.Duration,
		SlowlogMaxLen:     l.SlowlogMaxLen,
	}
}

// users returns the [[users]] tables as acl takes them.
func (l live) users() []acl.UserConfig {
	var out []acl.UserConfig
	for _, u := range l.Users {
		out = append(out, acl.UserConfig(u))
	}
	return out
}

func (s static) tlsServer() tlsfiles.ServerConfig {
	return tlsfiles.ServerConfig{
		CertFile: s.TLSCertFile, KeyFile: s.TLSKeyFile, CAFile: s.TLSCAFile,
		AuthClients: tlsfiles.ClientAuth(s.TLSAuthClients),
	}
}

// listen opens the client listeners, the plain and the TLS one, as one.
// certs is nil without tls_listen.
func (s static) listen() (ln net.Listener, certs *tlsfiles.Server, err error) {
	var lns []net.Listener
	defer func() {
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
		}
	}()
	if s.Listen != "" {
		l, err := net.Listen("tcp", s.Listen)
		if err != nil {
			return nil, nil, err
		}
		lns = append(lns, l)
	}
	if s.TLSListen != "" {
		if certs, err = tlsfiles.NewServer(s.tlsServer()); err != nil {
			return nil, nil, fmt.Errorf("config: %w", err)
		}
		l, err := net.Listen("tcp", s.TLSListen)
		if err != nil {
			return nil, nil, err
		}
		lns = append(lns, tls.NewListener(l, certs.Config()))
	}
	return proxy.JoinListeners(lns...), certs, nil
}

// passwordEnv is the environment variable that may hold the nodes' AUTH
// password.
const passwordEnv = "REDLOCK_PROXY_NODE_PASSWORD"

// nodePasswordSource names where the nodes' password comes from:
// node_password, node_password_file or the environment; "" for none. More
// than one is an error, so that no source silently wins over another.
func (s static) nodePasswordSource(getenv func(string) string) (string, error) {
	var set []string
	if s.NodePassword != "" {
		set = append(set, "node_password")
	}
	if s.NodePassFile != "" {
		set = append(set, "node_password_file")
	}
	if getenv(passwordEnv) != "" {
		set = append(set, passwordEnv)
	}
	switch len(set) {
	case 0:
		return "", nil
	case 1:
		return set[0], nil
	}
	return "", fmt.Errorf("the nodes' password is set by %s: set one of them", strings.Join(set, " and "))
}

// nodeOptions returns the settings of every node: the password from its
// one source, and TLS.
func (s static) nodeOptions(getenv func(string) string) (redisnode.NodeOptions, error) {
	opts := redisnode.NodeOptions{Username: s.NodeUsername}
	src, err := s.nodePasswordSource(getenv)
	if err != nil {
		return opts, err
	}
	switch src {
	case "node_password":
		opts.Password = s.NodePassword
	case passwordEnv:
		opts.Password = getenv(passwordEnv)
	case "node_password_file":
		b, err := os.ReadFile(s.NodePassFile)
		if err != nil {
			return opts, fmt.Errorf("node_password_file: %w", err)
		}
		// One trailing line break, as echo and editors leave, is not part
		// of the password.
		opts.Password = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if opts.Password == "" {
			return opts, fmt.Errorf("node_password_file %s is empty", s.NodePassFile)
		}
	}
	if s.NodeTLS {
		c, err := tlsfiles.Client(tlsfiles.ClientConfig{
			CAFile: s.NodeTLSCAFile, CertFile: s.NodeTLSCert, KeyFile: s.NodeTLSKey, ServerName: s.NodeTLSName,
		})
		if err != nil {
			return opts, err
		}
		opts.TLS = c
	}
	return opts, nil
}
