package redisnode

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
)

// dialTimeout bounds a dial of the pipeline's connection, as go-redis's
// DialTimeout does the client's.
const dialTimeout = time.Second

// dial opens the pipeline's connection to the node and readies it as
// go-redis readies one of its own (NewRedisNode's settings): TLS if set,
// AUTH if there is a password, and, while the engine watches, the node's
// run_id reported before the connection carries a command. All of it
// ends by ctx's deadline.
func (n *redisNode) dial(ctx context.Context) (net.Conn, *wire.Reader, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "tcp", n.addr)
	if err != nil {
		return nil, nil, err
	}
	if n.tls != nil {
		tc := tls.Client(c, n.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, nil, err
		}
		c = tc
	}
	rd := wire.NewReader(c, 32<<10)
	id, runID, err := n.ready(ctx, c, rd)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if id != 0 {
		c = &clientConn{Conn: c, id: id, runID: runID}
	}
	return c, rd, nil
}

// clientConn is a connection whose node told its client ID, by which a
// later connection has the node kill it (pipeline.settle).
type clientConn struct {
	net.Conn
	id    int64
	runID string // the node's run_id when it told id; "" if not read
}

// ready logs in on a new connection, reports its run_id and returns its
// client ID (0 if the node refuses CLIENT ID: an ACL without it).
func (n *redisNode) ready(ctx context.Context, c net.Conn, rd *wire.Reader) (id int64, runID string, err error) {
	f := n.onRunID.Load()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(unboundedWait))
	}
	// One write and one round trip: a slow link costs it once.
	var cmds [][]any
	if n.pass != "" {
		args := []any{"auth", n.pass}
		if n.user != "" {
			args = []any{"auth", n.user, n.pass}
		}
		cmds = append(cmds, args)
	}
	if len(cmds) == 0 && f == nil {
		// No round trip to share (the engine does not watch yet): the
		// connection goes without its ID, and a drop of it is not settled.
		return 0, "", c.SetDeadline(time.Time{})
	}
	cmds = append(cmds, []any{"client", "id"})
	if f != nil {
		cmds = append(cmds, []any{"info", "server"})
	}
	var buf []byte
	for _, args := range cmds {
		buf = wire.AppendCommand(buf, args)
	}
	if _, err := c.Write(buf); err != nil {
		return 0, "", err
	}
	var failed error // the first error reply, after every reply is read
	for _, args := range cmds {
		v, err := rd.Next()
		if err != nil {
			return 0, "", err
		}
		e, isErr := v.(wire.Error)
		switch {
		case args[0] == "client" && isErr:
			if failed == nil && n.noClientID.CompareAndSwap(false, true) { // not a failed AUTH's NOAUTH
				n.log.Warn("node refuses CLIENT ID: a write given up on may land after a later one (docs/operations.md)", "node", n.addr, "err", e)
			}
		case isErr:
			failed = cmp.Or(failed, error(e))
		case args[0] == "client":
			id, _ = v.(int64)
		case args[0] == "info":
			text, _ := v.(string)
			p, err := parseInfo(text)
			if err != nil {
				failed = cmp.Or(failed, err)
			}
			runID = p.RunID
			n.reveals.Store(setTakesNXGet(p.Version))
		}
	}
	if failed != nil {
		return 0, "", failed
	}
	if rd.Buffered() > 0 {
		return 0, "", fmt.Errorf("%w: more replies than commands on a new connection", wire.ErrProtocol)
	}
	if f != nil {
		(*f)(runID)
	}
	return id, runID, c.SetDeadline(time.Time{})
}

// roundTrip sends one command on c and reads its reply: an error reply
// as the error.
func roundTrip(c net.Conn, rd *wire.Reader, args ...any) (any, error) {
	if _, err := c.Write(wire.AppendCommand(nil, args)); err != nil {
		return nil, err
	}
	v, err := rd.Next()
	if err != nil {
		return nil, err
	}
	if e, ok := v.(wire.Error); ok {
		return nil, e
	}
	if rd.Buffered() > 0 {
		return nil, fmt.Errorf("%w: more than one reply to %v", wire.ErrProtocol, args[0])
	}
	return v, nil
}
