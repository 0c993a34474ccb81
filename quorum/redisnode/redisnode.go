package redisnode

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// NodeOptions are the settings for a real Redis node.
type NodeOptions struct {
	Username, Password string // AUTH for the node; empty means none
	// PoolSize caps connections to the node. If zero, 65536 is used: the
	// lock operations share one connection, and go-redis stops dialing a
	// node for a second at a time once PoolSize dials have failed, which
	// would hold back a node that is up again (the breaker decides when to
	// retry instead).
	PoolSize int
	// TLS, if set, is used for every connection to the node. If its
	// ServerName is empty, the node's host as written in addr is
	// verified. Nil means plain TCP.
	TLS *tls.Config
	// Log gets what the node refuses of the proxy's setup (functions);
	// nil logs nothing.
	Log *slog.Logger
	// NoFunctions runs wrapped scripts as scripts from the start, on a
	// node known to have no functions (the embedded demo nodes).
	NoFunctions bool
}

// redisNode is a Node backed by one go-redis client.
type redisNode struct {
	addr string
	c    *redis.Client // for one-off commands
	p    *pipeline     // the lock operations, on a connection of its own
	lp   *pipeline     // the writes that may land late (pipeline.late)
	// user, pass and tls are how p's connections log in (dial).
	user, pass string
	tls        *tls.Config
	// onRunID, once the engine watches, gets each new connection's run_id
	// (probe.go).
	onRunID atomic.Pointer[func(runID string)]
	// noClientID is set once the node refused CLIENT ID (logged once).
	noClientID atomic.Bool
	// reveals is set while the node's last INFO (a probe's, or a new
	// connection's) reads Redis 7.0 or later, whose SET takes NX with
	// GET: a plain acquire then says what a key it denies holds.
	reveals atomic.Bool
	log     *slog.Logger
}

// NewRedisNode returns the Node for the Redis master at addr. The go-redis
// settings that safety depends on are fixed here and nowhere else.
func NewRedisNode(addr string, opts NodeOptions) quorum.Node {
	if opts.PoolSize == 0 {
		opts.PoolSize = 1 << 16
	}
	n := &redisNode{addr: addr}
	var tlsConfig *tls.Config
	if opts.TLS != nil {
		tlsConfig = opts.TLS.Clone()
		if tlsConfig.ServerName == "" {
			tlsConfig.ServerName, _, _ = net.SplitHostPort(addr)
		}
	}
	n.c = redis.NewClient(&redis.Options{
		TLSConfig: tlsConfig,
		Addr:      addr,
		Username:  opts.Username,
		Password:  opts.Password,
		PoolSize:  opts.PoolSize,
		Protocol:  2, // plain RESP2 replies; nothing here needs RESP3
		// A retried SET NX could read our own first write as "held".
		MaxRetries: -1,
		// Otherwise the per-node deadline never reaches the socket, and a
		// frozen node costs go-redis's own 3s read timeout.
		ContextTimeoutEnabled: true,
		DialTimeout:           time.Second,
		// One dial per attempt: go-redis would otherwise retry a refused
		// dial 5 times, 100ms apart, inside the node's deadline.
		DialerRetries:   1,
		DisableIdentity: true, // keeps the masters' MONITOR readable
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
		// Each new connection reports the node's run_id before its first
		// command, so a restart is seen before a grant from it can count.
		OnConnect: n.connected,
	})
	n.user, n.pass, n.tls = opts.Username, opts.Password, tlsConfig
	n.log = opts.Log
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	n.p = newPipeline(addr, n.dial, opts.Log)
	n.p.noFunctions.Store(opts.NoFunctions)
	n.lp = newPipeline(addr, n.dial, opts.Log)
	n.lp.late = true
	n.lp.noFunctions.Store(opts.NoFunctions)
	return n
}

func (n *redisNode) Addr() string { return n.addr }

func (n *redisNode) Close() error {
	n.p.close()
	n.lp.close()
	return n.c.Close()
}

func (n *redisNode) DropConnection() {
	n.p.stale.Store(true)
	n.lp.stale.Store(true)
}

// The node-side scripts. Each runs atomically on one node; KEYS are the
// lock's keys and ARGV[1] its token.

// acquireScript sets every key to ARGV[1] with TTL ARGV[2] ms, unless one
// exists, and returns 1; if it set none, 0, or with ARGV[3] = 0 what it
// reveals of the keys (the token if one holds it, else ""), as SET NX GET
// does of one. With ARGV[3] > 0 a key whose value starts with the first
// ARGV[3] bytes of the token does not count as existing: the acquire takes it again (a re-entry), keeping its TTL
// where that is longer (or none), and then returns, per key, 0 for a key
// taken free or {value, pttl} of the key taken again, so that a failed
// acquire can set that earlier grant back (undo). A master whose answer
// is lost is not undone: the TTL kept there is what keeps the earlier
// grant whole. A granted re-entry keeps the longer TTL too (Acquire).
var acquireScript = newScript(`
local n, px = tonumber(ARGV[3]), tonumber(ARGV[2])
local before, again = {}, false
for i, key in ipairs(KEYS) do
  before[i] = 0
  if redis.call("exists", key) == 1 then
    if n == 0 then
      for _, k in ipairs(KEYS) do
        if redis.call("type", k).ok == "string" and redis.call("get", k) == ARGV[1] then
          return ARGV[1]
        end
      end
      return ""
    end
    if redis.call("getrange", key, 0, n - 1) ~= string.sub(ARGV[1], 1, n) then
      return 0
    end
    before[i] = {redis.call("get", key), redis.call("pttl", key)}
    again = true
  end
end
for i, key in ipairs(KEYS) do
  local left = before[i] ~= 0 and before[i][2] or 0
  if left < 0 then
    redis.call("set", key, ARGV[1])
  else
    redis.call("set", key, ARGV[1], "PX", math.max(px, left))
  end
end
if again then
  return before
end
return 1
`)

// lateCheck begins each owner-checked lock write script (undo, release,
// extend): its last ARGV is the last millisecond on the node's clock at
// which the write may take effect, untilWidth digits (0: no limit). Past
// it the script does nothing and answers LATE: its proxy has given up on
// it, and the client, told so, may have taken the key again through
// another proxy, which this write would undo (attack17 F4). TIME before
// a write needs effects replication, Redis 5's default and Redis 7's only
// way: replicas and the AOF get the writes, not the script.
const lateCheck = `
do
  local last = tonumber(ARGV[#ARGV])
  if last > 0 then
    local t = redis.call("time")
    if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > last then
      return redis.error_reply("LATE the proxy gave up on this lock write before it ran")
    end
  end
end
`

// untilWidth is the width of a lock write's deadline field (lateCheck):
// fixed, so that a fan-out encodes the command once and writes each
// node's own deadline into its copy (putUntil). 13 digits of
// milliseconds reach the year 2286.
const untilWidth = 13

// noUntil is the deadline field of no limit; noUntilArg is it as an
// argument, made once (a fan-out's, patched per node).
const noUntil = "0000000000000"

var noUntilArg any = noUntil

// untilArg is the deadline field of ms: the last millisecond on the
// node's clock at which a write may take effect, 0 for no limit.
func untilArg(ms int64) string {
	if ms <= 0 {
		return noUntil
	}
	b := []byte(noUntil)
	putDigits(b, ms)
	return string(b)
}

// putUntil writes ms into cmd's deadline field, its last argument.
func putUntil(cmd []byte, ms int64) {
	putDigits(cmd[len(cmd)-2-untilWidth:len(cmd)-2], max(ms, 0))
}

// putDigits writes ms into d in decimal, zero-padded; one too large for
// d (past the year 2286) is all nines.
func putDigits(d []byte, ms int64) {
	for i := len(d) - 1; i >= 0; i-- {
		d[i] = byte('0' + ms%10)
		ms /= 10
	}
	if ms > 0 {
		for i := range d {
			d[i] = '9'
		}
	}
}

// undoScript gives back what an acquire of KEYS with token ARGV[1] took.
// ARGV[1+i] is key i's earlier TTL in ms, or "" for a key taken free, and
// ARGV[1+n+i] its earlier value (n keys). A key that still holds the
// token is deleted, with its fencing record (as releaseScript does), or,
// taken again, set back: with no expiry for a TTL below 0, else with the
// longer of the TTL it had when taken (at least 1ms) and the one it has
// now. That TTL ran on since, so the key is restored a little longer than
// it was: the safe direction, as the holder's validity counts from its own
// acquire. The TTL it has now may be another acquire's of the same token,
// through another proxy, told to its client: never shortened (attack16
// R2). It returns how many keys it gave back. Its last ARGV is its
// deadline (lateCheck).
var undoScript = newScript(lateCheck + `
local n, done = #KEYS, 0
for i, key in ipairs(KEYS) do
  if redis.call("get", key) == ARGV[1] then
    local pttl = ARGV[1 + i]
    if pttl == "" then
      redis.call("del", key, "` + quorum.HoldPrefix + `" .. key)
    else
      local now = redis.call("pttl", key)
      if tonumber(pttl) < 0 or now < 0 then
        redis.call("set", key, ARGV[1 + n + i])
      else
        redis.call("set", key, ARGV[1 + n + i], "PX", math.max(tonumber(pttl), now, 1))
      end
    end
    done = done + 1
  end
end
return done
`)

// releaseScript deletes every key that holds ARGV[1], and returns per key
// 1 (deleted), 0 (another token) or -1 (missing). ARGV[2] is its deadline
// (lateCheck).
var releaseScript = newScript(lateCheck + `
local found = {}
for i, key in ipairs(KEYS) do
  local v = redis.call("get", key)
  if v == ARGV[1] then
    -- The hold's fencing record (fence.go) ends with it: a later hold
    -- with the same token is another hold.
    redis.call("del", key, "` + quorum.HoldPrefix + `" .. key)
    found[i] = 1
  elseif v == false then
    found[i] = -1
  else
    found[i] = 0
  end
end
return found
`)

// extendScript gives every key TTL ARGV[2] ms if all hold ARGV[1]. ARGV[3]
// is the mode: "set", "add" (to the remaining TTL) or "acquire" (a
// missing key is set too). It returns the shortest TTL set, or 0; or -1
// when in "add" mode a TTL would pass ARGV[4] ms (if above zero). ARGV[5]
// is its deadline (lateCheck).
var extendScript = newScript(lateCheck + `
local mode = ARGV[3]
local limit = tonumber(ARGV[4])
for _, key in ipairs(KEYS) do
  local v = redis.call("get", key)
  if v ~= ARGV[1] and not (mode == "acquire" and v == false) then
    return 0
  end
  if mode == "add" then
    local left = redis.call("pttl", key)
    if left < 0 then
      return 0
    end
    if limit > 0 and left + tonumber(ARGV[2]) > limit then
      return -1
    end
  end
end
local least = 0
for _, key in ipairs(KEYS) do
  local ttl = tonumber(ARGV[2])
  if mode == "add" then
    ttl = ttl + redis.call("pttl", key)
  end
  if redis.call("exists", key) == 0 then
    redis.call("set", key, ARGV[1], "PX", ttl)
  else
    redis.call("pexpire", key, ttl)
    -- A fenced hold's record (fence.go) lives as long as the hold.
    redis.call("pexpire", "` + quorum.HoldPrefix + `" .. key, ttl)
  end
  if least == 0 or ttl < least then
    least = ttl
  end
end
return least
`)

// inspectScript returns the key's value (nil if missing) and its PTTL;
// for a key of another type (a Redisson hash, a Symfony sorted set), a
// one-item array naming the type instead of the value.
var inspectScript = newScript(`
local t = redis.call("type", KEYS[1])["ok"]
if t == "string" or t == "none" then
  return {redis.call("get", KEYS[1]), redis.call("pttl", KEYS[1])}
end
return {{t}, redis.call("pttl", KEYS[1])}
`)

var modeArg = map[quorum.ExtendMode]string{quorum.ExtendSet: "set", quorum.ExtendAdd: "add", quorum.ExtendOrAcquire: "acquire"}

func (n *redisNode) Acquire(ctx context.Context, l quorum.Lock, ttl time.Duration) (quorum.Acquired, error) {
	return runCall(ctx, n.p, pipeAcquire(l, ttl, n.reveals.Load()))
}

// pipeAcquire is Acquire as the pipeline runs it; with reveal, a plain
// one-key acquire is SET NX GET (Redis 7.0 on), whose denial says what
// the key holds. acquireScript's denial of a plain acquire always does.
func pipeAcquire(l quorum.Lock, ttl time.Duration, reveal bool) quorum.Call[quorum.Acquired] {
	px := ttl.Milliseconds()
	// PrefixLen re-enters only when above zero; a negative one would turn
	// on Lua's negative string indexes.
	prefixLen := max(l.PrefixLen, 0)
	if len(l.Keys) == 1 && prefixLen == 0 {
		// PX always goes out, so Redis refuses a TTL under 1ms as the
		// script does: SetArgs drops a TTL <= 0 and would set a key that
		// never expires.
		if reveal {
			return plainCall(appendSetNX(l.Keys[0], l.Token, px, true), setNXGetAnswer)
		}
		return plainCall(appendSetNX(l.Keys[0], l.Token, px, false), setNXAnswer)
	}
	if len(l.Keys) == 1 {
		return scriptCall(acquireScript, l.Keys, []any{l.Token, px, prefixLen}, acquireOneAnswer) // no closure to allocate
	}
	keys := len(l.Keys)
	return scriptCall(acquireScript, l.Keys, []any{l.Token, px, prefixLen}, func(v any, err error) (quorum.Acquired, error) {
		return acquireAnswer(v, err, keys)
	})
}

// setNXAnswer is setNXResult of a SET NX PX reply.
func setNXAnswer(_ any, err error) (quorum.Acquired, error) {
	ok, err := setNXResult(err)
	return quorum.Acquired{Granted: ok}, err
}

// setNXGetAnswer is the node's answer to SET NX PX GET: a nil reply
// granted (the key was free, and is set), a value denied and revealed. A
// key of another type answers WRONGTYPE, which is a denial too, as SET
// NX's nil there: it holds no token.
func setNXGetAnswer(v any, err error) (quorum.Acquired, error) {
	switch {
	case errors.Is(err, redis.Nil):
		return quorum.Acquired{Granted: true}, nil
	case err != nil && redis.HasErrorPrefix(err, "WRONGTYPE"):
		return quorum.Acquired{Revealed: true}, nil
	case err != nil:
		return quorum.Acquired{}, err
	}
	held, ok := v.(string)
	if !ok {
		return quorum.Acquired{}, fmt.Errorf("set nx get replied %T", v)
	}
	return quorum.Acquired{Revealed: true, Held: held}, nil
}

// acquireOneAnswer is acquireAnswer for one key.
func acquireOneAnswer(v any, err error) (quorum.Acquired, error) { return acquireAnswer(v, err, 1) }

// acquireAnswer turns acquireScript's reply for keys keys into the node's
// answer: 0 denied, 1 granted, or granted with a re-entry, one item per
// key, 0 (taken free) or {value, pttl} (taken again, at least one); a
// string, a plain acquire denied and revealed (the token where a key
// holds it, else ""). Any other reply is an error, never a grant.
func acquireAnswer(v any, err error, keys int) (quorum.Acquired, error) {
	if err != nil {
		return quorum.Acquired{}, err
	}
	switch v := v.(type) {
	case string:
		return quorum.Acquired{Revealed: true, Held: v}, nil
	case int64:
		switch v {
		case 0:
			return quorum.Acquired{}, nil
		case 1:
			return quorum.Acquired{Granted: true}, nil
		}
		return quorum.Acquired{}, fmt.Errorf("acquire replied unknown code %d", v)
	case []any:
		if len(v) != keys {
			return quorum.Acquired{}, fmt.Errorf("acquire replied %d items for %d keys", len(v), keys)
		}
		before := make([]quorum.Entry, keys)
		again := false
		for i, it := range v {
			if code, ok := it.(int64); ok && code == 0 {
				continue // taken free
			}
			pair, ok := it.([]any)
			if !ok || len(pair) != 2 {
				return quorum.Acquired{}, fmt.Errorf("acquire replied %v for a key taken again", it)
			}
			val, ok := pair[0].(string)
			pttl, ok2 := pair[1].(int64)
			if !ok || !ok2 || pttl < -1 {
				return quorum.Acquired{}, fmt.Errorf("acquire replied %v for a key taken again", it)
			}
			before[i] = quorum.Entry{Present: true, Token: val, TTL: time.Duration(pttl) * time.Millisecond}
			again = true
		}
		if !again {
			return quorum.Acquired{}, errors.New("acquire replied no key taken again")
		}
		return quorum.Acquired{Granted: true, Before: before}, nil
	default:
		return quorum.Acquired{}, fmt.Errorf("acquire replied %T", v)
	}
}

// Undo runs undoScript. As Release, it is an acquire's give-back and sends
// the script's body.
func (n *redisNode) Undo(ctx context.Context, l quorum.Lock, before []quorum.Entry, until int64) (int, error) {
	c := pipeUndo(l, before, until)
	c.Command = quorum.Command{Cmd: body(&c.Command)}
	return runCall(ctx, n.p, c)
}

// pipeUndo is Undo as the pipeline runs it.
func pipeUndo(l quorum.Lock, before []quorum.Entry, until int64) quorum.Call[int] {
	args := make([]any, 2+2*len(l.Keys))
	args[0] = l.Token
	for i := range l.Keys {
		pttl, old := "", ""
		if i < len(before) && before[i].Present {
			pttl, old = "-1", before[i].Token
			if before[i].TTL >= 0 {
				pttl = strconv.FormatInt(before[i].TTL.Milliseconds(), 10)
			}
		}
		args[1+i], args[1+len(l.Keys)+i] = pttl, old
	}
	args[len(args)-1] = untilArg(until)
	c := scriptCall(undoScript, l.Keys, args, undoAnswer)
	c.Command.Dated = true
	return c
}

// undoAnswer turns undoScript's reply into how many keys it gave back.
func undoAnswer(v any, err error) (int, error) {
	if err != nil {
		return 0, err
	}
	i, err := int64Reply(v)
	return int(i), err
}

// appendSetNX is SET key token PX px NX, encoded, and with get, GET.
func appendSetNX(key, token string, px int64, get bool) []byte {
	b := make([]byte, 0, 72+len(key)+len(token))
	if get {
		b = wire.AppendArray(b, 7)
	} else {
		b = wire.AppendArray(b, 6)
	}
	b = wire.AppendBulk(b, "set")
	b = wire.AppendBulk(b, key)
	b = wire.AppendBulk(b, token)
	b = wire.AppendBulk(b, "px")
	b = wire.AppendBulkInt(b, px)
	b = wire.AppendBulk(b, "nx")
	if get {
		b = wire.AppendBulk(b, "get")
	}
	return b
}

// int64Reply is v as an integer reply.
func int64Reply(v any) (int64, error) {
	i, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("replied %T where an integer was due", v)
	}
	return i, nil
}

// setNXResult turns a SET NX PX reply into the node's answer.
func setNXResult(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil // +OK: the key is ours
	case errors.Is(err, redis.Nil):
		return false, nil // nil reply: someone holds the key
	default:
		return false, err // error reply, timeout or I/O failure
	}
}

// Release runs releaseScript. Called alone it is an acquire's give-back
// (the fan-out pipelines the release itself): it sends the script's
// body, not its digest, so that a node without the script cached runs it
// however late its replies come; a NOSCRIPT read past the deadline would
// leave the take there.
func (n *redisNode) Release(ctx context.Context, l quorum.Lock, until int64) ([]quorum.Found, error) {
	c := pipeRelease(l, untilArg(until))
	c.Command = quorum.Command{Cmd: body(&c.Command)}
	return runCall(ctx, n.p, c)
}

// pipeRelease is Release as the pipeline runs it, until its deadline
// field.
func pipeRelease(l quorum.Lock, until any) quorum.Call[[]quorum.Found] {
	keys := len(l.Keys)
	var c quorum.Call[[]quorum.Found]
	if keys == 1 {
		c = scriptCall(releaseScript, l.Keys, []any{l.Token, until}, releaseOneAnswer) // no closure to allocate
	} else {
		c = scriptCall(releaseScript, l.Keys, []any{l.Token, until}, func(v any, err error) ([]quorum.Found, error) {
			return releaseAnswer(v, err, keys)
		})
	}
	c.Command.Dated = true
	return c
}

// releaseOneAnswer is releaseAnswer for one key.
func releaseOneAnswer(v any, err error) ([]quorum.Found, error) { return releaseAnswer(v, err, 1) }

// releaseAnswer turns releaseScript's reply for keys keys into the node's
// answer.
func releaseAnswer(v any, err error, keys int) ([]quorum.Found, error) {
	if err != nil {
		return nil, err
	}
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("release replied %T", v)
	}
	return foundResult(items, keys)
}

// oneFound are the answers of a release of one key, by code+1, shared:
// a node's answer is only read.
var oneFound = [3][]quorum.Found{{quorum.FoundMissing}, {quorum.FoundOther}, {quorum.FoundDeleted}}

// foundResult checks a release script's reply: one known code per key.
func foundResult(items []any, keys int) ([]quorum.Found, error) {
	if len(items) != keys {
		return nil, fmt.Errorf("release replied %d codes for %d keys", len(items), keys)
	}
	var found []quorum.Found
	if keys != 1 {
		found = make([]quorum.Found, keys)
	}
	for i, it := range items {
		v, err := int64Reply(it)
		if err != nil {
			return nil, err
		}
		switch quorum.Found(v) {
		case quorum.FoundDeleted, quorum.FoundOther, quorum.FoundMissing:
			if keys == 1 {
				return oneFound[v+1], nil
			}
			found[i] = quorum.Found(v)
		default:
			return nil, fmt.Errorf("release replied unknown code %d", v)
		}
	}
	return found, nil
}

func (n *redisNode) Extend(ctx context.Context, l quorum.Lock, ttl time.Duration, mode quorum.ExtendMode, limit time.Duration, until int64) (time.Duration, error) {
	return runCall(ctx, n.p, pipeExtend(l, ttl, mode, limit, untilArg(until)))
}

// pipeExtend is Extend as the pipeline runs it, until its deadline field.
func pipeExtend(l quorum.Lock, ttl time.Duration, mode quorum.ExtendMode, limit time.Duration, until any) quorum.Call[time.Duration] {
	c := scriptCall(extendScript, l.Keys, []any{l.Token, ttl.Milliseconds(), modeArg[mode], limit.Milliseconds(), until}, extendAnswer)
	c.Command.Dated = true
	return c
}

// extendAnswer turns extendScript's reply into the node's answer.
func extendAnswer(v any, err error) (time.Duration, error) {
	if err != nil {
		return 0, err
	}
	ms, err := int64Reply(v)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (n *redisNode) Inspect(ctx context.Context, key string) (quorum.Entry, error) {
	return evalSlice(ctx, n.p, entryResult, inspectScript, []string{key})
}

// entryResult turns the inspect script's {value, pttl} reply into an Entry.
func entryResult(vals []any) (quorum.Entry, error) {
	if len(vals) != 2 {
		return quorum.Entry{}, fmt.Errorf("inspect replied %d values", len(vals))
	}
	pttl, ok := vals[1].(int64)
	if !ok {
		return quorum.Entry{}, fmt.Errorf("inspect replied pttl %T", vals[1])
	}
	switch v := vals[0].(type) {
	case nil:
		return quorum.Entry{}, nil
	case string:
		return quorum.Entry{Present: true, Token: v, TTL: time.Duration(pttl) * time.Millisecond}, nil
	case []any:
		if t, ok := v[0].(string); ok && len(v) == 1 {
			return quorum.Entry{Present: true, Type: t, TTL: time.Duration(pttl) * time.Millisecond}, nil
		}
		return quorum.Entry{}, fmt.Errorf("inspect replied type %v", v)
	default:
		return quorum.Entry{}, fmt.Errorf("inspect replied value %T", v)
	}
}

// deleteScript is DEL of KEYS, with each key's fencing record (fence.go):
// a later hold of the key, even by the same token, is another hold.
var deleteScript = newScript(`
local n = 0
for _, key in ipairs(KEYS) do
  n = n + redis.call("del", key)
  redis.call("del", "` + quorum.HoldPrefix + `" .. key)
end
return n
`)

func (n *redisNode) Delete(ctx context.Context, keys []string) (int, error) {
	cmd, err := n.p.eval(ctx, deleteScript, keys)
	if err != nil {
		return 0, err
	}
	v, err := cmd.Int64()
	return int(v), err
}
