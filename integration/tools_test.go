package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// The monitoring tools an operator points at any Redis, run against the
// proxy and, side by side, against one redis-server.

// metricSet is one scrape of Prometheus's text format: each sample's
// name with its labels, as written, to its value.
type metricSet map[string]float64

// value returns the sample whose name and labels start with prefix (a
// name alone, or a name and its first labels), and whether there is one.
func (m metricSet) value(prefix string) (float64, bool) {
	if v, ok := m[prefix]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			return v, true
		}
	}
	return 0, false
}

// labels returns the labels of the first sample called name.
func (m metricSet) labels(name string) map[string]string {
	for k := range m {
		rest, ok := strings.CutPrefix(k, name+"{")
		if !ok {
			continue
		}
		out := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = strings.Trim(v, `"`)
			}
		}
		return out
	}
	return nil
}

// exporter is a running redis_exporter.
type exporter struct{ url string }

// startExporter runs the redis_exporter binary bin against the Redis at
// addr, on a free loopback port, until the test ends.
func startExporter(t *testing.T, bin, addr string) *exporter {
	t.Helper()
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	cmd := exec.Command(bin, "-redis.addr", "redis://"+addr, "-web.listen-address", listen, "-redis-only-metrics")
	logs := newLogWriter(t)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", listen, time.Second)
		if err == nil {
			c.Close()
			return &exporter{url: "http://" + listen + "/metrics"}
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis_exporter did not listen on %s: %v", listen, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads the exporter's /metrics once.
func (x *exporter) scrape(t *testing.T) metricSet {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, x.url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", x.url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", x.url, err)
	}
	m := metricSet{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m
}

// redis_exporter scrapes the proxy with no scrape error, and what it
// reports moves as it does for one redis-server sent the same commands:
// redis_up, the clients connected, the commands processed, the
// per-command counts, and the instance's identity.
func TestRedisExporterScrapesProxy(t *testing.T) {
	bin := needTool(t, "prometheus-redis-exporter")
	c, p := setup(t, 3, proxy.Config{})
	_ = c
	ref := startRedis(t)
	targets := []struct {
		name, addr string
	}{{"proxy", p.Addr}, {"redis", ref.Addr}}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			x := startExporter(t, bin, tg.addr)
			idle1, idle2 := dialResp(t, tg.addr), dialResp(t, tg.addr)
			for _, rc := range []*respConn{idle1, idle2} {
				if v, err := rc.do(cmdOf("PING")); err != nil || v.String() != "+PONG" {
					t.Fatalf("PING = %s, %v", v, err)
				}
			}
			before := x.scrape(t)
			// What the scrape itself sends (CLIENT SETNAME, CONFIG GET, INFO,
			// LATENCY, SLOWLOG) is measured by a second scrape with nothing
			// sent between.
			idle := x.scrape(t)
			rc := dialResp(t, tg.addr)
			sent := 0
			do := func(args ...string) {
				t.Helper()
				if v, err := rc.do(cmdOf(args...)); err != nil || v.isError() {
					t.Fatalf("%v = %s, %v", args, v, err)
				}
				sent++
			}
			for i := range 5 {
				do("SET", fmt.Sprintf("exporter:%d", i), "tok", "NX", "PX", "30000")
			}
			for i := range 3 {
				do("GET", fmt.Sprintf("exporter:%d", i))
			}
			do("PTTL", "exporter:0")
			do("PTTL", "exporter:1")
			after := x.scrape(t)

			for _, m := range []metricSet{before, idle, after} {
				if v, _ := m.value("redis_up"); v != 1 {
					t.Fatalf("redis_up = %v; want 1", v)
				}
				if v, ok := m.value(`redis_exporter_last_scrape_error{err=""}`); !ok || v != 0 {
					t.Fatalf("redis_exporter_last_scrape_error = %v (present %v); want 0 with no error text: %v", v, ok, m.labels("redis_exporter_last_scrape_error"))
				}
			}
			// Three test connections and the exporter's own.
			if v, _ := after.value("redis_connected_clients"); v != 4 {
				t.Errorf("redis_connected_clients = %v; want 4", v)
			}
			b, _ := before.value("redis_commands_processed_total")
			i, _ := idle.value("redis_commands_processed_total")
			a, _ := after.value("redis_commands_processed_total")
			perScrape := i - b
			if perScrape <= 0 || a-i != perScrape+float64(sent) {
				t.Errorf("redis_commands_processed_total: %v, %v, %v; want it to grow by the scrape's own %v plus the %d sent", b, i, a, perScrape, sent)
			}
			for cmd, n := range map[string]float64{"set": 5, "get": 3, "pttl": 2} {
				if v, _ := after.value(`redis_commands_total{cmd="` + cmd + `"}`); v != n {
					t.Errorf(`redis_commands_total{cmd=%q} = %v; want %v`, cmd, v, n)
				}
				// One Redis can run a read in under a microsecond; the
				// proxy's fan-out never does.
				if v, ok := after.value(`redis_commands_duration_seconds_total{cmd="` + cmd + `"}`); !ok || tg.name == "proxy" && v <= 0 {
					t.Errorf(`redis_commands_duration_seconds_total{cmd=%q} = %v (present %v); want > 0`, cmd, v, ok)
				}
			}
			if v, ok := after.value(`redis_commands_total{cmd="client|setname"}`); !ok || v < 1 {
				t.Errorf(`redis_commands_total{cmd="client|setname"} = %v (present %v); want the exporter's own, counted as Redis counts subcommands`, v, ok)
			}
			info := after.labels("redis_instance_info")
			_, port, _ := net.SplitHostPort(tg.addr)
			if info["role"] != "master" || info["redis_mode"] != "standalone" || info["tcp_port"] != port || len(info["run_id"]) != 40 || info["redis_version"] == "" {
				t.Errorf("redis_instance_info labels = %v; want role master, standalone, tcp_port %s, a 40-hex run_id and a version", info, port)
			}
			if tg.name == "proxy" && info["process_id"] != strconv.Itoa(os.Getpid()) {
				t.Errorf("redis_instance_info process_id = %q; want this process, %d", info["process_id"], os.Getpid())
			}
			if v, ok := after.value(`redis_db_keys{db="db0"}`); !ok || v != 5 {
				t.Errorf(`redis_db_keys{db="db0"} = %v (present %v); want the 5 locks`, v, ok)
			}
			if _, ok := after.value("redis_slowlog_length"); !ok {
				t.Errorf("no redis_slowlog_length: SLOWLOG LEN failed")
			}
			if v, ok := after.value("redis_config_maxclients"); !ok || v <= 0 {
				t.Errorf("redis_config_maxclients = %v (present %v); want CONFIG GET's value", v, ok)
			}
		})
	}
}

// runTool runs a tool that never ends on its own (redis-cli --stat,
// --latency-history) for d, line-buffered so that what it printed
// survives the kill, and returns its output.
func runTool(t *testing.T, d time.Duration, name string, args ...string) string {
	t.Helper()
	stdbuf := needTool(t, "stdbuf")
	bin := needTool(t, name)
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	out, _ := exec.CommandContext(ctx, stdbuf, append([]string{"-oL", bin}, args...)...).Output()
	return string(out)
}

// redis-cli --stat prints every column from the proxy's INFO (keys,
// memory, clients, requests, connections), and its request count grows;
// --latency and --latency-history measure the proxy's PING.
func TestRedisCLIStatAndLatency(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	for i := range 3 {
		if err := p.Client.SetNX(t.Context(), fmt.Sprintf("stat:%d", i), "tok", 30*time.Second).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
	}
	host, port, _ := net.SplitHostPort(p.Addr)
	out := runTool(t, 1500*time.Millisecond, "redis-cli", "-h", host, "-p", port, "--stat", "-i", "0.2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || !strings.Contains(lines[1], "keys") {
		t.Fatalf("redis-cli --stat printed:\n%s\nwant its header and at least two samples", out)
	}
	var requests []int64
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if strings.Contains(l, "-9223372036854775808") || len(f) < 6 {
			t.Fatalf("redis-cli --stat line %q: a field INFO lacks", l)
		}
		if f[0] != "3" {
			t.Errorf("redis-cli --stat keys = %s; want the 3 locks", f[0])
		}
		n, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			t.Fatalf("redis-cli --stat requests %q: %v", f[4], err)
		}
		requests = append(requests, n)
	}
	if requests[len(requests)-1] <= requests[0] {
		t.Errorf("redis-cli --stat requests = %v; want them growing (each INFO is one)", requests)
	}

	out = runTool(t, 1500*time.Millisecond, "redis-cli", "-h", host, "-p", port, "--latency", "-i", "0.2")
	if f := strings.Fields(strings.TrimSpace(out)); len(f) != 4 || f[3] == "0" {
		t.Errorf("redis-cli --latency printed %q; want min, max, avg and a sample count", out)
	}
	out = runTool(t, 2500*time.Millisecond, "redis-cli", "-h", host, "-p", port, "--latency-history", "-i", "1")
	if !strings.Contains(out, "seconds range") {
		t.Errorf("redis-cli --latency-history printed %q; want a line per interval", out)
	}
}

// infoSections parses an INFO reply into its sections (by title) of
// fields, checking Redis's format on the way: "# Title" lines, "field:value"
// lines, CRLF endings, one empty line between sections.
func infoSections(t *testing.T, text string) (map[string]map[string]string, []string) {
	t.Helper()
	if !strings.HasSuffix(text, "\r\n") {
		t.Fatalf("INFO does not end with CRLF: %q", text)
	}
	secs := map[string]map[string]string{}
	var order []string
	var cur map[string]string
	lines := strings.Split(strings.TrimSuffix(text, "\r\n"), "\r\n")
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "# "):
			if i > 0 && lines[i-1] != "" {
				t.Fatalf("INFO: no empty line before %q", l)
			}
			cur = map[string]string{}
			secs[l[2:]] = cur
			order = append(order, l[2:])
		case l == "":
		case cur == nil || strings.ContainsAny(l, "\r\n"):
			t.Fatalf("INFO line %q outside a section or with a stray line break", l)
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				t.Fatalf("INFO line %q is not field:value", l)
			}
			cur[k] = v
		}
	}
	return secs, order
}

// infoOf sends INFO args to the server at addr.
func infoOf(t *testing.T, rc *respConn, args ...string) string {
	t.Helper()
	v, err := rc.do(cmdOf(append([]string{"INFO"}, args...)...))
	if err != nil || v.kind != '$' {
		t.Fatalf("INFO %v = %s, %v", args, v, err)
	}
	return v.text
}

// proxySections are the proxy's own INFO sections, which one Redis does
// not have.
var proxySections = map[string]bool{"PubSub": true, "Quorum": true}

// INFO, INFO all and INFO of each section have Redis's format, sections
// and field names (every field the proxy shows, Redis shows in the same
// section), with the fields tools read; the keyspace is the locks'.
func TestInfoHasRedisSections(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	pc, rc := dialResp(t, p.Addr), dialResp(t, ref.Addr)
	for _, c := range []*respConn{pc, rc} {
		for i := range 3 {
			if v, err := c.do(cmdOf("SET", fmt.Sprintf("info:%d", i), "tok", "NX", "PX", "30000")); err != nil || v.String() != "+OK" {
				t.Fatalf("SET = %s, %v", v, err)
			}
		}
	}
	for _, c := range []*respConn{pc, rc} {
		if v, _ := c.do(cmdOf("GET")); !v.isError() {
			t.Fatalf("GET with no key = %s; want an arity error", v)
		}
	}
	for _, args := range [][]string{nil, {"all"}, {"everything"}, {"default"}, {"server"}, {"clients"}, {"memory"}, {"cpu"}, {"errorstats"},
		{"persistence"}, {"stats"}, {"replication"}, {"keyspace"}, {"commandstats"}, {"latencystats"}, {"cluster"}, {"SERVER", "clients"}} {
		ps, porder := infoSections(t, infoOf(t, pc, args...))
		rs, rorder := infoSections(t, infoOf(t, rc, args...))
		var redisOrder []string
		for _, title := range porder {
			if !proxySections[title] {
				redisOrder = append(redisOrder, title)
			}
		}
		// The sections the proxy shows come in Redis's order.
		j := 0
		for _, title := range rorder {
			if j < len(redisOrder) && redisOrder[j] == title {
				j++
			}
		}
		if j != len(redisOrder) {
			t.Errorf("INFO %v sections %v; want a subsequence of Redis's %v", args, porder, rorder)
		}
		for title, fields := range ps {
			if proxySections[title] {
				continue
			}
			for k := range fields {
				_, ok := rs[title][k]
				switch {
				case title == "Commandstats" || title == "Latencystats":
					// Per command: the prefix is Redis's.
					if !strings.HasPrefix(k, "cmdstat_") && !strings.HasPrefix(k, "latency_percentiles_usec_") {
						t.Errorf("INFO %v: %s field %q", args, title, k)
					}
				case !ok:
					t.Errorf("INFO %v: field %q is not in Redis's %s section", args, k, title)
				}
			}
		}
	}
	all, _ := infoSections(t, infoOf(t, pc, "all"))
	ref2, _ := infoSections(t, infoOf(t, rc, "all"))
	for _, want := range []struct{ sec, field, value string }{
		{"Clients", "maxclients", "10000"}, {"Replication", "role", "master"}, {"Server", "redis_mode", "standalone"},
		{"Keyspace", "db0", "keys=3,expires=3,avg_ttl=0"}, {"Persistence", "loading", "0"}, {"Cluster", "cluster_enabled", "0"},
	} {
		if got := all[want.sec][want.field]; got != want.value {
			t.Errorf("INFO all: %s %s = %q; want %q", want.sec, want.field, got, want.value)
		}
	}
	for _, f := range []string{"connected_clients", "total_commands_processed", "total_connections_received", "used_memory", "used_memory_human", "uptime_in_seconds", "run_id", "process_id", "tcp_port"} {
		found := false
		for _, sec := range all {
			if _, ok := sec[f]; ok {
				found = true
			}
		}
		if !found {
			t.Errorf("INFO all has no %s", f)
		}
	}
	// Commandstats and latencystats lines have Redis's fields.
	for _, sec := range []string{"Commandstats", "Latencystats"} {
		name := map[string]string{"Commandstats": "cmdstat_set", "Latencystats": "latency_percentiles_usec_set"}[sec]
		if got, want := fieldNames(all[sec][name]), fieldNames(ref2[sec][name]); got != want {
			t.Errorf("INFO %s %s fields %q; Redis has %q", sec, name, got, want)
		}
	}
	if got, want := fieldNames(all["Errorstats"]["errorstat_ERR"]), fieldNames(ref2["Errorstats"]["errorstat_ERR"]); got != want || got != "count" {
		t.Errorf("errorstat_ERR fields %q; Redis has %q", got, want)
	}
	if _, ok := all["CPU"]["used_cpu_user"]; !ok {
		t.Errorf("INFO all has no used_cpu_user: %v", all["CPU"])
	}
	if got := all["Commandstats"]["cmdstat_set"]; !strings.HasPrefix(got, "calls=3,") {
		t.Errorf("cmdstat_set = %q; want calls=3", got)
	}
}

// fieldNames returns the names of an INFO value's a=1,b=2 fields.
func fieldNames(v string) string {
	var names []string
	for f := range strings.SplitSeq(v, ",") {
		k, _, _ := strings.Cut(f, "=")
		names = append(names, k)
	}
	return strings.Join(names, ",")
}

// hasText reports whether one of v's items is the string s.
func hasText(v respValue, s string) bool {
	for _, it := range v.items {
		if it.text == s && it.kind != '*' {
			return true
		}
	}
	return false
}

// shape is a reply's structure without its values: its types and
// lengths.
func shape(v respValue) string {
	if len(v.items) == 0 {
		return string(v.kind)
	}
	parts := make([]string, len(v.items))
	for i, it := range v.items {
		parts[i] = shape(it)
	}
	return string(v.kind) + "[" + strings.Join(parts, " ") + "]"
}

// The introspection commands tools send answer in Redis's shapes: ROLE,
// TIME, DBSIZE (the locks), CONFIG GET of the read-only values (glob
// patterns too), COMMAND COUNT|INFO|DOCS|LIST, CLIENT INFO|NO-EVICT|KILL,
// LATENCY LATEST|HISTOGRAM.
func TestIntrospectionAsRedis(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{})
	ref := startRedis(t)
	pc, rc := dialResp(t, p.Addr), dialResp(t, ref.Addr)
	both := func(args ...string) (respValue, respValue) {
		t.Helper()
		pv, err := pc.do(cmdOf(args...))
		if err != nil {
			t.Fatalf("proxy %v: %v", args, err)
		}
		rv, err := rc.do(cmdOf(args...))
		if err != nil {
			t.Fatalf("redis %v: %v", args, err)
		}
		return pv, rv
	}
	for i := range 4 {
		both("SET", fmt.Sprintf("dbsize:%d", i), "tok", "NX", "PX", "30000")
	}
	same := func(args ...string) {
		t.Helper()
		if pv, rv := both(args...); pv.String() != rv.String() {
			t.Errorf("%v = %s; Redis: %s", args, pv, rv)
		}
	}
	sameShape := func(args ...string) (respValue, respValue) {
		t.Helper()
		pv, rv := both(args...)
		if shape(pv) != shape(rv) {
			t.Errorf("%v shape %s; Redis: %s", args, shape(pv), shape(rv))
		}
		return pv, rv
	}
	same("ROLE")
	same("DBSIZE")
	sameShape("TIME")
	same("CONFIG", "GET", "save")
	same("CONFIG", "GET", "appendonly")
	same("CONFIG", "GET", "maxclients")
	same("CONFIG", "GET", "timeout")
	same("CONFIG", "GET", "nosuch*")
	if pv, _ := both("CONFIG", "GET", "databases"); len(pv.items) != 2 || pv.items[1].text != "1" {
		t.Errorf("CONFIG GET databases = %s; want 1: the proxy serves database 0 alone", pv)
	}
	// Several patterns and globs, as Redis 7.0 takes them.
	pv, rv := both("CONFIG", "GET", "maxm*", "APPENDONLY", "lat*")
	for i := 0; i+1 < len(pv.items); i += 2 {
		if !hasText(rv, pv.items[i].text) {
			t.Errorf("CONFIG GET maxm* APPENDONLY lat*: %s is not among Redis's %s", pv.items[i].text, rv)
		}
	}
	if len(pv.items) < 6 {
		t.Errorf("CONFIG GET maxm* APPENDONLY lat* = %s; want maxmemory, maxmemory-policy, appendonly, latency-*", pv)
	}
	if pv, _ := both("CONFIG", "SET", "maxclients", "5"); !strings.HasPrefix(pv.text, "ERR CONFIG SET is not supported") {
		t.Errorf("CONFIG SET = %s; want a refusal naming config.toml", pv)
	}
	same("CONFIG", "GET")

	sameShape("COMMAND", "COUNT")
	pv, rv = both("COMMAND", "INFO", "get", "nosuch")
	if len(pv.items) != 2 || len(pv.items[0].items) != len(rv.items[0].items) || pv.items[1].kind != 'A' {
		t.Fatalf("COMMAND INFO get nosuch = %s; Redis: %s", pv, rv)
	}
	// Name, arity and key positions as Redis's; each field of its type.
	for i := range pv.items[0].items {
		if pv.items[0].items[i].kind != rv.items[0].items[i].kind {
			t.Errorf("COMMAND INFO get field %d = %s; Redis: %s", i, pv.items[0].items[i], rv.items[0].items[i])
		}
	}
	for _, i := range []int{0, 1, 3, 4, 5} {
		if pv.items[0].items[i].String() != rv.items[0].items[i].String() {
			t.Errorf("COMMAND INFO get field %d = %s; Redis: %s", i, pv.items[0].items[i], rv.items[0].items[i])
		}
	}
	pv, rv = both("COMMAND", "DOCS", "get")
	if len(pv.items) != 2 || pv.items[0].text != "get" {
		t.Fatalf("COMMAND DOCS get = %s", pv)
	}
	for i := 0; i < len(pv.items[1].items); i += 2 {
		if k := pv.items[1].items[i].text; !hasText(rv.items[1], k) {
			t.Errorf("COMMAND DOCS get: %s is not a field of Redis's %s", k, rv)
		}
	}
	pv, _ = both("COMMAND", "LIST")
	if !hasText(pv, "set") || !hasText(pv, "eval") || hasText(pv, "decr") {
		t.Errorf("COMMAND LIST = %s; want the commands the proxy serves", pv)
	}
	if pv, _ := both("COMMAND", "LIST", "FILTERBY", "PATTERN", "s*"); !hasText(pv, "set") || hasText(pv, "get") {
		t.Errorf("COMMAND LIST FILTERBY PATTERN s* = %s", pv)
	}

	pv, rv = both("CLIENT", "INFO")
	for _, f := range strings.Fields(pv.text) {
		k, _, _ := strings.Cut(f, "=")
		if !strings.Contains(" "+rv.text, " "+k+"=") {
			t.Errorf("CLIENT INFO field %q is not Redis's (%q)", k, rv.text)
		}
	}
	same("CLIENT", "NO-EVICT", "on")
	same("CLIENT", "NO-EVICT", "off")
	same("CLIENT", "NO-EVICT", "maybe")

	// CLIENT KILL ID closes that connection and counts it.
	for _, addr := range []string{p.Addr, ref.Addr} {
		victim := dialResp(t, addr)
		idv, err := victim.do(cmdOf("CLIENT", "ID"))
		if err != nil {
			t.Fatal(err)
		}
		admin := dialResp(t, addr)
		if v, err := admin.do(cmdOf("CLIENT", "KILL", "ID", idv.text)); err != nil || v.String() != ":1" {
			t.Errorf("%s: CLIENT KILL ID %s = %s, %v; want 1", addr, idv.text, v, err)
		}
		if v, err := victim.do(cmdOf("PING")); err == nil {
			t.Errorf("%s: PING after CLIENT KILL = %s; want the connection closed", addr, v)
		}
		if v, err := admin.do(cmdOf("CLIENT", "KILL", "ID", idv.text)); err != nil || v.String() != ":0" {
			t.Errorf("%s: CLIENT KILL ID of a closed client = %s, %v; want 0", addr, v, err)
		}
		if v, err := admin.do(cmdOf("CLIENT", "KILL", "127.0.0.1:1")); err != nil || v.text != "ERR No such client" {
			t.Errorf("%s: CLIENT KILL of no client = %s, %v", addr, v, err)
		}
	}

	same("LATENCY", "LATEST")
	pv, rv = both("LATENCY", "HISTOGRAM", "set")
	// As Redis: set => {calls, histogram_usec => {bound: cumulative count}}.
	histogram := func(v respValue) bool {
		if len(v.items) != 2 || v.items[0].text != "set" || len(v.items[1].items) != 4 {
			return false
		}
		h := v.items[1].items
		return h[0].text == "calls" && h[1].text == "4" && h[2].text == "histogram_usec" &&
			len(h[3].items) > 0 && len(h[3].items)%2 == 0 && h[3].items[len(h[3].items)-1].text == "4"
	}
	if !histogram(pv) || !histogram(rv) {
		t.Errorf("LATENCY HISTOGRAM set = %s; Redis: %s; want 4 calls in cumulative buckets", pv, rv)
	}
}

// Every command docs/compatibility.md's "What it refuses, and why" lists
// gets an error in Redis's shape, one line, that gives the row's reason;
// the connection stays usable.
func TestRefusedCommandsSayWhy(t *testing.T) {
	text, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(text), "\n### What it refuses, and why\n")
	if !ok {
		t.Fatal("no section \"What it refuses, and why\" in docs/compatibility.md")
	}
	sec, _, _ = strings.Cut(sec, "\n#") // to the next heading
	_, p := setup(t, 3, proxy.Config{})
	rc := dialResp(t, p.Addr)
	rows := 0
	for line := range strings.Lines(sec) {
		cells := strings.Split(strings.TrimSpace(line), " | ")
		if len(cells) != 2 || !strings.HasPrefix(cells[0], "| `") {
			continue
		}
		rows++
		// The reason as the error gives it: no markdown, and a trailing
		// pointer into the docs, "(Section)", left out.
		why := strings.ReplaceAll(strings.TrimSuffix(cells[1], " |"), "`", "")
		if i := strings.LastIndex(why, " ("); i > 0 && strings.HasSuffix(why, ")") && why[i+2] >= 'A' && why[i+2] <= 'Z' {
			why = why[:i]
		}
		for _, cmd := range strings.Split(strings.TrimPrefix(cells[0], "| "), ", ") {
			args := strings.Fields(strings.Trim(cmd, "`"))
			var v respValue
			// A bare name gets the arguments it needs, as Redis counts them
			// (INCR and INCRBY are served for fence_keys, with arity).
			for _, extra := range [][]string{{}, {"k"}, {"k", "1"}, {"k", "v", "1"}} {
				if len(args) > 1 && len(extra) > 0 {
					break
				}
				var err error
				v, err = rc.do(cmdOf(append(slices.Clone(args), extra...)...))
				if err != nil {
					t.Fatalf("%v: %v", args, err)
				}
				if !strings.Contains(v.text, "wrong number of arguments") {
					break
				}
			}
			if !v.isError() || !strings.HasPrefix(v.text, "ERR ") || !strings.Contains(v.text, why) {
				t.Errorf("%v = %s; want an ERR saying %q", args, v, why)
			}
		}
	}
	if rows < 10 {
		t.Errorf("the refusals table has %d rows", rows)
	}
	if v, err := rc.do(cmdOf("PING")); err != nil || v.String() != "+PONG" {
		t.Errorf("PING after the refusals = %s, %v", v, err)
	}
}
