package app

import (
	"fmt"
	"log/slog"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// fdReserve is how many file descriptors the proxy keeps for itself and
// its nodes, out of the open-file limit, so that clients can never take
// the ones the nodes need: 32 for the process (standard streams, the
// listeners, the poller, the config file, a client being refused) and 4
// per node (the lock connection, the probe's, the pub/sub subscriber's,
// one for a redial). An embedded demo node also serves both ends of
// each connection inside the process, and its own listener: 9.
func fdReserve(nodes int, embedded bool) int {
	per := 4
	if embedded {
		per = 9
	}
	return 32 + per*nodes
}

// minClients is the fewest clients the open-file limit must leave room
// for; below it the proxy refuses to start.
const minClients = 16

// fitClients returns max_clients lowered, if need be, to what limit
// descriptors hold after reserve, and an error if that is under
// minClients.
func fitClients(maxClients int, limit uint64, reserve int) (int, error) {
	room := int64(limit) - int64(reserve)
	if limit > 1<<31 {
		room = 1 << 31
	}
	if room < minClients {
		return 0, fmt.Errorf("open file limit (%d) leaves %d descriptors for clients after the %d kept for the nodes and the proxy; want at least %d: raise it (ulimit -n, LimitNOFILE)",
			limit, max(room, 0), reserve, minClients)
	}
	return int(min(int64(maxClients), room)), nil
}

// fitFileLimit raises the open-file limit as far as it goes and lowers
// cfg's max_clients, with a warning, to what it holds after reserve: a
// client must never take a descriptor a node needs, or the nodes are
// marked down with "too many open files" and every client loses its
// quorum. It refuses to start when the limit leaves almost nothing.
func fitFileLimit(cfg *proxy.Config, reserve int, log *slog.Logger) error {
	limit, err := raiseFileLimit()
	if err != nil {
		log.Warn("open file limit unknown; max_clients not checked against it", "err", err)
		return nil
	}
	want := cfg.WithDefaults().MaxClients
	n, err := fitClients(want, limit, reserve)
	if err != nil {
		return err
	}
	if n < want {
		log.Warn("max_clients lowered to fit the open file limit", "max_clients", want, "open_file_limit", limit,
			"reserved", reserve, "now", n)
	}
	cfg.MaxClients = n
	return nil
}
