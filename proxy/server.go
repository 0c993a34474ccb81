package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tidwall/redcon"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// Server serves the lock commands of Redis clients over a quorum engine.
// Its config and engine do not change after New; the script cache and the
// client counters are its only mutable state.
type Server struct {
	cfg     Config
	e       *quorum.Engine
	rc      *redcon.Server
	scripts *scriptCache
	started time.Time
	clients atomic.Int64 // open connections
	nextID  atomic.Int64 // CLIENT ID of the last connection
}

// client is the per-connection state, kept in redcon's Conn context.
type client struct {
	id     int64
	name   string
	authed bool
}

// New returns a server for engine e, or an error naming the first bad
// setting in cfg.
func New(cfg Config, e *quorum.Engine) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg.withDefaults(), e: e, scripts: newScriptCache(), started: time.Now()}
	s.rc = redcon.NewServerNetwork("tcp", "", s.serveRESP, s.accept, s.closed)
	if s.cfg.IdleTimeout > 0 {
		s.rc.SetIdleClose(s.cfg.IdleTimeout)
	}
	return s, nil
}

// Serve accepts clients on ln until Close. Every byte a client sends
// passes the framing limits before redcon parses it.
func (s *Server) Serve(ln net.Listener) error {
	return s.rc.Serve(guardListener(ln, s.cfg.Limits, s.cfg.RequirePass != ""))
}

// Close stops accepting and closes every client connection. Commands in
// flight finish on the nodes; their replies are lost, and a lock they
// took expires with its TTL.
func (s *Server) Close() error { return s.rc.Close() }

func (s *Server) accept(conn redcon.Conn) bool {
	if s.clients.Add(1) > int64(s.cfg.MaxClients) {
		s.clients.Add(-1)
		// Written straight to the socket: redcon closes it unflushed.
		conn.NetConn().Write([]byte("-ERR max number of clients reached\r\n"))
		s.cfg.Log.Warn("client refused", "addr", conn.RemoteAddr(), "reason", "max_clients")
		return false
	}
	conn.SetContext(&client{id: s.nextID.Add(1), authed: s.cfg.RequirePass == ""})
	return true
}

func (s *Server) closed(conn redcon.Conn, err error) {
	s.clients.Add(-1)
	if err != nil {
		s.cfg.Log.Debug("client closed", "addr", conn.RemoteAddr(), "err", err)
	}
}

// request is one client command on its way through a handler.
type request struct {
	ctx  context.Context
	conn redcon.Conn
	c    *client
	args [][]byte // args[0] is the command name
	// closeAfter closes the connection once the reply is written.
	closeAfter bool
}

type command struct {
	arity   int  // > 0: exactly arity args; < 0: at least -arity
	noAuth  bool // allowed before AUTH
	handler func(s *Server, r *request) resp.Reply
}

// commands is the whole client surface of the proxy.
var commands = map[string]command{
	// Connection.
	"ping":    {-1, false, (*Server).ping},
	"echo":    {2, false, (*Server).echo},
	"quit":    {-1, true, (*Server).quit},
	"auth":    {-2, true, (*Server).auth},
	"hello":   {-1, true, (*Server).hello},
	"select":  {2, false, (*Server).selectDB},
	"client":  {-2, false, (*Server).clientCmd},
	"info":    {-1, false, (*Server).info},
	"command": {-1, false, (*Server).commandCmd},
	// Locks.
	"set":     {-3, false, (*Server).set},
	"get":     {2, false, (*Server).get},
	"pttl":    {2, false, (*Server).pttl},
	"ttl":     {2, false, (*Server).ttl},
	"exists":  {-2, false, (*Server).exists},
	"del":     {-2, false, (*Server).del},
	"eval":    {-3, false, (*Server).eval},
	"evalsha": {-3, false, (*Server).evalsha},
	"script":  {-2, false, (*Server).script},
}

// serveRESP is the redcon handler: look up, check arity and auth, run,
// reply.
func (s *Server) serveRESP(conn redcon.Conn, cmd redcon.Command) {
	name := strings.ToLower(string(cmd.Args[0]))
	c, _ := conn.Context().(*client)
	if c == nil { // accept always sets it; keep a bad state from panicking
		c = &client{}
		conn.SetContext(c)
	}
	cm, ok := commands[name]
	switch {
	case !ok:
		unknownCommand(cmd.Args).WriteTo(conn)
		return
	case !c.authed && !cm.noAuth:
		resp.Error("NOAUTH Authentication required.").WriteTo(conn)
		return
	case cm.arity > 0 && len(cmd.Args) != cm.arity, cm.arity < 0 && len(cmd.Args) < -cm.arity:
		resp.Error("ERR wrong number of arguments for '" + name + "' command").WriteTo(conn)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.CommandTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			s.cfg.Log.Error("panic in command", "cmd", name, "panic", p, "stack", string(debug.Stack()))
			resp.Error("ERR internal error").WriteTo(conn)
			conn.Close()
		}
	}()
	s.cfg.Log.Debug("command", "cmd", name, "args", len(cmd.Args)-1, "addr", conn.RemoteAddr())
	r := &request{ctx: ctx, conn: conn, c: c, args: cmd.Args}
	cm.handler(s, r).WriteTo(conn)
	if r.closeAfter {
		conn.Close() // flushes the reply first
	}
}

// unsupported lists common Redis commands a client might send by mistake,
// to answer them with a clearer error than "unknown command".
var unsupported = map[string]bool{
	"incr": true, "decr": true, "expire": true, "pexpire": true, "persist": true,
	"getset": true, "setnx": true, "setex": true, "psetex": true, "mset": true,
	"hset": true, "hget": true, "hexists": true, "hincrby": true, "lpush": true,
	"rpush": true, "sadd": true, "zadd": true, "publish": true, "subscribe": true,
	"keys": true, "scan": true, "flushall": true, "flushdb": true, "multi": true,
	"exec": true, "watch": true, "unlink": true, "rename": true, "type": true,
}

// unknownCommand is Redis's reply to a command it does not know, with the
// first arguments quoted as Redis quotes them.
func unknownCommand(args [][]byte) resp.Reply {
	name := string(args[0])
	if unsupported[strings.ToLower(name)] {
		return resp.Error(fmt.Sprintf("ERR '%s' is not supported: redlock-proxy serves lock commands only", strings.ToLower(name)))
	}
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.128s' ", a)
	}
	return resp.Error(fmt.Sprintf("ERR unknown command '%.128s', with args beginning with: %s", name, b.String()))
}

// replyForError is how every engine error looks on the wire: an outage is
// an error that says how many nodes answered, never a nil.
func replyForError(err error) resp.Reply {
	var oe *quorum.OutcomeError
	switch {
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable):
		return resp.Error(fmt.Sprintf("NOQUORUM %d of %d nodes answered, %d needed", oe.Answered(), oe.Total, quorum.Quorum(oe.Total)))
	case errors.Is(err, context.DeadlineExceeded):
		return resp.Error("NOQUORUM command timed out")
	default:
		return resp.Error("ERR " + err.Error())
	}
}
