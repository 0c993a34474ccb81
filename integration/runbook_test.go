package integration

import (
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// runbookLocks writes, on every node of c (and on ref, if not nil), what a
// lock runbook meets: n string locks lock:0..n-1 through the proxy, a
// Redisson hash lock lock:h and a Symfony sorted-set lock lock:z, whose
// score each node gave by its own clock (node i: 1000+i). It returns the
// lock keys.
func runbookLocks(t *testing.T, c *cluster, p *proxyProc, ref *redis.Client, n int) []string {
	t.Helper()
	ctx := t.Context()
	var keys []string
	for i := range n {
		k := fmt.Sprintf("lock:%d", i)
		if err := p.Client.SetNX(ctx, k, "tok", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		keys = append(keys, k)
	}
	writes := func(r *redis.Client, score float64) {
		t.Helper()
		if _, err := r.Pipelined(ctx, func(pp redis.Pipeliner) error {
			pp.HSet(ctx, "lock:h", "uuid-1:7", "2")
			pp.PExpire(ctx, "lock:h", time.Minute)
			pp.ZAdd(ctx, "lock:z", redis.Z{Score: score, Member: "tok-z"})
			pp.PExpire(ctx, "lock:z", time.Minute)
			return nil
		}); err != nil {
			t.Fatalf("write hash and sorted-set locks: %v", err)
		}
	}
	for i, d := range c.direct {
		if !c.killed[i] {
			writes(d, float64(1000+i))
		}
	}
	if ref != nil {
		writes(ref, 1002)
	}
	return append(keys, "lock:h", "lock:z")
}

// scanAll runs a whole SCAN through client with the given options and
// returns every key it gave, in order, duplicates included.
func scanAll(t *testing.T, c *redis.Client, match string, count int64, each func(page int)) []string {
	t.Helper()
	var keys []string
	cursor := uint64(0)
	for page := 0; ; page++ {
		if each != nil {
			each(page)
		}
		ks, next, err := c.Scan(t.Context(), cursor, match, count).Result()
		if err != nil {
			t.Fatalf("SCAN %d (page %d): %v", cursor, page, err)
		}
		keys = append(keys, ks...)
		if next == 0 {
			return keys
		}
		if page > 10000 {
			t.Fatalf("SCAN did not end")
		}
		cursor = next
	}
}

// The runbook's reads are quorum reads: redis-cli --scan --pattern
// 'lock:*' lists the keys a quorum holds, each once, never a key only a
// minority has; TYPE, TTL, PTTL, EXISTS, HGETALL, HGET, ZRANGE …
// WITHSCORES and OBJECT ENCODING answer as one Redis holding the locks
// does, side by side; DBSIZE and INFO keyspace count the locks.
func TestRunbookReadsAreQuorumReads(t *testing.T) {
	c, p := setup(t, 5, proxy.Config{})
	ref := startRedis(t)
	rc := direct(t, ref.Addr)
	keys := runbookLocks(t, c, p, nil, 20)
	for i := range 20 {
		if err := rc.Set(t.Context(), fmt.Sprintf("lock:%d", i), "tok", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	runbookLocks(t, &cluster{}, p, rc, 0)
	// Only a minority has it: not a lock.
	for _, i := range []int{0, 1} {
		c.direct[i].Set(t.Context(), "lock:minority", "x", time.Minute)
	}
	if err := p.Client.SetNX(t.Context(), "other:1", "tok", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	host, port, _ := net.SplitHostPort(p.Addr)
	cli := needTool(t, "redis-cli")
	for _, extra := range [][]string{nil, {"-i", "0.001"}} {
		out, err := exec.CommandContext(t.Context(), cli, append([]string{"-h", host, "-p", port, "--scan", "--pattern", "lock:*"}, extra...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --scan: %v: %s", err, out)
		}
		// A master slow past the node timeout counts as down for one
		// page, which may repeat a key (SCAN's own rule), never miss one.
		got := strings.Fields(string(out))
		slices.Sort(got)
		n := len(got)
		if got = slices.Compact(got); len(got) != n {
			t.Logf("redis-cli --scan %v repeated %d keys", extra, n-len(got))
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("redis-cli --scan --pattern 'lock:*' %v = %v; want each lock: %v", extra, got, want)
		}
	}
	got := scanAll(t, p.Client, "lock:*", 0, nil)
	slices.Sort(got)
	if got = slices.Compact(got); len(got) != len(keys) {
		t.Errorf("SCAN MATCH lock:* gave %d distinct keys; want %d", len(got), len(keys))
	}
	ks, _, err := p.Client.ScanType(t.Context(), 0, "", 1000, "hash").Result()
	if err != nil {
		t.Fatal(err)
	}
	// One page is one node's: the hash lock is on the first.
	if !slices.Equal(ks, []string{"lock:h"}) {
		t.Errorf("SCAN 0 COUNT 1000 TYPE hash = %v; want [lock:h]", ks)
	}

	pc := dialResp(t, p.Addr)
	refc := dialResp(t, ref.Addr)
	for _, cmd := range [][]string{
		{"TYPE", "lock:0"}, {"TYPE", "lock:h"}, {"TYPE", "lock:z"}, {"TYPE", "nosuch"}, {"TYPE", "lock:minority"},
		{"EXISTS", "lock:h", "lock:z", "lock:0"}, {"HGETALL", "lock:h"}, {"HGETALL", "nosuch"}, {"HGET", "lock:h", "uuid-1:7"},
		{"HGET", "lock:h", "nope"}, {"HGET", "lock:0", "f"}, {"HGETALL", "lock:z"}, {"ZRANGE", "lock:z", "0", "-1", "WITHSCORES"},
		{"ZRANGE", "lock:z", "0", "-1"}, {"ZRANGE", "lock:z", "1", "5"}, {"ZRANGE", "lock:h", "0", "-1"}, {"ZRANGE", "nosuch", "0", "-1"},
		{"ZRANGE", "lock:z", "a", "1"}, {"OBJECT", "ENCODING", "lock:0"}, {"OBJECT", "ENCODING", "lock:h"},
		{"OBJECT", "ENCODING", "lock:z"}, {"OBJECT", "ENCODING", "nosuch"}, {"SCAN", "x"}, {"SCAN", "0", "COUNT", "0"},
		{"SCAN", "0", "COUNT", "x"}, {"SCAN", "0", "MATCH"}, {"STRLEN", "lock:0"}, {"STRLEN", "lock:h"}, {"STRLEN", "nosuch"},
		{"HLEN", "lock:h"}, {"HLEN", "lock:0"}, {"HLEN", "nosuch"}, {"ZCARD", "lock:z"}, {"ZCARD", "lock:h"}, {"ZCARD", "nosuch"},
	} {
		pv, err := pc.do(cmdOf(cmd...))
		if err != nil {
			t.Fatalf("proxy %v: %v", cmd, err)
		}
		rv, err := refc.do(cmdOf(cmd...))
		if err != nil {
			t.Fatalf("redis %v: %v", cmd, err)
		}
		if pv.String() != rv.String() {
			t.Errorf("%v = %s; one Redis: %s", cmd, pv, rv)
		}
	}
	for _, cmd := range [][]string{{"TTL", "lock:h"}, {"PTTL", "lock:z"}} {
		if v, err := pc.do(cmdOf(cmd...)); err != nil || v.kind != ':' || v.text <= "0" {
			t.Errorf("%v = %s, %v; want the time left", cmd, v, err)
		}
	}
	// redis-cli --bigkeys: SCAN, TYPE, then STRLEN, HLEN, ZCARD of each.
	out, err := exec.CommandContext(t.Context(), cli, "-h", host, "-p", port, "--bigkeys").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --bigkeys: %v: %s", err, out)
	}
	for _, want := range []string{"Sampled 23 keys", `Biggest   hash found '"lock:h"' has 1 fields`, `Biggest   zset found '"lock:z"' has 1 members`, "21 strings with"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("redis-cli --bigkeys printed:\n%s\nwant %q", out, want)
		}
	}
	if strings.Contains(string(out), "Warning") {
		t.Errorf("redis-cli --bigkeys warned:\n%s", out)
	}
	// 22 locks and other:1 on every node; the minority key on two.
	if n, err := p.Client.DBSize(t.Context()).Result(); err != nil || n != 23 {
		t.Errorf("DBSIZE = %d, %v; want 23", n, err)
	}
	info := p.Client.Info(t.Context(), "keyspace").Val()
	if !strings.Contains(info, "db0:keys=23,expires=23,avg_ttl=0") {
		t.Errorf("INFO keyspace = %q; want db0:keys=23,expires=23", info)
	}
}

// A SCAN's cursor stays valid while a minority of the masters goes down
// and one restarts between its pages: every lock a quorum held
// throughout is listed.
func TestScanCursorSurvivesMinorityDownAndRestart(t *testing.T) {
	cases := []struct {
		name string
		at   func(c *cluster) map[int]func() // page -> what happens before it
	}{
		{"node 0 dies on the first page", func(c *cluster) map[int]func() {
			return map[int]func(){1: func() { c.kill(0) }}
		}},
		{"node 0 restarts empty while it is walked", func(c *cluster) map[int]func() {
			return map[int]func(){3: func() { c.procs[0] = restartRedis(t, c.procs[0]) }}
		}},
		{"node 1 dies while it is walked, node 0 restarts after its walk", func(c *cluster) map[int]func() {
			return map[int]func(){14: func() { c.kill(1) }, 16: func() { c.procs[0] = restartRedis(t, c.procs[0]) }}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := startNodes(t, 5)
			qcfg := safetyConfig()
			qcfg.MaxTTL = 2 * time.Minute // the locks last a minute
			p := mustStartMonitored(t, qcfg, c.addrs...)
			keys := runbookLocks(t, c, p, nil, 40)
			at := tc.at(c)
			got := scanAll(t, p.Client, "lock:*", 4, func(page int) {
				if f := at[page]; f != nil {
					f()
				}
			})
			for _, k := range keys {
				if !slices.Contains(got, k) {
					t.Errorf("SCAN missed %s (got %d keys: %v)", k, len(got), got)
				}
			}
			for _, k := range got {
				if !slices.Contains(keys, k) {
					t.Errorf("SCAN gave %s, which no quorum held", k)
				}
			}
			if v, err := p.Client.Do(t.Context(), "SCAN", "18446744073709551615").Result(); err == nil {
				t.Errorf("SCAN of a cursor no scan gave = %v; want ERR invalid cursor", v)
			}
		})
	}
}

// A leak scan (every lock key through the proxy, its PTTL) finds no key
// without a TTL, and INFO says the same of the masters
// (keys_without_ttl:0); a key written past the proxy without a TTL is
// found by both.
func TestLeakScanFindsNoKeyWithoutTTL(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{})
	runbookLocks(t, c, p, nil, 10)
	leaks := func() (found []string) {
		for _, k := range scanAll(t, p.Client, "*", 0, nil) {
			if pttl, err := p.Client.PTTL(t.Context(), k).Result(); err != nil || pttl == -1 {
				found = append(found, k)
			}
		}
		return found
	}
	withoutTTL := func() string {
		for l := range strings.Lines(p.Client.Info(t.Context(), "quorum").Val()) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "keys_without_ttl:"); ok {
				return v
			}
		}
		return "(missing)"
	}
	if got := leaks(); len(got) != 0 {
		t.Errorf("leak scan through the proxy found %v; want none", got)
	}
	if got := withoutTTL(); got != "0" {
		t.Errorf("INFO keys_without_ttl = %s; want 0 (the membership record is not a lock)", got)
	}
	for _, d := range c.direct {
		d.Set(t.Context(), "lock:leaked", "x", 0)
	}
	if got := leaks(); !slices.Equal(got, []string{"lock:leaked"}) {
		t.Errorf("leak scan through the proxy found %v; want [lock:leaked]", got)
	}
	if got := withoutTTL(); got != "1" {
		t.Errorf("INFO keys_without_ttl = %s; want 1", got)
	}
}

// The runbook reads are the read class's: a reader runs them and sees
// only the keys its patterns allow; it cannot take a lock.
func TestRunbookReadsUnderTheReadClass(t *testing.T) {
	c, p := setup(t, 3, proxy.Config{Users: []acl.UserConfig{
		{Name: "admin", Password: "admin-pw", Allow: []string{"lock", "read", "admin"}},
		{Name: "reader", Password: "reader-pw", Allow: []string{"read"}, Keys: []string{"lock:1*", "lock:h"}},
	}})
	p.Client = newClient(t, p.Addr, func(o *redis.Options) { o.Username, o.Password = "admin", "admin-pw" })
	runbookLocks(t, c, p, nil, 12)
	r := newClient(t, p.Addr, func(o *redis.Options) { o.Username, o.Password = "reader", "reader-pw" })
	got := scanAll(t, r, "", 0, nil)
	slices.Sort(got)
	if want := []string{"lock:1", "lock:10", "lock:11", "lock:h"}; !slices.Equal(got, want) {
		t.Errorf("reader's SCAN = %v; want %v", got, want)
	}
	if v, err := r.HGetAll(t.Context(), "lock:h").Result(); err != nil || v["uuid-1:7"] != "2" {
		t.Errorf("reader's HGETALL lock:h = %v, %v", v, err)
	}
	if v, err := r.Type(t.Context(), "lock:1").Result(); err != nil || v != "string" {
		t.Errorf("reader's TYPE lock:1 = %v, %v", v, err)
	}
	if err := r.Type(t.Context(), "lock:2").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("reader's TYPE lock:2 = %v; want NOPERM (not its key)", err)
	}
	if err := r.SetNX(t.Context(), "lock:1x", "t", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("reader's SET = %v; want NOPERM", err)
	}
}
