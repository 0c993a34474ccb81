package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// One error path: a handler returns a reply or an error, and errorReply
// turns every error into its reply. Errors say what happened, as values
// (withArgs adds the ones a reply names); the words a client reads are
// written here only, in Redis's text where Redis has the error, with the
// command's own name.

// errRefused matches every refusal: a command answered with an error
// before any node saw it. resp's argument errors are refusals too.
var errRefused = errors.New("proxy: refused")

// refusal returns a refusal sentinel; errorTexts gives its reply.
func refusal(msg string) error { return fmt.Errorf("%w: %s", errRefused, msg) }

// isRefusal reports whether err is a refusal.
func isRefusal(err error) bool {
	return errors.Is(err, errRefused) || errors.Is(err, resp.ErrArgument)
}

// argsError is a sentinel with the values its reply names (a key, an
// option, a bound), in the order of its text's verbs.
type argsError struct {
	err  error
	args []any
}

// withArgs returns err with the values its reply names.
func withArgs(err error, args ...any) error { return &argsError{err, args} }

func (e *argsError) Error() string { return fmt.Sprint(e.err, e.args) }
func (e *argsError) Unwrap() error { return e.err }

// unknownCommandError refuses a command the proxy does not serve.
type unknownCommandError struct{ args [][]byte }

func (e *unknownCommandError) Error() string {
	return fmt.Sprintf("proxy: unknown command %q", e.args[0])
}
func (e *unknownCommandError) Unwrap() error { return errRefused }

// admitError refuses a script admission did not admit.
type admitError struct{ err error }

func (e *admitError) Error() string   { return "proxy: script not admitted: " + e.err.Error() }
func (e *admitError) Unwrap() []error { return []error{errRefused, e.err} }

// execAbortError is the refusal of an EXEC before it runs: err's.
type execAbortError struct{ err error }

func (e *execAbortError) Error() string { return "proxy: exec aborted: " + e.err.Error() }
func (e *execAbortError) Unwrap() error { return e.err }

// Refusals.
var (
	errNoAuth              = refusal("not authenticated")
	errNoPermission        = refusal("no permission for the command")
	errNoKeyPermission     = refusal("no permission for a key")
	errArity               = refusal("wrong number of arguments")
	errUnknownSubcommand   = refusal("unknown subcommand")
	errReservedKey         = refusal("a reserved key")
	errCounterKey          = refusal("a fence_keys counter named")
	errDraining            = refusal("draining")
	errNeedsTTL            = refusal("a lock without a ttl")
	errTTLUnder            = refusal("ttl under min_ttl")
	errTTLOver             = refusal("ttl over max_ttl")
	errTTLArgOver          = refusal("ttl argument over max_ttl")
	errForceDel            = refusal("del without allow_force_del")
	errNewToken            = refusal("a compare-and-set to a new token")
	errDelexCondition      = refusal("delex: unknown condition")
	errDelexNotEqual       = refusal("delex ifne or ifdne")
	errSetNotEqual         = refusal("set ifne or ifdne")
	errNoScript            = refusal("no script of that digest")
	errScriptNoKey         = refusal("a lock script without a key")
	errScriptManyKeys      = refusal("a one-key lock script with more keys")
	errScriptArgs          = refusal("a lock script with too few arguments")
	errPrefixLength        = refusal("a token length argument out of range")
	errUnsupportedScript   = refusal("a catalogue script the proxy does not run")
	errUnsupportedNamed    = refusal("a named catalogue script the proxy does not run")
	errRedissonType        = refusal("a refused redisson type's script")
	errRedissonLayout      = refusal("a redisson read-write lock script with another layout")
	errFencedLayout        = refusal("a redisson fenced lock script with another layout")
	errFencedTokenKey      = refusal("a redisson fenced lock's token named")
	errForceUnlock         = refusal("redisson forceUnlock without allow_force_del")
	errAdmitBusy           = refusal("every admission place taken")
	errScriptFlushOption   = refusal("script flush: unknown option")
	errInvalidCursor       = refusal("invalid scan cursor")
	errZrangeForm          = refusal("zrange by score, by lex, reversed or limited")
	errObjectSubcommand    = refusal("object subcommand not served")
	errFunctionSubcommand  = refusal("function subcommand not served")
	errConfigSubcommand    = refusal("config subcommand not served")
	errCommandSubcommand   = refusal("command subcommand not served")
	errCounterDown         = refusal("a counter increment below 1")
	errNestedMulti         = refusal("multi inside multi")
	errDiscardWithoutMulti = refusal("discard without multi")
	errExecWithoutMulti    = refusal("exec without multi")
	errWatchInMulti        = refusal("watch inside multi")
	errTxDirty             = refusal("exec after a refused command")
	errTxShape             = refusal("a transaction of another shape than a compare-and-delete or compare-and-pexpire")
	errSubscribedMode      = refusal("a command in subscribed mode")
	errNoPubSub            = refusal("pub/sub not configured")
	errAuthNoPassword      = refusal("auth without a password to check")
	errWrongPass           = refusal("wrong user or password")
	errProtoNotInteger     = refusal("hello: protocol version not an integer")
	errNoProto             = refusal("hello: unsupported protocol version")
	errHelloOption         = refusal("hello: unknown option")
	errHelloNoAuth         = refusal("hello: not authenticated")
	errBadClientName       = refusal("client name with spaces or special characters")
	errClientOption        = refusal("client setinfo: unknown option")
	errClientAttr          = refusal("client setinfo: a value with special characters")
	errClientType          = refusal("client list or kill: unknown client type")
	errClientID            = refusal("client list: invalid client id")
	errClientIDZero        = refusal("client kill: client id below 1")
	errNoSuchClient        = refusal("client kill: no such client")
	errNoSuchUser          = refusal("client kill: no such user")
	errDBIndex             = refusal("database index out of range")
	errDBZeroOnly          = refusal("a database other than 0")
	errClusterDisabled     = refusal("cluster command")
	errGetkeysCommand      = refusal("command getkeys: unknown command")
	errGetkeysArity        = refusal("command getkeys: wrong number of arguments")
	errGetkeysNoKeys       = refusal("command getkeys: a command without keys")
	errSlowlogCount        = refusal("slowlog get: count below -1")
	errNoSamples           = refusal("latency graph: no samples")
)

// errScriptWrongType is a key of another type met in a one-line script,
// as Redis words it: with the script's SHA-1 and its line.
var errScriptWrongType = errors.New("proxy: a script's call on a key of another type")

// Errors found once the nodes saw the command.
var (
	errWrongType = errors.New("proxy: key of another type")
	// errStringType is DELEX's and SET IFDEQ's wording of errWrongType.
	errStringType = errors.New("proxy: conditions on a key of another type")
	errEncodings  = errors.New("proxy: nodes report different encodings")
	errNotHeld    = errors.New("proxy: fence of a lock the token does not hold")
	// errBusy and errNotBusy: whether the nodes run a script, for a kill.
	errBusy    = errors.New("proxy: a node runs a script")
	errNotBusy = errors.New("proxy: no node runs a script")
)

// errorTexts are the replies of the sentinel errors: {cmd} is the
// command's name as Redis names it in an error, and fmt verbs take the
// values withArgs gave, in order.
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
	{errNoAuth, "NOAUTH Authentication required."},
	{errNoPermission, "NOPERM this user has no permissions to run the '%s' command"},
	{errNoKeyPermission, "NOPERM this user has no permissions to access one of the keys used as arguments"},
	{errArity, "ERR wrong number of arguments for '%s' command"},
	{errUnknownSubcommand, "ERR unknown subcommand '%s'. Try %s HELP."},
	{errReservedKey, "ERR key '%s' is reserved for redlock-proxy"},
	{errCounterKey, "ERR '%s' is a fence_keys counter: only INCR, INCRBY and GET may name it"},
	{errDraining, "DRAINING redlock-proxy is shutting down; acquire the lock through another proxy"},
	{errNeedsTTL, "ERR a lock needs a TTL: SET key token NX PX milliseconds (or set default_ttl)"},
	{errTTLUnder, "ERR invalid expire time in '{cmd}' command: %v is under min_ttl (%v)"},
	{errTTLOver, "ERR invalid expire time in '{cmd}' command: %v is over max_ttl (%v)"},
	{errTTLArgOver, "ERR invalid expire time in '{cmd}' command: %d%s is over max_ttl (%v)"},
	{errForceDel, "ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use"},
	{errNewToken, "ERR SET IFEQ with a new token is refused by redlock-proxy: a lock's token never changes; extend with SET key token IFEQ token PX milliseconds"},
	{errDelexCondition, "ERR Invalid condition. Use IFEQ, IFNE, IFDEQ, or IFDNE"},
	{errDelexNotEqual, "ERR DELEX %s is refused by redlock-proxy: it deletes a lock held under another token; release with DELEX key IFEQ token"},
	{errSetNotEqual, "ERR SET %s is refused by redlock-proxy: it would overwrite a lock held under another token; extend with SET key token IFEQ token PX milliseconds"},
	{errNoScript, "NOSCRIPT No matching script. Please use EVAL."},
	{errScriptNoKey, "ERR a lock script needs at least one key"},
	{errScriptManyKeys, "ERR this lock script takes exactly one key"},
	{errScriptArgs, "ERR this lock script needs %d arguments after its keys"},
	{errPrefixLength, "ERR the token length argument must be an integer from 0 to the token's length"},
	{errUnsupportedScript, "ERR unsupported script: redlock-proxy runs recognised lock scripts only (see its README)"},
	{errUnsupportedNamed, "ERR unsupported script (%s): redlock-proxy runs recognised lock scripts only"},
	{errRedissonType, "ERR unsupported script: Redisson's %s is not served: %s (see the README, Redisson)"},
	{errRedissonLayout, "ERR Redisson's %s is served only as Redisson calls it: %s"},
	{errFencedLayout, "ERR Redisson's RFencedLock lock is served only as Redisson calls it: %s"},
	{errFencedTokenKey, "ERR '%s' is an RFencedLock's token counter: only GET (getToken), INCR, INCRBY and the lock's scripts may name it"},
	{errForceUnlock, "ERR Redisson's forceUnlock is refused: it deletes every holder's lock; release with unlock, or set allow_force_del for admin use"},
	{errAdmitBusy, "ERR unsupported script: the proxy is busy admitting other scripts; try again"},
	{errScriptFlushOption, "ERR SCRIPT FLUSH only support SYNC|ASYNC option"},
	{errInvalidCursor, "ERR invalid cursor"},
	{errZrangeForm, "ERR redlock-proxy serves ZRANGE key start stop [WITHSCORES] only"},
	{errObjectSubcommand, "ERR OBJECT %s is not supported: each node keeps its own"},
	{errFunctionSubcommand, "ERR FUNCTION %s is not supported: redlock-proxy runs scripts by EVAL and EVALSHA only"},
	{errConfigSubcommand, "ERR CONFIG %s is not supported: redlock-proxy reads its settings from config.toml (SIGHUP reloads it)"},
	{errCommandSubcommand, "ERR COMMAND %s is not supported by redlock-proxy"},
	{errCounterDown, "ERR a fence_keys counter only grows: the increment must be above 0"},
	{quorum.ErrOverflow, "ERR increment or decrement would overflow"},
	{errNestedMulti, "ERR MULTI calls can not be nested"},
	{errDiscardWithoutMulti, "ERR DISCARD without MULTI"},
	{errExecWithoutMulti, "ERR EXEC without MULTI"},
	{errWatchInMulti, "ERR WATCH inside MULTI is not allowed"},
	{errTxDirty, "EXECABORT Transaction discarded because of previous errors."},
	{errTxShape, "EXECABORT Transaction discarded: redlock-proxy runs a transaction only as WATCH key, GET key, MULTI, DEL key or PEXPIRE key ms, EXEC (a compare-and-delete or compare-and-pexpire)"},
	{errSubscribedMode, "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"},
	{errNoPubSub, "ERR pub/sub is not configured on this redlock-proxy"},
	{errAuthNoPassword, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"},
	{errWrongPass, "WRONGPASS invalid username-password pair or user is disabled."},
	{errProtoNotInteger, "ERR Protocol version is not an integer or out of range"},
	{errNoProto, "NOPROTO unsupported protocol version"},
	{errHelloOption, "ERR Syntax error in HELLO option '%s'"},
	{errHelloNoAuth, "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"},
	{errBadClientName, "ERR Client names cannot contain spaces, newlines or special characters."},
	{errClientOption, "ERR Unrecognized option '%s'"},
	{errClientAttr, "ERR %s cannot contain spaces, newlines or special characters."},
	{errClientType, "ERR Unknown client type '%.64s'"},
	{errClientID, "ERR Invalid client ID"},
	{errClientIDZero, "ERR client-id should be greater than 0"},
	{errNoSuchClient, "ERR No such client"},
	{errNoSuchUser, "ERR No such user '%.64s'"},
	{errDBIndex, "ERR DB index is out of range"},
	{errDBZeroOnly, "ERR DB index is out of range: redlock-proxy serves database 0 only"},
	{errClusterDisabled, "ERR This instance has cluster support disabled"},
	{errGetkeysCommand, "ERR Invalid command specified"},
	{errGetkeysArity, "ERR Invalid number of arguments specified for command"},
	{errGetkeysNoKeys, "ERR The command has no key arguments"},
	{errSlowlogCount, "ERR count should be greater than or equal to -1"},
	{errNoSamples, "ERR No samples available for event '%s'"},
	{errWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	{errStringType, "ERR Key should be of string type if conditions are specified"},
	{errScriptWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value script: %s, on @user_script:1."},
	{errEncodings, "ERR the nodes that hold the key report different encodings"},
	{errNotHeld, "NOTHELD the lock '%s' is not held by this token (or its validity ran out)"},
	{errLate, "ERR quorum: denied: validity expired before the reply"},
	{errBusy, "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."},
	{errNotBusy, "NOTBUSY No scripts in execution right now."},
}

// errorReply is the one path every error takes to the client: it counts
// a lock command's refusal for the metrics (r.op), logs any other error
// at Debug (during an outage every request fails, and the engine's
// monitor logs each node's state once instead), and returns
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
	var (
		abort       *execAbortError
		oe          *quorum.OutcomeError
		nodeRefused *quorum.RefusedError
		unknown     *unknownCommandError
		admit       *admitError
		sr          *script.Refusal
	)
	switch {
	case errors.As(err, &abort): // before its cause's own text
		cause := s.replyForError(cmd, abort.err)
		return resp.Error("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(cause.Text(), "ERR "))
	case errors.Is(err, quorum.ErrOverMaxTTL): // a denial, but not "taken"
		return resp.Error(fmt.Sprintf("ERR invalid expire time in '%s' command: the extended TTL would be over max_ttl (%v)", cmd, s.e.MaxTTL()))
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable) && oe.Quarantined > 0:
		return resp.Error(fmt.Sprintf("NOQUORUM %v; %d needed, and quarantined grants do not count (see INFO)", oe.Outcome, quorum.Quorum(oe.Total)))
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable) && oe.Unseeded > 0:
		return resp.Error(fmt.Sprintf("NOQUORUM %v; %d needed, and masters whose counters were lost do not count until seeded again", oe.Outcome, quorum.Quorum(oe.Total)))
	case errors.As(err, &oe) && errors.Is(err, quorum.ErrUnavailable):
		return resp.Error(fmt.Sprintf("NOQUORUM %v; %d needed", oe.Outcome, quorum.Quorum(oe.Total)))
	case errors.As(err, &oe) && oe.Expired:
		return s.replyForError(cmd, errLate) // granted everywhere, but too late: one text
	case errors.Is(err, context.DeadlineExceeded):
		return resp.Error("NOQUORUM command timed out")
	case errors.As(err, &nodeRefused):
		return resp.Error("ERR script refused: " + nodeRefused.Reason + "; nothing of it was kept")
	case errors.As(err, &unknown):
		return unknownCommand(unknown.args)
	case errors.As(err, &admit) && errors.As(admit.err, &sr) && sr.Compile:
		return resp.Error(sr.CompileError()) // Redis's own, where Lua 5.1 would not compile it either
	case errors.As(err, &admit):
		return resp.Error("ERR unsupported script: " + admit.err.Error())
	}
	for _, t := range errorTexts {
		if errors.Is(err, t.err) {
			var ae *argsError
			if !errors.As(err, &ae) || len(ae.args) == 0 {
				return resp.Error(strings.ReplaceAll(t.text, "{cmd}", cmd))
			}
			return resp.Error(fmt.Sprintf(strings.ReplaceAll(t.text, "{cmd}", strings.ReplaceAll(cmd, "%", "%%")), ae.args...))
		}
	}
	return resp.Error("ERR " + err.Error())
}

// unknownCommand is Redis's reply to a command it does not know, with the
// first arguments quoted as Redis quotes them.
func unknownCommand(args [][]byte) resp.Reply {
	low := ascii.Lower(args[0])
	if why, ok := unsupported[low]; ok {
		msg := fmt.Sprintf("ERR '%s' is not supported: redlock-proxy serves lock commands only", low)
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
