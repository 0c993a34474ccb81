package proxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// One error path: a handler returns a reply or an error, and errorReply
// turns every error into its reply. Errors say what happened, as values;
// the words a client reads are written here only, in Redis's text where
// Redis has the error, with the command's own name.

// errRefused matches every refusal: a command answered with an error
// before any node saw it. resp's argument errors are refusals too.
var errRefused = errors.New("proxy: refused")

// refusal returns a refusal sentinel; errorTexts gives its reply.
func refusal(msg string) error { return fmt.Errorf("%w: %s", errRefused, msg) }

// isRefusal reports whether err is a refusal.
func isRefusal(err error) bool {
	return errors.Is(err, errRefused) || errors.Is(err, resp.ErrArgument)
}

// Refusals without arguments.
var (
	errDraining       = refusal("draining")
	errNoAuth         = refusal("not authenticated")
	errNeedsTTL       = refusal("a lock without a ttl")
	errForceDel       = refusal("del without allow_force_del")
	errNewToken       = refusal("a compare-and-set to a new token")
	errDelexCondition = refusal("delex: unknown condition")
	errNoScript       = refusal("no script of that digest")
	errScriptNoKey    = refusal("a lock script without a key")
	errScriptManyKeys = refusal("a one-key lock script with more keys")
	errPrefixLength   = refusal("a token length argument out of range")
	errAdmitBusy      = refusal("every admission place taken")
	errInvalidCursor  = refusal("invalid scan cursor")
	errZrangeForm     = refusal("zrange by score, by lex, reversed or limited")
	errCounterDown    = refusal("a counter increment below 1")
	// Transactions (multi.go).
	errNestedMulti         = refusal("multi inside multi")
	errDiscardWithoutMulti = refusal("discard without multi")
	errExecWithoutMulti    = refusal("exec without multi")
	errWatchInMulti        = refusal("watch inside multi")
	errTxDirty             = refusal("exec after a refused command")
	errTxShape             = refusal("a transaction of another shape than a compare-and-delete or compare-and-pexpire")
	errScriptFlushOption   = refusal("script flush: unknown option")
	// Connection and introspection commands.
	errAuthNoPassword  = refusal("auth without a password to check")
	errWrongPass       = refusal("wrong user or password")
	errProtoNotInteger = refusal("hello: protocol version not an integer")
	errNoProto         = refusal("hello: unsupported protocol version")
	errHelloNoAuth     = refusal("hello: not authenticated")
	errBadClientName   = refusal("client name with spaces or special characters")
	errDBIndex         = refusal("database index out of range")
	errDBZeroOnly      = refusal("a database other than 0")
	errClusterDisabled = refusal("cluster command")
	errClientID        = refusal("client list: invalid client id")
	errClientIDZero    = refusal("client kill: client id below 1")
	errNoSuchClient    = refusal("client kill: no such client")
	errGetkeysCommand  = refusal("command getkeys: unknown command")
	errGetkeysArity    = refusal("command getkeys: wrong number of arguments")
	errGetkeysNoKeys   = refusal("command getkeys: a command without keys")
	errSlowlogCount    = refusal("slowlog get: count below -1")
	errNoPubSub        = refusal("pub/sub not configured")
)

// Errors found by reading the key, after the nodes saw the command.
var (
	errWrongType = errors.New("proxy: key of another type")
	// errStringType is DELEX's and SET IFDEQ's wording of errWrongType.
	errStringType = errors.New("proxy: conditions on a key of another type")
	errEncodings  = errors.New("proxy: nodes report different encodings")
)

// errorTexts are the replies of the sentinel errors; {cmd} is the
// command's name as Redis names it in an error.
var errorTexts = []struct {
	err  error
	text string
}{
	{resp.ErrNotInteger, "ERR value is not an integer or out of range"},
	{resp.ErrSyntax, "ERR syntax error"},
	{resp.ErrExpireTime, "ERR invalid expire time in '{cmd}' command"},
	{resp.ErrSetNotLock, "ERR redlock-proxy only takes locks: use SET key token NX PX milliseconds (or EX seconds)"},
	{resp.ErrSetOption, "ERR redlock-proxy does not support XX, GET or KEEPTTL: a lock is SET key token NX PX milliseconds"},
	{resp.ErrNumkeysOver, "ERR Number of keys can't be greater than number of args"},
	{resp.ErrNumkeysNegative, "ERR Number of keys can't be negative"},
	{resp.ErrDigestLength, "ERR must be exactly 16 hexadecimal characters"},
	{errDraining, "DRAINING redlock-proxy is shutting down; acquire the lock through another proxy"},
	{errNoAuth, "NOAUTH Authentication required."},
	{errNeedsTTL, "ERR a lock needs a TTL: SET key token NX PX milliseconds (or set default_ttl)"},
	{errForceDel, "ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use"},
	{errNewToken, "ERR SET IFEQ with a new token is refused by redlock-proxy: a lock's token never changes; extend with SET key token IFEQ token PX milliseconds"},
	{errDelexCondition, "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE"},
	{errNoScript, "NOSCRIPT No matching script. Please use EVAL."},
	{errScriptNoKey, "ERR a lock script needs at least one key"},
	{errScriptManyKeys, "ERR this lock script takes exactly one key"},
	{errPrefixLength, "ERR the token length argument must be an integer from 0 to the token's length"},
	{errAdmitBusy, "ERR unsupported script: the proxy is busy admitting other scripts; try again"},
	{errInvalidCursor, "ERR invalid cursor"},
	{errZrangeForm, "ERR redlock-proxy serves ZRANGE key start stop [WITHSCORES] only"},
	{errCounterDown, "ERR a fence_keys counter only grows: the increment must be above 0"},
	{errNestedMulti, "ERR MULTI calls can not be nested"},
	{errDiscardWithoutMulti, "ERR DISCARD without MULTI"},
	{errExecWithoutMulti, "ERR EXEC without MULTI"},
	{errWatchInMulti, "ERR WATCH inside MULTI is not allowed"},
	{errTxDirty, "EXECABORT Transaction discarded because of previous errors."},
	{errTxShape, "EXECABORT Transaction discarded: redlock-proxy runs a transaction only as WATCH key, GET key, MULTI, DEL key or PEXPIRE key ms, EXEC (a compare-and-delete or compare-and-pexpire)"},
	{errScriptFlushOption, "ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
	{errAuthNoPassword, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
	{errWrongPass, "WRONGPASS invalid username-password pair or user is disabled."},
	{errProtoNotInteger, "ERR Protocol version is not an integer or out of range"},
	{errNoProto, "NOPROTO unsupported protocol version"},
	{errHelloNoAuth, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
	{errBadClientName, "ERR Client names cannot contain spaces, newlines or special characters."},
	{errDBIndex, "ERR DB index is out of range"},
	{errDBZeroOnly, "ERR DB index is out of range: redlock-proxy serves database 0 only"},
	{errClusterDisabled, "ERR This instance has cluster support disabled"},
	{errClientID, "ERR Invalid client ID"},
	{errClientIDZero, "ERR client-id should be greater than 0"},
	{errNoSuchClient, "ERR No such client"},
	{errGetkeysCommand, "ERR Invalid command specified"},
	{errGetkeysArity, "ERR Invalid number of arguments specified for command"},
	{errGetkeysNoKeys, "ERR The command has no key arguments"},
	{errSlowlogCount, "ERR count should be greater than or equal to -1"},
	{errNoPubSub, "ERR pub/sub is not configured on this redlock-proxy"},
	{errWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{errStringType, "ERR Key should be of string type if conditions are specified"},
	{errEncodings, "ERR the nodes that hold the key report different encodings"},
}

// Refusals with arguments. Each unwraps to errRefused.
type (
	// reservedKeyError refuses one of the proxies' own keys (quorum.Reserved).
	reservedKeyError struct{ key []byte }
	// ttlError refuses a TTL outside [min_ttl, max_ttl].
	ttlError struct {
		ttl, bound time.Duration
		over       bool
	}
	// ttlArgError refuses a TTL argument over max_ttl, before it is
	// multiplied out: n in unit ("ms" or "s").
	ttlArgError struct {
		n    int64
		unit string
		max  time.Duration
	}
	// arityError refuses a wrong number of arguments to cmd ("container|sub"
	// for a subcommand).
	arityError struct{ cmd string }
	// unknownCommandError refuses a command the proxy does not serve.
	unknownCommandError struct{ args [][]byte }
	// unknownSubcommandError refuses a subcommand the container does not have.
	unknownSubcommandError struct{ container, sub []byte }
	// permissionError refuses a command (or a key, if key) to a user,
	// as Redis 7.0's NOPERM.
	permissionError struct {
		cmd string
		key bool
	}
	// counterKeyError refuses a command naming a fence_keys counter.
	counterKeyError struct{ key []byte }
	// conditionError refuses a DELEX or SET condition (IFNE, IFDNE) that
	// would delete or overwrite a lock held under another token.
	conditionError struct{ cmd, cond string }
	// scriptArgsError refuses a lock script call with fewer than need
	// arguments after its keys.
	scriptArgsError struct{ need int }
	// unsupportedScriptError refuses a catalogue script that is not a lock
	// operation the proxy runs; name is the catalogue's, "" if none.
	unsupportedScriptError struct{ name string }
	// redissonError refuses a Redisson type's script (redisson.go).
	redissonError struct{ typ string }
	// admitError refuses a script admission did not admit.
	admitError struct{ err error }
	// execAbortError is the refusal of an EXEC before it runs: err's.
	execAbortError struct{ err error }
	// subscribedModeError refuses cmd on a subscribed RESP2 connection.
	subscribedModeError struct{ cmd string }
	// helloOptionError, clientOptionError, clientAttrError,
	// clientTypeError and noSamplesError refuse an argument of HELLO,
	// CLIENT SETINFO, CLIENT LIST or KILL and LATENCY GRAPH.
	helloOptionError  struct{ opt []byte }
	clientOptionError struct{ opt []byte }
	clientAttrError   struct{ attr string }
	clientTypeError   struct{ typ []byte }
	noSamplesError    struct{ event []byte }
	// notHeldError is FENCE's denial: the token does not hold key.
	notHeldError struct{ key []byte }
	// unsupportedError refuses a subcommand the proxy does not serve, of a
	// container in unsupportedWhy.
	unsupportedError struct {
		cmd string
		sub []byte
	}
)

// unsupportedWhy says, by container, why its other subcommands are not
// served.
var unsupportedWhy = map[string]string{
	"OBJECT":   " is not supported: each node keeps its own",
	"FUNCTION": " is not supported: redlock-proxy runs scripts by EVAL and EVALSHA only",
	"CONFIG":   " is not supported: redlock-proxy reads its settings from config.toml (SIGHUP reloads it)",
	"COMMAND":  " is not supported by redlock-proxy",
}

func (e *reservedKeyError) Error() string { return fmt.Sprintf("proxy: key %q is reserved", e.key) }
func (e *ttlError) Error() string         { return fmt.Sprintf("proxy: ttl %v out of range", e.ttl) }
func (e *ttlArgError) Error() string      { return fmt.Sprintf("proxy: ttl %d%s over max_ttl", e.n, e.unit) }
func (e *arityError) Error() string       { return "proxy: wrong number of arguments for " + e.cmd }
func (e *unknownCommandError) Error() string {
	return fmt.Sprintf("proxy: unknown command %q", e.args[0])
}
func (e *unknownSubcommandError) Error() string {
	return fmt.Sprintf("proxy: unknown subcommand %q of %s", e.sub, e.container)
}
func (e *permissionError) Error() string        { return "proxy: no permission for " + e.cmd }
func (e *counterKeyError) Error() string        { return fmt.Sprintf("proxy: %q is a counter", e.key) }
func (e *conditionError) Error() string         { return "proxy: " + e.cmd + " " + e.cond + " refused" }
func (e *scriptArgsError) Error() string        { return "proxy: a lock script with too few arguments" }
func (e *unsupportedScriptError) Error() string { return "proxy: unsupported script " + e.name }
func (e *redissonError) Error() string          { return "proxy: unsupported script: Redisson's " + e.typ }
func (e *admitError) Error() string             { return "proxy: script not admitted: " + e.err.Error() }
func (e *execAbortError) Error() string         { return "proxy: exec aborted: " + e.err.Error() }
func (e *subscribedModeError) Error() string    { return "proxy: " + e.cmd + " in subscribed mode" }
func (e *helloOptionError) Error() string       { return fmt.Sprintf("proxy: hello option %q", e.opt) }
func (e *clientOptionError) Error() string {
	return fmt.Sprintf("proxy: client setinfo option %q", e.opt)
}
func (e *clientAttrError) Error() string {
	return "proxy: client setinfo " + e.attr + " with special characters"
}
func (e *clientTypeError) Error() string { return fmt.Sprintf("proxy: client type %q", e.typ) }
func (e *noSamplesError) Error() string  { return fmt.Sprintf("proxy: no samples of %q", e.event) }
func (e *notHeldError) Error() string    { return fmt.Sprintf("proxy: %q not held by the token", e.key) }
func (e *unsupportedError) Error() string {
	return fmt.Sprintf("proxy: %s %q not supported", e.cmd, e.sub)
}

func (e *reservedKeyError) Unwrap() error       { return errRefused }
func (e *ttlError) Unwrap() error               { return errRefused }
func (e *ttlArgError) Unwrap() error            { return errRefused }
func (e *arityError) Unwrap() error             { return errRefused }
func (e *unknownCommandError) Unwrap() error    { return errRefused }
func (e *unknownSubcommandError) Unwrap() error { return errRefused }
func (e *permissionError) Unwrap() error        { return errRefused }
func (e *counterKeyError) Unwrap() error        { return errRefused }
func (e *conditionError) Unwrap() error         { return errRefused }
func (e *scriptArgsError) Unwrap() error        { return errRefused }
func (e *unsupportedScriptError) Unwrap() error { return errRefused }
func (e *redissonError) Unwrap() error          { return errRefused }
func (e *admitError) Unwrap() []error           { return []error{errRefused, e.err} }
func (e *execAbortError) Unwrap() error         { return e.err }
func (e *unsupportedError) Unwrap() error       { return errRefused }
func (e *subscribedModeError) Unwrap() error    { return errRefused }
func (e *helloOptionError) Unwrap() error       { return errRefused }
func (e *clientOptionError) Unwrap() error      { return errRefused }
func (e *clientAttrError) Unwrap() error        { return errRefused }
func (e *clientTypeError) Unwrap() error        { return errRefused }
func (e *noSamplesError) Unwrap() error         { return errRefused }

// errorReply is the one path every error takes to the client: it counts
// a lock command's refusal for the metrics (r.op), logs an undecided
// operation at Debug (during an outage every request fails, and the
// engine's monitor logs each node's state once instead), and returns
// replyForError's reply.
func (s *Server) errorReply(r *request, err error) resp.Reply {
	switch {
	case !isRefusal(err):
		s.conf().Log.Debug("command failed", "cmd", r.name, "err", err)
	case r.op != 0 && s.obs != nil:
		s.obs.Refused(r.op)
	}
	return s.replyForError(r.name, err)
}

// replyForError is how err looks on the wire, for command cmd. An outage
// is an error that counts the nodes' answers (granted, denied, failed)
// and the grants needed, never a nil.
func (s *Server) replyForError(cmd string, err error) resp.Reply {
	var execAbort *execAbortError
	switch {
	case errors.As(err, &execAbort): // before the cause's own text
		inner := s.replyForError(cmd, execAbort.err)
		return resp.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(inner.Text(), "ERR "))
	case errors.Is(err, quorum.ErrOverMaxTTL): // whatever else the nodes said
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: the extended TTL would be over max_ttl (%v)", cmd, s.e.MaxTTL()))
	}
	for _, t := range errorTexts {
		if errors.Is(err, t.err) {
			return resp.Error(strings.ReplaceAll(t.text, "{cmd}", cmd))
		}
	}
	var (
		oe          *quorum.OutcomeError
		nodeRefused *quorum.RefusedError
		reserved    *reservedKeyError
		ttl         *ttlError
		ttlArg      *ttlArgError
		arity       *arityError
		unknown     *unknownCommandError
		unknownSub  *unknownSubcommandError
		perm        *permissionError
		counter     *counterKeyError
		cond        *conditionError
		scriptArgs  *scriptArgsError
		unsupported *unsupportedScriptError
		redisson    *redissonError
		admit       *admitError
		unsub       *unsupportedError
		notHeld     *notHeldError
		subscribed  *subscribedModeError
		helloOpt    *helloOptionError
		clientOpt   *clientOptionError
		clientAttr  *clientAttrError
		clientType  *clientTypeError
		noSamples   *noSamplesError
	)
	switch {
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable) && oe.Quarantined > 0:
		return resp.Error(fmt.Sprintf("NOQUORUM %v; %d needed, and quarantined grants do not count (see INFO)", oe.Outcome, quorum.Quorum(oe.Total)))
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable):
		return resp.Error(fmt.Sprintf("NOQUORUM %v; %d needed", oe.Outcome, quorum.Quorum(oe.Total)))
	case errors.Is(err, context.DeadlineExceeded):
		return resp.Error("NOQUORUM command timed out")
	case errors.As(err, &nodeRefused):
		return resp.Error("ERR script refused: " + nodeRefused.Reason + "; nothing of it was kept")
	case errors.As(err, &reserved):
		return resp.Error("ERR key '" + string(cString(reserved.key, 128)) + "' is reserved for redlock-proxy")
	case errors.As(err, &ttl) && ttl.over:
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: %v is over max_ttl (%v)", cmd, ttl.ttl, ttl.bound))
	case errors.As(err, &ttl):
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: %v is under min_ttl (%v)", cmd, ttl.ttl, ttl.bound))
	case errors.As(err, &ttlArg):
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: %d%s is over max_ttl (%v)", cmd, ttlArg.n, ttlArg.unit, ttlArg.max))
	case errors.As(err, &arity):
		return resp.Error("ERR wrong number of arguments for '" + arity.cmd + "' command")
	case errors.As(err, &unknown):
		return unknownCommand(unknown.args)
	case errors.As(err, &unknownSub):
		return resp.Error(fmt.Sprintf("ERR unknown subcommand '%s'. Try %s HELP.", cString(unknownSub.sub, 128), strings.ToUpper(string(unknownSub.container))))
	case errors.As(err, &perm) && perm.key:
		return resp.Error("NOPERM this user has no permissions to access one of the keys used as arguments")
	case errors.As(err, &perm):
		return resp.Error("NOPERM this user has no permissions to run the '" + perm.cmd + "' command")
	case errors.As(err, &counter):
		return resp.Error(fmt.Sprintf("ERR '%s' is a fence_keys counter: only INCR, INCRBY and GET may name it", cString(counter.key, 128)))
	case errors.As(err, &cond) && cond.cmd == "DELEX":
		return resp.Error("ERR DELEX " + cond.cond + " is refused by redlock-proxy: it deletes a lock held under another token; release with DELEX key IFEQ token")
	case errors.As(err, &cond):
		return resp.Error("ERR SET " + cond.cond + " is refused by redlock-proxy: it would overwrite a lock held under another token; extend with SET key token IFEQ token PX milliseconds")
	case errors.As(err, &scriptArgs):
		return resp.Error("ERR this lock script needs " + strconv.Itoa(scriptArgs.need) + " arguments after its keys")
	case errors.As(err, &unsupported) && unsupported.name != "":
		return resp.Error("ERR unsupported script (" + unsupported.name + "): redlock-proxy runs recognised lock scripts only")
	case errors.As(err, &unsupported):
		return resp.Error("ERR unsupported script: redlock-proxy runs recognised lock scripts only (see its README)")
	case errors.As(err, &redisson):
		return resp.Error("ERR unsupported script: Redisson's " + redisson.typ + " is not served: " + redissonWhy[redisson.typ] + " (see the README, Redisson)")
	case errors.As(err, &notHeld):
		return resp.Error(fmt.Sprintf("NOTHELD the lock '%s' is not held by this token (or its validity ran out)", cString(notHeld.key, 128)))
	case errors.As(err, &subscribed):
		return resp.Error(fmt.Sprintf("ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context", subscribed.cmd))
	case errors.As(err, &helloOpt):
		return resp.Error(fmt.Sprintf("ERR Syntax error in HELLO option '%s'", helloOpt.opt))
	case errors.As(err, &clientOpt):
		return resp.Error(fmt.Sprintf("ERR Unrecognized option '%s'", clientOpt.opt))
	case errors.As(err, &clientAttr):
		return resp.Error("ERR " + clientAttr.attr + " cannot contain spaces, newlines or special characters.")
	case errors.As(err, &clientType):
		return resp.Error(fmt.Sprintf("ERR Unknown client type '%.64s'", clientType.typ))
	case errors.As(err, &noSamples):
		return resp.Error("ERR No samples available for event '" + string(noSamples.event) + "'")
	case errors.As(err, &unsub):
		return resp.Error("ERR " + unsub.cmd + " " + strings.ToUpper(string(unsub.sub)) + unsupportedWhy[unsub.cmd])
	case errors.As(err, &admit):
		// Redis's own compile error where Lua 5.1 would not compile it either.
		var sr *script.Refusal
		if errors.As(admit.err, &sr) && sr.Compile {
			return resp.Error(sr.CompileError())
		}
		return resp.Error("ERR unsupported script: " + admit.err.Error())
	}
	return resp.Error("ERR " + err.Error())
}

// unknownCommand is Redis's reply to a command it does not know, with the
// first arguments quoted as Redis quotes them.
func unknownCommand(args [][]byte) resp.Reply {
	name := string(args[0])
	if why, ok := unsupported[strings.ToLower(name)]; ok {
		msg := fmt.Sprintf("ERR '%s' is not supported: redlock-proxy serves lock commands only", strings.ToLower(name))
		if why != "" {
			msg += " (" + why + ")"
		}
		return resp.Error(msg)
	}
	// Redis quotes arguments until the list reaches 128 bytes, each cut
	// to what is left of that budget.
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", cString(a, 128-b.Len()))
	}
	return resp.Error(fmt.Sprintf("ERR unknown command '%s', with args beginning with: %s", cString(args[0], 128), b.String()))
}
