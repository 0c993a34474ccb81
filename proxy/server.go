package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/tidwall/redcon"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/pubsub"
	"github.com/redlock-proxy/redlock-proxy/internal/ratelog"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// warnEvery is how often one kind of repeated warning is logged.
const warnEvery = time.Second

// Server serves the lock commands of Redis clients over a quorum engine.
// Its engine does not change after New, and its config only through
// Reload; the users (swapped whole by Reload), the script
// cache, the client counters and the drain flag are its other mutable
// state.
type Server struct {
	cfg      atomic.Pointer[Config] // with defaults applied; swapped whole by Reload
	e        Engine
	rc       *redcon.Server
	users    atomic.Pointer[acl.Users]
	obs      Observer                        // nil for none; fixed at New
	hub      *pubsub.Hub                     // nil refuses SUBSCRIBE; fixed at New
	ln       atomic.Pointer[guardedListener] // set by Serve
	draining atomic.Bool
	scripts  *scriptCache
	watches  *watchSet
	started  time.Time
	runID    string // a random 40-hex id of this process, as Redis's run_id
	stats    *stats
	slow     slowlog
	// monitors are the MONITOR clients by CLIENT ID (monitor.go);
	// nMonitors counts them, so that a command checks one atomic.
	monitors  sync.Map
	nMonitors atomic.Int64
	clients   atomic.Int64 // open connections
	listings  sync.Map     // CLIENT ID -> *listing of every open connection
	nextID    atomic.Int64 // CLIENT ID of the last connection
	// refusedLog and acceptLog write their repeated warnings once a
	// second with a count, so that a flood of clients cannot flood the log.
	refusedLog, acceptLog *ratelog.Log
	// running counts Serve and every open connection's redcon goroutine,
	// so that Close can wait for them all.
	running sync.WaitGroup
}

// client is the per-connection state, kept in redcon's Conn context.
type client struct {
	id   int64
	name string
	// user is who the connection runs as, nil until it authenticates;
	// users is the set user was found in. After a reload user is looked
	// up again by name (currentUser).
	user  *acl.User
	users *acl.Users
	// authed is set by a successful AUTH: the connection no longer
	// follows the default user's state.
	authed bool
	tx     txState
	proto  resp.Proto // RESP2 until HELLO 3
	// list is what CLIENT LIST shows of it.
	list *listing
	// sub is the connection's pub/sub state and ob its ordered writer,
	// both nil until it first subscribes (pubsub.go, outbox.go).
	sub *subscriber
	ob  *outbox
	// monitoring is set by MONITOR (monitor.go).
	monitoring bool
	// req is the command being served: redcon serves a connection's
	// commands one at a time, and nothing keeps a request after it.
	req request
}

// New returns a server for engine e, or an error naming the first bad
// setting in cfg.
func New(cfg Config, e Engine) (*Server, error) {
	if err := cfg.Validate(e.MinTTL(), e.MaxTTL()); err != nil {
		return nil, err
	}
	s := &Server{e: e, obs: cfg.Observer, hub: cfg.PubSub, started: time.Now(), runID: newRunID(), stats: newStats(),
		refusedLog: ratelog.New("client refused", warnEvery), acceptLog: ratelog.New("accept failed", warnEvery)}
	cfg = cfg.WithDefaults()
	s.cfg.Store(&cfg)
	s.watches = newWatchSet()
	s.scripts = newScriptCache(e.Wrap)
	us, err := acl.New(cfg.acl())
	if err != nil {
		return nil, err
	}
	s.users.Store(us)
	s.rc = redcon.NewServerNetwork("tcp", "", s.serveRESP, s.accept, s.closed)
	return s, nil
}

// conf returns the config in force.
func (s *Server) conf() *Config { return s.cfg.Load() }

// Reload applies cfg to the running server: the users and the default
// user's password (each connection sees them from its next command; one
// whose user is gone must AUTH again), the framing limits (for
// connections accepted from now on), max_input_total (from the next
// reservation), max_clients, idle_timeout (from each connection's next
// wait), command_timeout, default_ttl, allow_force_del and the log; the
// observer and the pub/sub hub stay the ones New was given. The engine,
// and with it every safety setting, stays as it is. It returns an error
// naming the first bad setting, and then changes nothing.
func (s *Server) Reload(cfg Config) error {
	if err := cfg.Validate(s.e.MinTTL(), s.e.MaxTTL()); err != nil {
		return err
	}
	cfg = cfg.WithDefaults()
	us, err := acl.New(cfg.acl())
	if err != nil {
		return err
	}
	s.cfg.Store(&cfg)
	s.users.Store(us)
	if l := s.ln.Load(); l != nil {
		l.setLimits(cfg.Limits)
		l.budget.limit.Store(cfg.MaxInputTotal)
		l.idle.Store(int64(cfg.IdleTimeout))
	}
	return nil
}

// Serve accepts clients on ln until Close or Shutdown. Every byte a
// client sends passes the framing limits before redcon parses it; from a
// TLS listener (tls.NewListener), the decrypted bytes. Call it once.
func (s *Server) Serve(ln net.Listener) error {
	s.running.Add(1)
	defer s.running.Done()
	cfg := s.conf()
	o := guardOptions{
		lim:      cfg.Limits,
		needAuth: func() bool { return s.users.Load().Start() == nil },
		maxInput: cfg.MaxInputTotal,
		onAcceptError: func(err error, wait time.Duration) {
			s.acceptLog.Warn(s.conf().Log, "err", err, "retry_in", wait)
		},
	}
	if s.obs != nil {
		o.onViolation = s.obs.ProtocolError
	}
	gl := guardListener(ln, o)
	gl.idle.Store(int64(cfg.IdleTimeout))
	s.ln.Store(gl)
	return s.rc.Serve(gl)
}

// Drain starts a graceful shutdown: from now on new acquires are refused
// with a DRAINING error, while releases, extends and reads are served.
func (s *Server) Drain() { s.draining.Store(true) }

// Draining reports whether Drain or Shutdown was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// Clients returns how many client connections are open.
func (s *Server) Clients() int64 { return s.clients.Load() }

// Shutdown drains, stops accepting, and lets every connection finish
// the command it is running, reply, and close; it returns once Serve and
// every connection have finished. If ctx ends first, it closes whatever
// remains, as Close does, and returns ctx's error. Call it after Serve
// has started.
func (s *Server) Shutdown(ctx context.Context) error {
	s.Drain()
	l := s.ln.Load()
	if l == nil {
		return s.Close()
	}
	l.stop()
	done := make(chan struct{})
	go func() { // waited for below, in both branches
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		s.refusedLog.Stop()
		s.acceptLog.Stop()
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// currentUser returns who c runs as under the current users, or nil if
// it must authenticate.
func (s *Server) currentUser(c *client) *acl.User {
	us := s.users.Load()
	if c.users == us {
		return c.user
	}
	c.users = us
	if c.authed {
		c.user = us.Lookup(c.user.Name())
		c.authed = c.user != nil
	} else {
		c.user = us.Start() // follows the default user, as in Redis
	}
	return c.user
}

// Close stops accepting, closes every client connection, and returns once
// Serve and every connection have finished. Commands in flight finish on
// the nodes first; their replies are lost, and a lock they took expires
// with its TTL. Call it after Serve has started; Shutdown is the graceful
// way.
func (s *Server) Close() error {
	if l := s.ln.Load(); l != nil {
		l.abandon()
	}
	err := s.rc.Close()
	s.running.Wait()
	s.refusedLog.Stop()
	s.acceptLog.Stop()
	return err
}

func (s *Server) accept(conn redcon.Conn) bool {
	cfg := s.conf()
	if s.clients.Add(1) > int64(cfg.MaxClients) {
		s.clients.Add(-1)
		s.stats.rejectedCon.Add(1)
		// Written straight to the socket: redcon closes it unflushed.
		conn.NetConn().Write([]byte("-ERR max number of clients reached\r\n"))
		s.refusedLog.Warn(cfg.Log, "addr", conn.RemoteAddr(), "reason", "max_clients")
		if s.obs != nil {
			s.obs.ClientRejected()
		}
		return false
	}
	s.stats.connections.Add(1)
	us := s.users.Load()
	c := &client{id: s.nextID.Add(1), user: us.Start(), users: us, proto: resp.RESP2}
	now := time.Now()
	c.list = &listing{id: c.id, addr: conn.RemoteAddr(), laddr: conn.NetConn().LocalAddr().String(), nc: conn.NetConn(), since: now, last: now, cmd: "NULL"}
	s.listings.Store(c.id, c.list)
	conn.SetContext(c)
	s.running.Add(1) // Serve is running, so the count is above zero
	if s.obs != nil {
		s.obs.ClientConnected()
	}
	return true
}

func (s *Server) closed(conn redcon.Conn, err error) {
	defer s.running.Done()
	s.clients.Add(-1)
	if s.obs != nil {
		s.obs.ClientClosed()
	}
	if c, _ := conn.Context().(*client); c != nil {
		s.listings.Delete(c.id)
		c.tx.reset() // its WATCH ends
		s.stopMonitor(c)
		if c.sub != nil {
			c.sub.leave(s.hub)
		}
		if c.ob != nil {
			c.ob.close()
		}
	}
	if err != nil {
		s.conf().Log.Debug("client closed", "addr", conn.RemoteAddr(), "err", err)
	}
}

// request is one client command on its way through a handler.
type request struct {
	ctx  context.Context
	conn redcon.Conn
	c    *client
	args [][]byte // args[0] is the command name
	// name is args[0] in lower case, as Redis names the command in errors.
	name string
	// op is the lock operation the command runs, for the observer's
	// count of refusals: the table's, or what the handler found (a
	// script's, once classified); zero for none.
	op quorum.Op
	// closeAfter closes the connection once the reply is written.
	closeAfter bool
	// validity is what an acquire granted, for MONITOR; zero if none.
	validity time.Duration
	// sent says the handler queued its replies in the connection's
	// outbox itself (SUBSCRIBE confirms each channel apart), the last
	// one at last.
	sent bool
	last uint64
}

type command struct {
	arity  int  // > 0: exactly arity args; < 0: at least -arity
	noAuth bool // allowed before AUTH
	grants bool // may grant a lock: flush the reply at once
	// class is what a user must be allowed to run it; zero for the
	// connection commands, which every user may run.
	class acl.Class
	keys  keySpec // where its keys are, for the users' key patterns
	// op is the lock operation the command runs, known from its name
	// (a script's is known once it is classified): its refusals, from
	// arity on, are counted as that operation's.
	op quorum.Op
	// subs are a container command's subcommands (lower case) with their
	// arities, Redis 7.0's whole list, so that an unknown subcommand and a
	// wrong count get Redis's errors before the handler runs.
	subs    map[string]int
	handler func(s *Server, r *request) (resp.Reply, error)
}

// Subcommands and their arities, as Redis 7.0's COMMAND INFO lists them.
// CLIENT SETINFO is Redis 7.2's, which clients such as go-redis send.
var (
	clientSubs = map[string]int{
		"caching": 3, "getname": 2, "getredir": 2, "help": 2, "id": 2, "info": 2,
		"kill": -3, "list": -2, "no-evict": 3, "pause": -3, "reply": 3, "setname": 3,
		"tracking": -3, "trackinginfo": 2, "unblock": -3, "unpause": 2, "setinfo": 4,
		"no-touch": 3, // Redis 7.2's
	}
	scriptSubs = map[string]int{
		"debug": 3, "exists": -3, "flush": -2, "help": 2, "kill": 2, "load": 3,
	}
	functionSubs = map[string]int{
		"delete": 3, "dump": 2, "flush": -2, "help": 2, "kill": 2, "list": -2,
		"load": -3, "restore": -3, "stats": 2,
	}
	clusterSubs = map[string]int{
		"addslots": -3, "addslotsrange": -4, "bumpepoch": 2, "count-failure-reports": 3,
		"countkeysinslot": 3, "delslots": -3, "delslotsrange": -4, "failover": -2,
		"flushslots": 2, "forget": 3, "getkeysinslot": 4, "help": 2, "info": 2,
		"keyslot": 3, "links": 2, "meet": -4, "myid": 2, "nodes": 2, "replicas": 3,
		"replicate": 3, "reset": -2, "saveconfig": 2, "set-config-epoch": 3,
		"setslot": -4, "shards": 2, "slaves": 3, "slots": 2,
	}
)

// commands is the whole client surface of the proxy.
var commands = map[string]command{
	// Connection.
	"ping":   {arity: -1, handler: (*Server).ping},
	"echo":   {arity: 2, handler: (*Server).echo},
	"quit":   {arity: -1, noAuth: true, handler: (*Server).quit},
	"auth":   {arity: -2, noAuth: true, handler: (*Server).auth},
	"hello":  {arity: -1, noAuth: true, handler: (*Server).hello},
	"reset":  {arity: 1, noAuth: true, handler: (*Server).reset},
	"select": {arity: 2, handler: (*Server).selectDB},
	"client": {arity: -2, subs: clientSubs, handler: (*Server).clientCmd},
	// Cluster clients probe these and decide on Redis's exact text.
	"cluster":   {arity: -2, subs: clusterSubs, handler: (*Server).clusterCmd},
	"readonly":  {arity: 1, handler: (*Server).clusterCmd},
	"readwrite": {arity: 1, handler: (*Server).clusterCmd},
	"info":      {arity: -1, handler: (*Server).info},
	// Introspection for monitoring tools (introspect.go).
	"config":  {arity: -2, subs: configSubs, handler: (*Server).configCmd},
	"latency": {arity: -2, subs: latencySubs, handler: (*Server).latencyCmd},
	"role":    {arity: 1, handler: (*Server).role},
	"time":    {arity: 1, handler: (*Server).timeCmd},
	"dbsize":  {arity: 1, class: acl.Read, handler: (*Server).dbsize},
	"slowlog": {arity: -2, class: acl.Admin, subs: slowlogSubs, handler: (*Server).slowlogCmd},
	"monitor": {arity: 1, class: acl.Admin, handler: (*Server).monitorCmd},
	// "command" is added by command.go's init: it reads this table.
	// Locks.
	"set":    {arity: -3, grants: true, class: acl.Lock, keys: firstKey, op: quorum.OpAcquire, handler: (*Server).set},
	"get":    {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).get},
	"pttl":   {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).pttl},
	"ttl":    {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).ttl},
	"exists": {arity: -2, class: acl.Read, keys: everyArg, op: quorum.OpRead, handler: (*Server).exists},
	"del":    {arity: -2, class: acl.Admin, keys: everyArg, handler: (*Server).del},
	// Runbook reads (runbook.go).
	"scan":    {arity: -2, class: acl.Read, handler: (*Server).scan},
	"type":    {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).typeCmd},
	"hgetall": {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).hgetall},
	"hget":    {arity: 3, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).hget},
	"zrange":  {arity: -4, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).zrange},
	"object":  {arity: -2, class: acl.Read, keys: subKey, subs: objectSubs, op: quorum.OpRead, handler: (*Server).object},
	"strlen":  {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).strlen},
	"hlen":    {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).hlen},
	"zcard":   {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).zcard},
	// Redis 8.4's and Valkey's compare-and-delete and DIGEST (cas.go).
	"delex":   {arity: -2, class: acl.Lock, keys: firstKey, op: quorum.OpRelease, handler: (*Server).delex},
	"delifeq": {arity: 3, class: acl.Lock, keys: firstKey, op: quorum.OpRelease, handler: (*Server).delifeq},
	"digest":  {arity: 2, class: acl.Read, keys: firstKey, op: quorum.OpRead, handler: (*Server).digest},
	"eval":    {arity: -3, grants: true, class: acl.Lock, keys: scriptKeys, handler: (*Server).eval},
	"evalsha": {arity: -3, grants: true, class: acl.Lock, keys: scriptKeys, handler: (*Server).evalsha},
	"script":  {arity: -2, class: acl.Lock, subs: scriptSubs, handler: (*Server).script},
	// FUNCTION KILL only: clients run no functions through the proxy.
	"function": {arity: -2, class: acl.Lock, subs: functionSubs, handler: (*Server).function},
	// Fencing tokens and fence_keys counters (fence.go).
	"fence":  {arity: 3, grants: true, class: acl.Lock, keys: firstKey, handler: (*Server).fence},
	"incr":   {arity: 2, class: acl.Lock, keys: firstKey, handler: (*Server).incr},
	"incrby": {arity: 3, class: acl.Lock, keys: firstKey, handler: (*Server).incrby},
	// Pub/sub (pubsub.go).
	"subscribe":    {arity: -2, class: acl.Read, handler: (*Server).subscribe},
	"psubscribe":   {arity: -2, class: acl.Read, handler: (*Server).psubscribe},
	"unsubscribe":  {arity: -1, handler: (*Server).unsubscribe},
	"punsubscribe": {arity: -1, handler: (*Server).punsubscribe},
	"ssubscribe":   {arity: -2, class: acl.Read, handler: (*Server).ssubscribe},
	"sunsubscribe": {arity: -1, handler: (*Server).sunsubscribe},
	// Transactions (multi.go).
	"multi":   {arity: 1, handler: (*Server).multi},
	"exec":    {arity: 1, grants: true, handler: (*Server).exec},
	"discard": {arity: 1, handler: (*Server).discard},
	"watch":   {arity: -2, class: acl.Lock, keys: everyArg, handler: (*Server).watch},
	"unwatch": {arity: 1, handler: (*Server).unwatch},
}

// serveRESP is the redcon handler: look up, check arity and auth, run,
// reply.
func (s *Server) serveRESP(conn redcon.Conn, cmd redcon.Command) {
	name := commandName(cmd.Args[0])
	c, _ := conn.Context().(*client)
	if c == nil { // accept always sets it; keep a bad state from panicking
		c = &client{proto: resp.RESP2}
		conn.SetContext(c)
	}
	cm := commands[name]
	r := &c.req
	*r = request{conn: conn, c: c, args: cmd.Args, name: name, op: cm.op}
	defer func() { *r = request{} }() // keeps no command's arguments
	if err := s.admit(c, name, cmd.Args); err != nil {
		rep := s.errorReply(r, err)
		s.stats.rejected(statName(name, cmd.Args), rep)
		switch {
		case name == "exec":
			// As Redis: an EXEC refused before it runs (NOAUTH, arity)
			// discards the transaction, MULTI or not.
			c.tx.reset()
			rep = s.replyForError(name, &execAbortError{err})
		case c.tx.multi:
			c.tx.dirty = true // as Redis: EXEC will abort
		}
		s.send(conn, c, rep)
		return
	}
	if !subscribedOnly[name] && c.subscribed() {
		rep := s.errorReply(r, withArgs(errSubscribedMode, name))
		if name == "exec" { // as Redis: every refusal of EXEC discards
			c.tx.reset()
			rep = s.replyForError(name, &execAbortError{withArgs(errSubscribedMode, name)})
		}
		s.stats.rejected(statName(name, cmd.Args), rep)
		s.send(conn, c, rep)
		return
	}
	if c.tx.multi && !runsInMulti[name] {
		c.tx.queue(cmd.Args)
		s.send(conn, c, resp.Status("QUEUED"))
		return
	}
	start := time.Now() // one reading of the clock for all three
	if c.list != nil {
		c.list.saw(name, c, start)
	}
	cctx, cancel := newCmdContext(start, s.conf().CommandTimeout)
	defer cancel()
	var ctx context.Context = cctx
	defer func() {
		if p := recover(); p != nil {
			s.conf().Log.Error("panic in command", "cmd", name, "panic", p, "stack", string(debug.Stack()))
			s.send(conn, c, resp.Error("ERR internal error"))
			conn.Close()
		}
	}()
	if s.conf().Log.Enabled(ctx, slog.LevelDebug) { // spares the arguments' allocations
		s.conf().Log.Debug("command", "cmd", name, "args", len(cmd.Args)-1, "addr", conn.RemoteAddr())
	}
	var tr *quorum.Trace
	if cm.class != 0 && (s.nMonitors.Load() > 0 || s.conf().SlowlogSlowerThan >= 0) {
		// A command that may reach the nodes: what each did, for the slow
		// log and MONITOR.
		tr = cctx.trace(s.e.Nodes())
	}
	r.ctx = ctx
	rep, err := cm.handler(s, r)
	if err != nil {
		rep = s.errorReply(r, err)
	}
	took := time.Since(start)
	s.stats.ran(statName(name, cmd.Args), took, rep)
	s.record(r, done{name: name, args: cmd.Args, start: start, took: took, rep: rep, tr: tr, validity: r.validity})
	c.tx.observe(name, cmd.Args, rep)
	s.watches.touchWritten(name, cmd.Args, rep)
	if c.sub != nil && c.list != nil {
		c.list.subscribed(c.holdsTopics())
	}
	switch {
	case r.sent:
		c.ob.wait(r.last)
	case c.sub != nil:
		// HELLO may have switched the protocol: messages queued after
		// its reply follow the new one, those before keep the old one.
		c.ob.wait(c.sub.pushReply(rep, c.proto))
	default:
		s.send(conn, c, rep)
	}
	switch {
	case r.closeAfter:
		conn.Close() // flushes the reply first
	case cm.grants:
		// A grant's validity is already running: send it now rather than
		// after the rest of a pipelined batch.
		redcon.BaseWriter(conn).Flush()
	}
}

// commandName is b in lower case, A-Z only (ascii.Lower): Redis compares
// command names so (strcasecmp), so a name with a letter that lowers to
// ASCII only by Unicode's rules ("\u212Aeys", a Kelvin sign) is no
// command's. A name the proxy's tables know comes from them, without
// allocating a string for each command.
func commandName(b []byte) string {
	var buf [16]byte
	if len(b) > len(buf) {
		return ascii.Lower(b)
	}
	low := ascii.AppendLower(buf[:0], b)
	if name, ok := commandNames()[string(low)]; ok {
		return name
	}
	return string(low)
}

// commandNames maps each name of commands and queuedOnly to itself; built
// on first use, once every init has filled commands.
var commandNames = sync.OnceValue(func() map[string]string {
	m := make(map[string]string, len(commands)+len(queuedOnly))
	for name := range commands {
		m[name] = name
	}
	for name := range queuedOnly {
		m[name] = name
	}
	return m
})

// send writes rep to the client: into redcon's buffer or, once the
// connection has subscribed, through its outbox, waiting until it is
// written.
func (s *Server) send(conn redcon.Conn, c *client, rep resp.Reply) {
	if c.ob == nil {
		rep.WriteProto(conn, c.proto)
		return
	}
	c.ob.send(rep, c.proto)
}

// admit refuses a command the proxy does not know (or a subcommand), one
// with the wrong number of arguments, or one sent before AUTH, in Redis's
// order.
func (s *Server) admit(c *client, name string, args [][]byte) error {
	cm, ok := commands[name]
	if !ok && c.tx.multi {
		cm, ok = queuedOnly[name]
	}
	user := s.currentUser(c)
	switch {
	case !ok:
		return &unknownCommandError{args}
	case wrongArity(cm.arity, len(args)):
		return withArgs(errArity, name)
	case cm.subs != nil && len(args) > 1:
		sub := ascii.Lower(args[1])
		if a, known := cm.subs[sub]; !known {
			return withArgs(errUnknownSubcommand, cString(args[1], 128), ascii.Upper(name))
		} else if wrongArity(a, len(args)) {
			return withArgs(errArity, name+"|"+sub)
		}
	}
	if user == nil && !cm.noAuth {
		return errNoAuth
	}
	if err := s.counterRefusal(name, cm, args); err != nil {
		return err
	}
	if name == "del" && (c.tx.multi || unlockLatches(args[1:])) {
		// A transaction's DEL is a compare-and-delete (multi.go); an
		// unlock latch is part of Redisson's unlock (lock.go).
		cm.class = acl.Lock
	}
	if name == "delex" && len(args) == 2 && !unlockLatches(args[1:]) {
		cm.class = acl.Admin // DELEX key without a condition is DEL key
	}
	if err := permit(user, name, cm, args); err != nil {
		return err
	}
	return nil
}

func wrongArity(arity, n int) bool {
	return arity > 0 && n != arity || arity < 0 && n < -arity
}

// cString is b as Redis's C formatting prints it with "%.Ns": cut at the
// first NUL byte and at n bytes.
func cString(b []byte, n int) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return b[:min(len(b), max(n, 0))]
}
