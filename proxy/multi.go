package proxy

import (
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// A transaction is served only in the shape StackExchange.Redis's
// LockRelease and LockExtend send: WATCH key, GET key, MULTI, one DEL key
// or PEXPIRE key ms (EXPIRE key s for whole seconds), EXEC. EXEC runs it
// as a compare-and-delete or compare-and-pexpire over the quorum, with the
// token that GET returned: the watched key "changed" exactly when that
// token no longer holds it on a quorum. Any other body is refused at EXEC
// and nothing reaches a node.

// txState is a connection's WATCH and MULTI state.
type txState struct {
	watching bool
	key      string // the watched key
	many     bool   // WATCH named more than one key: not served
	seen     bool   // GET key ran after WATCH, outside MULTI
	held     bool   // and found the key held, by token
	token    string
	touched  bool   // this connection wrote the key after WATCH
	w        *watch // the watch other connections' writes mark
	multi    bool
	dirty    bool       // a command was refused while queuing: EXEC aborts
	queued   [][][]byte // commands queued since MULTI, copied
}

// reset ends the transaction and forgets every watch, as EXEC, DISCARD
// and UNWATCH do.
func (tx *txState) reset() {
	tx.w.release()
	*tx = txState{}
}

// queue stores a copy of args: redcon reuses its read buffer.
func (tx *txState) queue(args [][]byte) {
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	tx.queued = append(tx.queued, cp)
}

// queuedOnly are the commands accepted only inside MULTI, as a
// transaction's body; EXEC decides whether it can run them.
var queuedOnly = map[string]command{
	"pexpire": {arity: -3, class: acl.Lock, keys: firstKey},
	"expire":  {arity: -3, class: acl.Lock, keys: firstKey},
}

// runsInMulti lists the commands that run at once inside MULTI; every
// other command is queued.
var runsInMulti = map[string]bool{"exec": true, "discard": true, "multi": true, "watch": true, "quit": true, "reset": true}

// observe records what a command run outside MULTI tells about the
// watched key: the token a GET of it returned, or a write of it by this
// connection (which makes Redis's EXEC fail).
func (tx *txState) observe(name string, args [][]byte, rep resp.Reply) {
	if !tx.watching || tx.multi || rep.IsError() {
		return
	}
	switch name {
	case "get":
		if string(args[1]) == tx.key {
			tx.seen, tx.held, tx.token = true, !rep.IsNull(), rep.Text()
		}
	case "set", "del", "delex", "delifeq", "eval", "evalsha":
		for _, k := range writtenKeys(name, args) {
			if string(k) == tx.key {
				tx.touched = true
			}
		}
	}
}

// writtenKeys returns the keys a lock write names.
func writtenKeys(name string, args [][]byte) [][]byte {
	switch name {
	case "set", "delex", "delifeq":
		return args[1:2]
	case "del":
		return args[1:]
	}
	n, err := resp.Numkeys(args[2], len(args)-3)
	if err != nil {
		return nil
	}
	return args[3 : 3+n]
}

// MULTI
func (s *Server) multi(r *request) (resp.Reply, error) {
	if r.c.tx.multi {
		return resp.Reply{}, errNestedMulti
	}
	r.c.tx.multi = true
	return resp.OK(), nil
}

// DISCARD
func (s *Server) discard(r *request) (resp.Reply, error) {
	if !r.c.tx.multi {
		return resp.Reply{}, errDiscardWithoutMulti
	}
	r.c.tx.reset()
	return resp.OK(), nil
}

// WATCH key [key ...]
func (s *Server) watch(r *request) (resp.Reply, error) {
	tx := &r.c.tx
	if tx.multi {
		return resp.Reply{}, errWatchInMulti
	}
	for _, k := range r.args[1:] {
		switch {
		case !tx.watching:
			tx.watching, tx.key = true, string(k)
			tx.w = s.watches.add(tx.key)
		case string(k) != tx.key:
			tx.many = true
		}
	}
	return resp.OK(), nil
}

// UNWATCH
func (s *Server) unwatch(r *request) (resp.Reply, error) {
	r.c.tx.reset() // outside MULTI: inside it UNWATCH is queued
	return resp.OK(), nil
}

// EXEC
func (s *Server) exec(r *request) (resp.Reply, error) {
	tx := r.c.tx
	if !tx.multi {
		return resp.Reply{}, errExecWithoutMulti
	}
	// The watch stays until this EXEC is done: another EXEC of the key
	// must see its write.
	r.c.tx.w = nil
	defer tx.w.release()
	r.c.tx.reset()
	switch {
	case tx.dirty:
		return resp.Reply{}, errTxDirty
	case len(tx.queued) == 0:
		return resp.Array(), nil
	case len(tx.queued) != 1 || !tx.watching || tx.many || !tx.seen:
		return resp.Reply{}, errTxShape
	}
	cmd := tx.queued[0]
	name := ascii.Lower(cmd[0])
	var ttl time.Duration
	switch {
	case name == "del" && len(cmd) == 2:
	case (name == "pexpire" || name == "expire") && len(cmd) == 3:
		d, err := s.expireTTL(name, cmd[2])
		if err != nil {
			// Redis queues it and reports the error inside EXEC's reply,
			// in the queued command's name.
			return resp.Array(s.replyForError(name, err)), nil
		}
		ttl = d
	default:
		return resp.Reply{}, errTxShape
	}
	if string(cmd[1]) != tx.key {
		return resp.Reply{}, errTxShape
	}
	if err := reservedKeys(cmd[1:2]); err != nil {
		return resp.Reply{}, err
	}
	// One EXEC of the key at a time, as one Redis runs them: the first
	// one's write must fail the next.
	tx.w.wk.exec.Lock()
	defer tx.w.wk.exec.Unlock()
	if tx.touched || tx.w.touched.Load() {
		return resp.NullArray(), nil // a connection wrote the watched key
	}
	if !tx.held {
		return s.execOnFree(r, tx.key)
	}
	l := quorum.Lock{Keys: []string{tx.key}, Token: tx.token}
	if name == "del" {
		rel, err := s.e.Release(r.ctx, l)
		switch {
		case err != nil:
			return resp.Reply{}, err
		case rel.Keys == 1:
			s.watches.touch(tx.key, tx.w)
			return resp.Array(resp.Int(1)), nil
		}
		return resp.NullArray(), nil // the token no longer holds the key
	}
	err := s.extended(s.e.Extend(r.ctx, l, ttl))
	if err == nil {
		s.watches.touch(tx.key, tx.w)
	}
	return s.outcome(err, resp.Array(resp.Int(1)), resp.NullArray())
}

// execOnFree answers a transaction whose GET found the key free: Redis
// would run DEL or PEXPIRE on a missing key (0), unless the key was taken
// since, which aborts EXEC.
func (s *Server) execOnFree(r *request, key string) (resp.Reply, error) {
	st, err := s.e.Inspect(r.ctx, key)
	switch {
	case err != nil:
		return resp.Reply{}, err
	case st.Held:
		return resp.NullArray(), nil
	}
	return resp.Array(resp.Int(0)), nil
}

// expireTTL reads PEXPIRE's milliseconds or EXPIRE's seconds as a TTL
// within the engine's bounds.
func (s *Server) expireTTL(name string, arg []byte) (time.Duration, error) {
	if name == "pexpire" {
		return s.parseMillis(arg)
	}
	secs, ok := resp.ParseInt(arg)
	switch {
	case !ok:
		return 0, resp.ErrNotInteger
	case secs <= 0:
		return 0, resp.ErrExpireTime
	case secs > int64(s.e.MaxTTL()/time.Second): // before multiplying: no overflow
		return 0, withArgs(errTTLArgOver, secs, "s", s.e.MaxTTL())
	}
	ttl := time.Duration(secs) * time.Second
	return ttl, s.checkTTL(ttl)
}
