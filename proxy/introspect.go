package proxy

import (
	"strconv"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// The introspection commands monitoring tools send (redis_exporter,
// redis-cli --stat and --latency): answered by the proxy itself, in Redis
// 7.0's shapes.

var (
	configSubs  = map[string]int{"get": -3, "set": -4, "resetstat": 2, "rewrite": 2, "help": 2}
	latencySubs = map[string]int{"doctor": 2, "graph": 3, "help": 2, "histogram": -2, "history": 3, "latest": 2, "reset": -2}
)

// configValues are the settings CONFIG GET shows: the read-only values
// tools ask for, as the proxy has them. The proxy keeps nothing on disk
// and serves database 0 alone.
func (s *Server) configValues() [][2]string {
	cfg := s.conf()
	return [][2]string{
		{"maxclients", strconv.Itoa(cfg.MaxClients)},
		{"timeout", strconv.FormatInt(int64(cfg.IdleTimeout/time.Second), 10)},
		{"save", ""},
		{"appendonly", "no"},
		{"databases", "1"},
		{"maxmemory", "0"},
		{"maxmemory-policy", "noeviction"},
		{"cluster-enabled", "no"},
		{"latency-monitor-threshold", "0"},
		{"latency-tracking", "yes"},
		{"latency-tracking-info-percentiles", "50 99 99.9"},
		{"notify-keyspace-events", ""},
	}
}

// CONFIG GET parameter [parameter ...] | RESETSTAT | SET | REWRITE
func (s *Server) configCmd(r *request) (resp.Reply, error) {
	switch ascii.Lower(r.args[1]) {
	case "get":
		var kv []resp.Reply
		for _, p := range s.configValues() {
			for _, pat := range r.args[2:] {
				// Parameter names match without regard to case, as in
				// Redis, and a name without a glob is echoed as given.
				if acl.Match(ascii.Lower(pat), []byte(p[0])) {
					name := p[0]
					if !strings.ContainsAny(string(pat), "*?[") {
						name = string(pat)
					}
					kv = append(kv, resp.Bulk(name), resp.Bulk(p[1]))
					break
				}
			}
		}
		return resp.Map(kv...), nil
	case "resetstat":
		if !r.c.user.Can(acl.Admin) {
			return resp.Reply{}, noPermission("config|resetstat")
		}
		s.stats.reset()
		return resp.OK(), nil
	case "help":
		return resp.Array(resp.Status("CONFIG GET <pattern>: the read-only settings tools ask for."),
			resp.Status("CONFIG RESETSTAT: reset INFO's statistics (admin).")), nil
	}
	return resp.Reply{}, withArgs(errConfigSubcommand, ascii.Upper(r.args[1]))
}

// LATENCY LATEST | HISTORY event | RESET | HISTOGRAM [command ...] | DOCTOR | GRAPH event
//
// The latency monitor is off (latency-monitor-threshold 0), as in a Redis
// that has not turned it on: no events. Per-command latency is tracked,
// as Redis 7.0 does by default (latency-tracking yes).
func (s *Server) latencyCmd(r *request) (resp.Reply, error) {
	switch ascii.Lower(r.args[1]) {
	case "latest", "history":
		return resp.Array(), nil
	case "reset":
		return resp.Int(0), nil
	case "histogram":
		names := s.stats.used()
		if len(r.args) > 2 {
			names = lowerArgs(r.args[2:])
		}
		var kv []resp.Reply
		for _, name := range names {
			cs := s.stats.byName[name]
			if cs == nil || cs.calls.Load() == 0 {
				continue
			}
			kv = append(kv, resp.Bulk(name), latencyHistogram(cs))
		}
		return resp.Map(kv...), nil
	case "doctor":
		return resp.Verbatim("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n"), nil
	case "graph":
		return resp.Reply{}, withArgs(errNoSamples, r.args[2])
	}
	return resp.Array(resp.Status("LATENCY HISTOGRAM [<command> ...]: per-command latency in power-of-two µs buckets."),
		resp.Status("LATENCY LATEST, HISTORY, RESET: the latency monitor, which is off.")), nil
}

// latencyHistogram is one command's LATENCY HISTOGRAM entry: its calls,
// and the cumulative count at each bucket's upper bound in µs where the
// count grew.
func latencyHistogram(cs *cmdStats) resp.Reply {
	cum := cs.cumulative()
	var buckets []resp.Reply
	prev := int64(0)
	for i, n := range cum {
		if n > prev {
			buckets = append(buckets, resp.Int(int64(1)<<i), resp.Int(n))
		}
		prev = n
	}
	return resp.Map(resp.Bulk("calls"), resp.Int(cum[histBuckets-1]), resp.Bulk("histogram_usec"), resp.Map(buckets...))
}

// ROLE
//
// A master with no replicas: the nodes are not the proxy's replicas.
func (s *Server) role(r *request) (resp.Reply, error) {
	return resp.Array(resp.Bulk("master"), resp.Int(0), resp.Array()), nil
}

// TIME
//
// The proxy's own clock, which decides validity.
func (s *Server) timeCmd(r *request) (resp.Reply, error) {
	now := time.Now()
	return resp.Array(resp.Bulk(strconv.FormatInt(now.Unix(), 10)), resp.Bulk(strconv.Itoa(now.Nanosecond()/1000))), nil
}

// DBSIZE
//
// The lock view of the keys (quorum.Engine.Keyspace): the largest count
// that a quorum of the nodes each hold, the proxies' membership record and
// counters left out. When the nodes agree it is the number of keys the
// locks hold.
func (s *Server) dbsize(r *request) (resp.Reply, error) {
	v, err := s.e.Keyspace(r.ctx)
	if err != nil {
		return resp.Reply{}, err
	}
	return resp.Int(v.Keys), nil
}
