package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/internal/buildinfo"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// infoSection is one section of INFO: its name as INFO takes it, its
// title, whether a bare INFO shows it, and what it writes.
type infoSection struct {
	name, title string
	byDefault   bool
	write       func(s *Server, b *strings.Builder, r *infoRun)
}

// infoSections are Redis 7.0's sections in its order, with the fields the
// proxy can fill truly, then the proxy's own (pubsub, quorum).
var infoSections = []infoSection{
	{"server", "Server", true, (*Server).infoServer},
	{"clients", "Clients", true, (*Server).infoClients},
	{"memory", "Memory", true, (*Server).infoMemory},
	{"persistence", "Persistence", true, (*Server).infoPersistence},
	{"stats", "Stats", true, (*Server).infoStats},
	{"replication", "Replication", true, (*Server).infoReplication},
	{"cpu", "CPU", true, (*Server).infoCPU},
	{"modules", "Modules", true, func(*Server, *strings.Builder, *infoRun) {}},
	{"commandstats", "Commandstats", false, (*Server).infoCommandStats},
	{"errorstats", "Errorstats", true, func(s *Server, b *strings.Builder, _ *infoRun) {
		for _, l := range s.stats.errorStats() {
			b.WriteString(l)
		}
	}},
	{"latencystats", "Latencystats", false, (*Server).infoLatencyStats},
	{"cluster", "Cluster", true, func(_ *Server, b *strings.Builder, _ *infoRun) { b.WriteString("cluster_enabled:0\r\n") }},
	{"keyspace", "Keyspace", true, (*Server).infoKeyspace},
	{"pubsub", "PubSub", true, (*Server).infoPubSub},
	{"quorum", "Quorum", true, (*Server).infoQuorum},
}

// infoRun is one INFO call: its request, and the nodes' key counts,
// read once for the sections that show them.
type infoRun struct {
	r       *request
	keys    quorum.KeyView
	keysErr error
	read    bool
}

// keyView returns the nodes' key counts, read at the first call.
func (in *infoRun) keyView(s *Server) (quorum.KeyView, error) {
	if !in.read {
		in.keys, in.keysErr = s.e.Keyspace(in.r.ctx)
		in.read = true
	}
	return in.keys, in.keysErr
}

// INFO [section ...]
//
// As Redis 7.0: no section, "default", "all" (every section) or
// "everything"; names in any case; an unknown one adds nothing.
func (s *Server) info(r *request) (resp.Reply, error) {
	want := map[string]bool{}
	for _, a := range r.args[1:] {
		want[ascii.Lower(a)] = true
	}
	all := want["all"] || want["everything"]
	def := len(r.args) == 1 || want["default"]
	var b strings.Builder
	in := &infoRun{r: r}
	for _, sec := range infoSections {
		if !(all || want[sec.name] || def && sec.byDefault) {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + sec.title + "\r\n")
		sec.write(s, &b, in)
	}
	return resp.Verbatim(b.String()), nil
}

func (s *Server) infoServer(b *strings.Builder, in *infoRun) {
	up := time.Since(s.started)
	port := ""
	if _, p, err := net.SplitHostPort(in.r.conn.NetConn().LocalAddr().String()); err == nil {
		port = p
	}
	// redis_build_id carries the proxy's own version (redis_exporter's
	// redis_instance_info shows it); redis_version is the Redis it mirrors.
	fmt.Fprintf(b, "redis_version:%s\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:%s\r\nredis_mode:standalone\r\n",
		version, buildinfo.Version())
	fmt.Fprintf(b, "os:%s %s\r\narch_bits:%d\r\nprocess_id:%d\r\nprocess_supervised:no\r\n",
		runtime.GOOS, runtime.GOARCH, 32<<(^uint(0)>>63), os.Getpid())
	fmt.Fprintf(b, "run_id:%s\r\ntcp_port:%s\r\nserver_time_usec:%d\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\n",
		s.runID, port, time.Now().UnixMicro(), int64(up.Seconds()), int64(up.Hours()/24))
	b.WriteString("executable:redlock-proxy\r\nconfig_file:\r\nio_threads_active:0\r\n")
}

func (s *Server) infoClients(b *strings.Builder, _ *infoRun) {
	fmt.Fprintf(b, "connected_clients:%d\r\ncluster_connections:0\r\nmaxclients:%d\r\nblocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
		s.clients.Load(), s.conf().MaxClients)
}

// infoMemory shows the Go heap as Redis shows its allocator: used_memory
// is what is allocated, used_memory_rss what the runtime took from the
// system. The proxy keeps no data set, so it has no maxmemory.
func (s *Server) infoMemory(b *strings.Builder, _ *infoRun) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Fprintf(b, "used_memory:%d\r\nused_memory_human:%s\r\nused_memory_rss:%d\r\nused_memory_rss_human:%s\r\n",
		m.HeapAlloc, humanBytes(m.HeapAlloc), m.Sys, humanBytes(m.Sys))
	b.WriteString("maxmemory:0\r\nmaxmemory_human:0B\r\nmaxmemory_policy:noeviction\r\nmem_allocator:go\r\n")
}

// infoPersistence: the proxy keeps nothing on disk; the locks live on the
// nodes, with their own persistence.
func (s *Server) infoPersistence(b *strings.Builder, _ *infoRun) {
	fmt.Fprintf(b, "loading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:%d\r\n", s.started.Unix())
	b.WriteString("rdb_last_bgsave_status:ok\r\naof_enabled:0\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_bgrewrite_status:ok\r\naof_last_write_status:ok\r\n")
}

func (s *Server) infoStats(b *strings.Builder, _ *infoRun) {
	st := s.stats
	fmt.Fprintf(b, "total_connections_received:%d\r\ntotal_commands_processed:%d\r\nrejected_connections:%d\r\n",
		st.connections.Load(), st.commands.Load(), st.rejectedCon.Load())
	if s.hub != nil {
		ps := s.hub.Stats()
		fmt.Fprintf(b, "pubsub_channels:%d\r\npubsub_patterns:%d\r\npubsubshard_channels:%d\r\n", ps.Channels, ps.Patterns, ps.Shards)
	}
	fmt.Fprintf(b, "total_error_replies:%d\r\n", st.errors.Load())
}

// infoReplication: the proxy is a master with no replicas, as a client
// of one Redis expects (role:master); the nodes are not its replicas.
func (s *Server) infoReplication(b *strings.Builder, _ *infoRun) {
	fmt.Fprintf(b, "role:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:%s\r\nmaster_replid2:%s\r\n",
		s.runID, strings.Repeat("0", 40))
	b.WriteString("master_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:0\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n")
}

func (s *Server) infoCommandStats(b *strings.Builder, _ *infoRun) {
	for _, name := range s.stats.used() {
		b.WriteString(commandStatsLine(name, s.stats.byName[name]))
	}
}

func (s *Server) infoLatencyStats(b *strings.Builder, _ *infoRun) {
	for _, name := range s.stats.used() {
		if cs := s.stats.byName[name]; cs.calls.Load() > 0 {
			b.WriteString(latencyStatsLine(name, cs))
		}
	}
}

// infoKeyspace is the lock view of the nodes' keys (quorum.Engine.Keyspace):
// counts that a quorum of the nodes each reach, with Redis's empty
// section when there are none. When too few nodes answer, a
// keyspace_error line says why instead: an outage must not read as "no
// keys" (a monitor would show no locks held).
func (s *Server) infoKeyspace(b *strings.Builder, in *infoRun) {
	v, err := in.keyView(s)
	if err != nil {
		fmt.Fprintf(b, "keyspace_error:%s\r\n", s.replyForError("info", err).Text())
		return
	}
	if v.Keys > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", v.Keys, v.Expires)
	}
}

// infoPubSub is the proxy's own: the pub/sub hub's subscriptions.
func (s *Server) infoPubSub(b *strings.Builder, _ *infoRun) {
	if s.hub == nil {
		return
	}
	st := s.hub.Stats()
	fmt.Fprintf(b, "pubsub_channels:%d\r\npubsub_patterns:%d\r\npubsub_shardchannels:%d\r\npubsub_nodes_up:%d\r\n",
		st.Channels, st.Patterns, st.Shards, st.NodesUp)
}

// infoQuorum is the proxy's own: the nodes, and for admin users each
// node's state.
func (s *Server) infoQuorum(b *strings.Builder, in *infoRun) {
	fmt.Fprintf(b, "proxy:redlock-proxy\r\nproxy_version:%s\r\nnodes:%d\r\nquorum:%d\r\n", buildinfo.Version(), s.e.Nodes(), quorum.Quorum(s.e.Nodes()))
	fmt.Fprintf(b, "monitor_clients:%d\r\nmonitor_lines_dropped:%d\r\nslowlog_len:%d\r\n",
		s.nMonitors.Load(), s.stats.monitorDropped.Load(), s.slowLen())
	if !in.r.c.user.Can(acl.Admin) {
		return // the node details are for admin users
	}
	v, _ := in.keyView(s)
	var persistent int64
	for _, kc := range v.Nodes {
		if kc != nil {
			persistent = max(persistent, kc.Keys-kc.Expires)
		}
	}
	// Lock keys without a TTL on any node: the proxy sets none, so
	// anything but 0 was written past it.
	fmt.Fprintf(b, "keys_without_ttl:%d\r\n", persistent)
	for i, st := range s.e.Status() {
		fmt.Fprintf(b, "node%d:addr=%s,state=%s", i, infoValue(st.Addr), st.State)
		if !st.Until.IsZero() {
			fmt.Fprintf(b, ",until=%s", st.Until.UTC().Format(time.RFC3339Nano))
		}
		fmt.Fprintf(b, ",reason=%s,run_id=%s,downs=%d,last_error=%s", infoValue(st.Reason), infoValue(st.RunID), st.Downs, infoValue(st.LastError))
		if kc := v.Nodes[i]; kc != nil {
			fmt.Fprintf(b, ",keys=%d,expires=%d", kc.Keys, kc.Expires)
		}
		b.WriteString("\r\n")
	}
}

// infoValue makes s safe as one value of an INFO field: no commas, which
// separate values, and no line breaks, which separate fields.
func infoValue(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ',', '\r', '\n':
			return ' '
		}
		return r
	}, s)
}

// humanBytes is n as Redis's bytesToHuman writes it.
func humanBytes(n uint64) string {
	f := float64(n)
	for _, u := range []string{"K", "M", "G", "T", "P"} {
		f /= 1024
		if f < 1024 || u == "P" {
			if n < 1024 {
				break
			}
			return fmt.Sprintf("%.2f%s", f, u)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// newRunID returns 40 random hex digits, as Redis's run_id.
func newRunID() string {
	var b [20]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
