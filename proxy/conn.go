package proxy

import (
	"math"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/buildinfo"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// version is what the proxy reports as its Redis version: the command
// surface it mirrors is Redis 7.0's, and clients choose features by it.
// The proxy's own version is buildinfo's, reported beside it.
const version = "7.0.0"

// PING [message]
func (s *Server) ping(r *request) (resp.Reply, error) {
	if len(r.args) <= 2 && r.c.subscribed() {
		msg := ""
		if len(r.args) == 2 {
			msg = string(r.args[1])
		}
		return resp.Array(resp.Bulk("pong"), resp.Bulk(msg)), nil // Redis's reply in subscribed mode
	}
	switch len(r.args) {
	case 1:
		return resp.Status("PONG"), nil
	case 2:
		return resp.Bulk(string(r.args[1])), nil
	}
	return resp.Reply{}, withArgs(errArity, "ping")
}

// ECHO message
func (s *Server) echo(r *request) (resp.Reply, error) { return resp.Bulk(string(r.args[1])), nil }

// QUIT
func (s *Server) quit(r *request) (resp.Reply, error) {
	// ioredis waits for the server to close the connection.
	r.closeAfter = true
	return resp.OK(), nil
}

// RESET
//
// As Redis 7.0: the connection is as if it had just connected. Its
// transaction and watch end, its subscriptions end without
// confirmations, it speaks RESP2, loses its name and runs as the default
// user, so where that user needs a password it must AUTH again (and is
// under the pre-auth limits until it does).
func (s *Server) reset(r *request) (resp.Reply, error) {
	c := r.c
	c.tx.reset()
	s.stopMonitor(c)
	if c.sub != nil {
		c.sub.forget(s.hub)
		markSubscribed(r.conn.NetConn(), false)
	}
	c.proto = resp.RESP2
	c.name = ""
	us := s.users.Load()
	c.user, c.users, c.authed = us.Start(), us, false
	if c.user == nil {
		markUnauthenticated(r.conn.NetConn())
	}
	return resp.Status("RESET"), nil
}

// AUTH [username] password
func (s *Server) auth(r *request) (resp.Reply, error) {
	switch len(r.args) {
	case 2:
		if !s.users.Load().PasswordRequired() {
			return resp.Reply{}, errAuthNoPassword
		}
		return s.authenticate(r, acl.DefaultUser, r.args[1])
	case 3:
		return s.authenticate(r, string(r.args[1]), r.args[2])
	}
	return resp.Reply{}, resp.ErrSyntax
}

// authenticate logs r's connection in as user if pass is its password
// (compared in constant time by acl). AUTH and HELLO's AUTH option both
// call it. The password is never logged or shown.
func (s *Server) authenticate(r *request, user string, pass []byte) (resp.Reply, error) {
	us := s.users.Load()
	u := us.Authenticate(user, pass)
	if u == nil {
		s.conf().Log.Info("authentication failed", "user", user, "addr", r.conn.RemoteAddr())
		return resp.Reply{}, errWrongPass
	}
	r.c.user, r.c.users, r.c.authed = u, us, true
	markAuthenticated(r.conn.NetConn())
	return resp.OK(), nil
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
//
// As redis-server 7.0 does it: the version, then each option in order,
// each taking effect at once (a SETNAME before a failed AUTH or a syntax
// error stays), then the authentication check; the reply is in the new
// protocol.
func (s *Server) hello(r *request) (resp.Reply, error) {
	proto := r.c.proto
	if len(r.args) >= 2 {
		v, ok := resp.ParseInt(r.args[1])
		switch {
		case !ok:
			return resp.Reply{}, errProtoNotInteger
		case v != 2 && v != 3:
			return resp.Reply{}, errNoProto
		}
		proto = resp.Proto(v)
	}
	for i := 2; i < len(r.args); i++ {
		switch opt := ascii.Lower(r.args[i]); {
		case opt == "auth" && i+2 < len(r.args):
			if _, err := s.authenticate(r, string(r.args[i+1]), r.args[i+2]); err != nil {
				return resp.Reply{}, err
			}
			i += 2
		case opt == "setname" && i+1 < len(r.args):
			if !resp.ValidClientName(r.args[i+1]) {
				return resp.Reply{}, errBadClientName
			}
			r.c.name = string(r.args[i+1])
			i++
		default:
			return resp.Reply{}, withArgs(errHelloOption, r.args[i])
		}
	}
	if r.c.user == nil {
		return resp.Reply{}, errHelloNoAuth
	}
	r.c.proto = proto
	return resp.Map(
		resp.Bulk("server"), resp.Bulk("redis"),
		resp.Bulk("version"), resp.Bulk(version),
		resp.Bulk("proto"), resp.Int(int64(proto)),
		resp.Bulk("id"), resp.Int(r.c.id),
		resp.Bulk("mode"), resp.Bulk("standalone"),
		resp.Bulk("role"), resp.Bulk("master"),
		resp.Bulk("modules"), resp.Array(),
		resp.Bulk("proxy_version"), resp.Bulk(buildinfo.Version()),
	), nil
}

// SELECT index
func (s *Server) selectDB(r *request) (resp.Reply, error) {
	n, ok := resp.ParseIntRange(r.args[1], math.MinInt32, math.MaxInt32)
	switch {
	case !ok:
		return resp.Reply{}, resp.ErrNotInteger
	case n < 0 || n >= 16:
		return resp.Reply{}, errDBIndex
	case n != 0:
		return resp.Reply{}, errDBZeroOnly
	}
	return resp.OK(), nil
}

// CLIENT SETNAME name | GETNAME | SETINFO attr value | ID | LIST | INFO | KILL | NO-EVICT | NO-TOUCH
//
// serveRESP has checked the subcommand and its argument count.
func (s *Server) clientCmd(r *request) (resp.Reply, error) {
	switch sub := ascii.Lower(r.args[1]); sub {
	case "setname":
		if !resp.ValidClientName(r.args[2]) {
			return resp.Reply{}, errBadClientName
		}
		r.c.name = string(r.args[2])
		return resp.OK(), nil
	case "getname":
		if r.c.name == "" {
			return resp.Null(), nil
		}
		return resp.Bulk(r.c.name), nil
	case "setinfo":
		// Redis 7.2's rules.
		attr := ascii.Lower(r.args[2])
		if attr != "lib-name" && attr != "lib-ver" {
			return resp.Reply{}, withArgs(errClientOption, r.args[2])
		}
		if !resp.ValidClientName(r.args[3]) {
			return resp.Reply{}, withArgs(errClientAttr, attr)
		}
		return resp.OK(), nil
	case "id":
		return resp.Int(r.c.id), nil
	case "list":
		return s.clientList(r)
	case "info":
		if r.c.list == nil {
			return resp.Verbatim(""), nil
		}
		return resp.Verbatim(r.c.list.line(time.Now())), nil
	case "kill":
		return s.clientKill(r)
	case "no-evict", "no-touch":
		// The proxy evicts no client and keeps no LRU: both are accepted
		// and change nothing.
		switch ascii.Lower(r.args[2]) {
		case "on", "off":
			return resp.OK(), nil
		}
		return resp.Reply{}, resp.ErrSyntax
	}
	// Redis has it, the proxy does not: among them TRACKING, which needs
	// the keyspace's invalidations, and the proxy sees no node's writes.
	return resp.Reply{}, withArgs(errUnknownSubcommand, cString(r.args[1], 128), "CLIENT")
}

// CLUSTER subcommand [arg ...], READONLY, READWRITE
func (s *Server) clusterCmd(r *request) (resp.Reply, error) {
	return resp.Reply{}, errClusterDisabled
}
