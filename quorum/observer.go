package quorum

import (
	"context"
	"errors"
	"net"
	"time"
)

// Observer receives the engine's events: metrics, logs and tests plug
// into it, so the engine imports none of them. Its methods are called
// concurrently, on the request path and by the monitor (the node events
// with that node's health lock held), so they must be quick, must not
// block and must not call back into the engine. A nil Observer in Config
// costs one comparison per event.
type Observer interface {
	// OperationDone reports one engine operation and how long it took.
	OperationDone(op Op, res Result, took time.Duration)
	// LeaseGranted reports the validity an acquire or extend granted,
	// out of the TTL a quorum of nodes set: the one asked for, or, for
	// an extend that adds, what was left plus the increment.
	LeaseGranted(op Op, validity, ttl time.Duration)
	// NodeDone reports one node's part of an operation (not of the
	// cleanup after a failed acquire): nil err on an answer. A down node that was not called is reported with took 0
	// and an error matching ErrNodeDown. ErrorKind names err's kind.
	NodeDone(node int, addr string, took time.Duration, err error)
	// NodeStateChanged reports a node's move from one state to another.
	NodeStateChanged(node int, addr string, from, to NodeState)
	// NodeQuarantined reports a quarantine begun or lengthened.
	NodeQuarantined(node int, addr string, reason QuarantineReason)
}

// Op is the kind of a lock operation.
type Op uint8

const (
	// OpAcquire takes a lock (Acquire).
	OpAcquire Op = iota + 1
	// OpRelease gives one up (Release).
	OpRelease
	// OpExtend resets or adds to a lock's TTL (Extend, ExtendBy,
	// ExtendOrAcquire).
	OpExtend
	// OpRead reads a key's holder and validity (Inspect).
	OpRead
)

var opNames = [...]string{"", "acquire", "release", "extend", "read"}

func (o Op) String() string {
	if int(o) < len(opNames) && o > 0 {
		return opNames[o]
	}
	return "unknown"
}

// Ops lists every Op, for observers that set up one series per op.
var Ops = []Op{OpAcquire, OpRelease, OpExtend, OpRead}

// Result is how an operation ended.
type Result uint8

const (
	// ResultGranted: a quorum did it (a read: a quorum holds the key).
	ResultGranted Result = iota + 1
	// ResultDenied: the nodes that answered decided against it (a read:
	// no quorum holds the key).
	ResultDenied
	// ResultNoQuorum: too few nodes answered to decide (ErrUnavailable).
	ResultNoQuorum
	// ResultRefused: the proxy refused the command before any node saw
	// it. The engine never reports it; the proxy does.
	ResultRefused
	// ResultError: any other failure, such as the caller's deadline.
	ResultError
)

var resultNames = [...]string{"", "granted", "denied", "no_quorum", "refused", "error"}

func (r Result) String() string {
	if int(r) < len(resultNames) && r > 0 {
		return resultNames[r]
	}
	return "unknown"
}

// Results lists every Result.
var Results = []Result{ResultGranted, ResultDenied, ResultNoQuorum, ResultRefused, ResultError}

// ResultOf classifies an operation's error.
func ResultOf(err error) Result {
	switch {
	case err == nil:
		return ResultGranted
	case errors.Is(err, ErrUnavailable):
		return ResultNoQuorum
	case errors.Is(err, ErrDenied):
		return ResultDenied
	}
	return ResultError
}

// QuarantineReason is why a node was quarantined, as a short fixed name.
type QuarantineReason string

const (
	// QuarantineRestart: the node's run_id changed.
	QuarantineRestart QuarantineReason = "restart"
	// QuarantineDataLost: the node's membership record vanished while
	// its run_id stayed (FLUSHALL).
	QuarantineDataLost QuarantineReason = "data_lost"
	// QuarantineClock: the node's clock jumped or ran at a wrong rate.
	QuarantineClock QuarantineReason = "clock"
)

// ErrorKind names the kind of a node failure, for a metric label:
// "down" (the breaker is open), "timeout", "canceled" (the caller gave
// up), "reply" (an error reply), or "connection".
func ErrorKind(err error) string {
	var re errorReply
	var ne net.Error
	switch {
	case errors.Is(err, ErrNodeDown):
		return "down"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &re):
		return "reply"
	}
	return "connection"
}

// observe reports an operation that started at start and ended with err.
func (e *Engine) observe(op Op, start time.Time, err error) {
	if o := e.cfg.Observer; o != nil {
		o.OperationDone(op, ResultOf(err), time.Since(start))
	}
}
