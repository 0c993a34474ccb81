package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// TestErrorReply: every kind of error gets its reply, in the command's
// own name, and a lock command's refusal is counted as its operation's.
func TestErrorReply(t *testing.T) {
	nodeErr := &quorum.NodeError{Node: 2, Addr: "127.0.0.1:7003", Err: context.DeadlineExceeded}
	tests := []struct {
		name    string
		cmd     string
		op      quorum.Op
		err     error
		want    string
		counted bool
	}{
		{"unavailable", "set", quorum.OpAcquire, &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 5, Granted: 1, Denied: 1, Failed: 3}, Unavailable: true, Failures: nodeErr},
			"NOQUORUM 1 granted, 1 denied, 3 failed of 5 nodes; 3 needed", false},
		{"wrapped unavailable", "get", quorum.OpRead, fmt.Errorf("x: %w", &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Failed: 3}, Unavailable: true}),
			"NOQUORUM 0 granted, 0 denied, 3 failed of 3 nodes; 2 needed", false},
		{"quarantined grant", "set", quorum.OpAcquire, &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Granted: 1, Denied: 1, Quarantined: 1}, Unavailable: true},
			"NOQUORUM 1 granted, 1 quarantined, 1 denied, 0 failed of 3 nodes; 2 needed, and quarantined grants do not count (see INFO)", false},
		{"counters not seeded", "fence", 0, &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Granted: 1, Failed: 1, Unseeded: 1}, Unavailable: true},
			"NOQUORUM 1 granted, 1 unseeded, 0 denied, 1 failed of 3 nodes; 2 needed, and masters whose counters were lost do not count until seeded again", false},
		{"command deadline", "get", quorum.OpRead, context.DeadlineExceeded, "NOQUORUM command timed out", false},
		{"validity ran out", "evalsha", 0, errLate, "ERR quorum: denied: validity expired before the reply", false},
		{"validity ran out, every node granting", "evalsha", quorum.OpAcquire, &quorum.OutcomeError{Outcome: quorum.Outcome{Total: 3, Granted: 3}, Expired: true},
			"ERR quorum: denied: validity expired before the reply", false},
		{"extended over max_ttl", "evalsha", quorum.OpExtend, fmt.Errorf("%w (30s): %w", quorum.ErrOverMaxTTL, quorum.ErrDenied),
			"ERR invalid expire time in 'evalsha' command: the extended TTL would be over max_ttl (5m0s)", false}, // the engine's max_ttl, by default
		{"a node refused the script", "eval", 0, &quorum.RefusedError{Reason: "write outside KEYS"},
			"ERR script refused: write outside KEYS; nothing of it was kept", false},
		{"wrong type, read from the nodes", "get", quorum.OpRead, errWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value", false},
		{"not held", "fence", 0, withArgs(errNotHeld, "k"), "NOTHELD the lock 'k' is not held by this token (or its validity ran out)", false},
		{"reserved key", "type", quorum.OpRead, withArgs(errReservedKey, cString([]byte("redlock-proxy:members"), 128)),
			"ERR key 'redlock-proxy:members' is reserved for redlock-proxy", true},
		{"reserved key of a command without an operation", "fence", 0, withArgs(errReservedKey, cString([]byte("redlock-proxy:members"), 128)),
			"ERR key 'redlock-proxy:members' is reserved for redlock-proxy", false},
		{"draining", "set", quorum.OpAcquire, errDraining, "DRAINING redlock-proxy is shutting down; acquire the lock through another proxy", true},
		{"resp's argument error", "set", quorum.OpAcquire, resp.ErrSyntax, "ERR syntax error", true},
		{"expire time in the command's name", "evalsha", quorum.OpAcquire, resp.ErrExpireTime, "ERR invalid expire time in 'evalsha' command", true},
		{"ttl under min_ttl", "set", quorum.OpAcquire, withArgs(errTTLUnder, 99*time.Millisecond, 100*time.Millisecond),
			"ERR invalid expire time in 'set' command: 99ms is under min_ttl (100ms)", true},
		{"ttl over max_ttl", "set", quorum.OpAcquire, withArgs(errTTLOver, time.Hour, time.Minute),
			"ERR invalid expire time in 'set' command: 1h0m0s is over max_ttl (1m0s)", true},
		{"ttl argument over max_ttl", "pexpire", 0, withArgs(errTTLArgOver, int64(90), "s", time.Minute),
			"ERR invalid expire time in 'pexpire' command: 90s is over max_ttl (1m0s)", false},
		{"arity of a subcommand", "client", 0, withArgs(errArity, "client|setname"), "ERR wrong number of arguments for 'client|setname' command", false},
		{"unknown command", "foo", 0, &unknownCommandError{[][]byte{[]byte("FOO"), []byte("bar")}},
			"ERR unknown command 'FOO', with args beginning with: 'bar' ", false},
		{"unknown subcommand", "script", 0, withArgs(errUnknownSubcommand, []byte("foo"), "SCRIPT"), "ERR unknown subcommand 'foo'. Try SCRIPT HELP.", false},
		{"no permission for a key", "get", quorum.OpRead, errNoKeyPermission,
			"NOPERM this user has no permissions to access one of the keys used as arguments", true},
		{"no permission", "client", 0, noPermission("client|kill"), "NOPERM this user has no permissions to run the 'client|kill' command", false},
		{"condition refused", "delex", quorum.OpRelease, withArgs(errDelexNotEqual, "IFNE"),
			"ERR DELEX IFNE is refused by redlock-proxy: it deletes a lock held under another token; release with DELEX key IFEQ token", true},
		{"unsupported subcommand", "object", quorum.OpRead, withArgs(errObjectSubcommand, "FREQ"),
			"ERR OBJECT FREQ is not supported: each node keeps its own", true},
		{"redisson type", "eval", 0, withArgs(errRedissonType, "RFairLock", redissonWhy["RFairLock"]),
			"ERR unsupported script: Redisson's RFairLock is not served: " + redissonWhy["RFairLock"] + " (see the README, Redisson)", false},
		{"exec aborted by its cause", "exec", 0, &execAbortError{withArgs(errArity, "exec")},
			"EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command", false},
		{"a key with a NUL and a verb, as Redis prints it", "type", quorum.OpRead, withArgs(errReservedKey, cString([]byte("redlock-proxy:%s\x00x"), 128)),
			"ERR key 'redlock-proxy:%s' is reserved for redlock-proxy", true},
		{"a command's name with a verb", "x%d", 0, resp.ErrExpireTime, "ERR invalid expire time in 'x%d' command", false},
		{"a command's name with a verb, beside values", "x%d", 0, withArgs(errTTLUnder, time.Millisecond, time.Second),
			"ERR invalid expire time in 'x%d' command: 1ms is under min_ttl (1s)", false},
		{"unnamed catalogue script", "evalsha", quorum.OpAcquire, unsupportedScript(""),
			"ERR unsupported script: redlock-proxy runs recognised lock scripts only (see its README)", true},
		{"anything else", "get", quorum.OpRead, errors.New("boom"), "ERR boom", false},
	}
	obs := &counter{}
	s := newFakeServer(t, &fakeEngine{}, Config{Observer: obs})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := obs.refusals(tt.op)
			got := s.errorReply(&request{name: tt.cmd, op: tt.op}, tt.err)
			if !got.IsError() || got.Text() != tt.want {
				t.Errorf("errorReply(%s, %v) = %v; want the error %s", tt.cmd, tt.err, got, tt.want)
			}
			if counted := obs.refusals(tt.op) - before; counted != btoi(tt.counted) {
				t.Errorf("errorReply(%s, %v) counted %d refusals; want %d", tt.cmd, tt.err, counted, btoi(tt.counted))
			}
		})
	}
}

// refusals returns how many refusals of op the observer heard.
func (c *counter) refusals(op quorum.Op) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return int64(c.refused[op])
}

// TestReservedKeyReadsAreCountedRefusals: a runbook read of a reserved
// key is refused and counted as a refused read, as GET's is.
func TestReservedKeyReadsAreCountedRefusals(t *testing.T) {
	obs := &counter{}
	addr, _ := startServer(t, 1, Config{Observer: obs})
	rc := dial(t, addr)
	const refusal = "-ERR key 'redlock-proxy:members' is reserved for redlock-proxy\r\n"
	cmds := [][]string{
		{"GET", "redlock-proxy:members"},
		{"TYPE", "redlock-proxy:members"},
		{"STRLEN", "redlock-proxy:members"},
		{"HLEN", "redlock-proxy:members"},
		{"ZCARD", "redlock-proxy:members"},
		{"OBJECT", "ENCODING", "redlock-proxy:members"},
		{"HGETALL", "redlock-proxy:members"},
	}
	for _, cmd := range cmds {
		if got := rc.do(t, cmd...); got != refusal {
			t.Errorf("%q = %q; want %q", cmd, got, refusal)
		}
	}
	if got := obs.refusals(quorum.OpRead); got != int64(len(cmds)) {
		t.Errorf("refused reads after %d reserved-key reads = %d; want %d", len(cmds), got, len(cmds))
	}
}

// TestErrorTextsAreEachTheirOwn: each sentinel gets its own row's text,
// not one of another row that it also matches.
func TestErrorTextsAreEachTheirOwn(t *testing.T) {
	s := newFakeServer(t, &fakeEngine{}, Config{})
	for _, row := range errorTexts {
		want := strings.ReplaceAll(row.text, "{cmd}", "set")
		if got := s.replyForError("set", row.err).Text(); !strings.Contains(row.text, "%") && got != want {
			t.Errorf("replyForError(set, %v) = %q; want %q", row.err, got, want)
		}
	}
}
