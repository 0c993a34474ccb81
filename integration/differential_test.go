package integration

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

var (
	diffSeed = flag.Uint64("diff.seed", 0, "seed of the differential test's command sequences (0: a new one, printed)")
	diffN    = flag.Int("diff.n", 0, "commands per protocol in the differential test (0: 9000, or 1000 with -short)")
	diffLog  = flag.Bool("diff.log", false, "log every command of the differential test with both replies")
)

const (
	// diffMaxTTL is the longest TTL the generator asks for on the shared
	// keys; the shortest is 20s, so that no shared key expires mid-run.
	diffMaxTTL = 60 * time.Second
	// driftAllowance is how much lower the proxy's PTTL of a key set with
	// at most diffMaxTTL may be than the reference's: its drift allowance
	// (1% plus 2ms), plus a margin for the time between the two reads and
	// for the proxy's own read, which it subtracts too, on a loaded
	// machine (seen above 600ms on two busy cores).
	driftAllowance = diffMaxTTL/100 + 2*time.Millisecond + time.Second
)

// allowance is how much lower the proxy's PTTL may be for a key the
// reference says has ms left. redis-py's additive extend can take a key
// past diffMaxTTL, and each extend charges its own drift, so twice the
// drift of what is left is allowed there.
func allowance(ms int64) int64 {
	if ms <= diffMaxTTL.Milliseconds() {
		return driftAllowance.Milliseconds()
	}
	return ms/50 + driftAllowance.Milliseconds()
}

// diffCmd is one command of a sequence, sent to both servers.
type diffCmd struct {
	args   [][]byte
	inline string // sent as this inline line instead, if set
	raw    string // bytes sent before it (an empty multibulk)
	// ref, if set, is what the reference runs instead: a command Redis
	// 7.0 lacks (Redis 8.4's DELEX, Valkey's DELIFEQ, ...) as the script
	// that does what its documentation says. refDigest replaces the
	// reference's bulk reply with its digest (DIGEST, by GET).
	ref       []string
	refDigest bool
}

func cmdOf(args ...string) diffCmd {
	c := diffCmd{args: make([][]byte, len(args))}
	for i, a := range args {
		c.args[i] = []byte(a)
	}
	return c
}

func (c diffCmd) name() string { return strings.ToLower(string(c.args[0])) }

// keys returns the keys c names, by the command's own rules.
func (c diffCmd) keys() []string {
	var ks [][]byte
	switch c.name() {
	case "set", "get", "pttl", "ttl", "incr", "expire", "delex", "delifeq", "digest":
		if len(c.args) > 1 {
			ks = c.args[1:2]
		}
	case "exists", "del", "unlink":
		ks = c.args[1:]
	case "eval", "evalsha":
		if len(c.args) > 2 {
			if n, err := strconv.Atoi(string(c.args[2])); err == nil && n >= 0 && n <= len(c.args)-3 && string(c.args[2]) == strconv.Itoa(n) {
				ks = c.args[3 : 3+n]
			}
		}
	}
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// writes reports whether c may change a key on the reference server.
func (c diffCmd) writes() bool {
	switch c.name() {
	case "set", "eval", "evalsha", "del", "unlink", "incr", "expire", "delex", "delifeq":
		return true
	}
	return false
}

func (c diffCmd) wire() string {
	if c.inline != "" {
		return c.raw + c.inline + "\r\n"
	}
	var b strings.Builder
	b.WriteString(c.raw)
	fmt.Fprintf(&b, "*%d\r\n", len(c.args))
	for _, a := range c.args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func (c diffCmd) String() string {
	if c.inline != "" {
		return "inline " + strconv.Quote(c.raw+c.inline)
	}
	parts := make([]string, len(c.args))
	for i, a := range c.args {
		parts[i] = strconv.Quote(string(a))
		if len(parts[i]) > 60 {
			parts[i] = parts[i][:57] + "...\""
		}
	}
	return c.raw + strings.Join(parts, " ")
}

// respConn is a bare connection that reads replies as respValues.
type respConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialResp(t testing.TB, addr string) *respConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &respConn{c: c, r: bufio.NewReader(c)}
}

// do sends c and reads one reply within 10s.
func (rc *respConn) do(c diffCmd) (respValue, error) {
	rc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := rc.c.Write([]byte(c.wire())); err != nil {
		return respValue{}, err
	}
	return readRESP(rc.r)
}

// snapshot is a key's state on the reference server before a write.
type snapshot struct {
	val    string
	exists bool
	expire int64 // PEXPIRETIME: Unix ms, -1 without expiry
	taken  int64 // Unix ms when it was read
}

// differ runs one seeded sequence against the reference and the proxy.
type differ struct {
	t       *testing.T
	proto   int
	gen     *diffGen
	ref     *redis.Client   // side channel to the reference, for snapshots
	prx     *redis.Client   // side channel to the proxy, for its PTTLs
	masters []*redis.Client // the proxy's masters, for alignKept
	snaps   map[string]snapshot
	history []string
	counts  map[string]int
}

func (d *differ) nearExpiry(key string) bool {
	if s, ok := d.snaps[key]; ok {
		return !s.exists || s.expire > 0 && s.expire-s.taken <= driftAllowance.Milliseconds()
	}
	ms, err := d.ref.PTTL(context.Background(), key).Result()
	return err == nil && ms <= driftAllowance
}

// proxyNearExpiry reports whether the proxy's copy of key is gone or
// within the drift allowance of its expiry. The proxy sets a key after
// the reference did, so its copy may outlive the reference's by that
// time: a SET NX the reference grants and the proxy answers taken (the
// near-expiry row) leaves the proxy's copy there a moment longer.
func (d *differ) proxyNearExpiry(key string) bool {
	ms, err := d.prx.PTTL(context.Background(), key).Result()
	return err == nil && (ms == -2 || ms >= 0 && ms <= driftAllowance)
}

func (d *differ) snapshot(ctx context.Context, keys []string) {
	clear(d.snaps)
	for _, k := range keys {
		s := snapshot{taken: time.Now().UnixMilli()}
		v, err := d.ref.Get(ctx, k).Result()
		s.val, s.exists = v, err == nil
		if s.exists {
			s.expire, _ = d.ref.Do(ctx, "PEXPIRETIME", k).Int64()
		}
		d.snaps[k] = s
	}
}

// restore puts the snapshot keys back on the reference: the proxy refused
// the command, so it changed nothing there either.
func (d *differ) restore(ctx context.Context) {
	for k, s := range d.snaps {
		var err error
		switch {
		case !s.exists:
			err = d.ref.Del(ctx, k).Err()
		case s.expire > 0:
			err = d.ref.Do(ctx, "SET", k, s.val, "PXAT", s.expire).Err()
		default:
			err = d.ref.Set(ctx, k, s.val, 0).Err()
		}
		if err != nil {
			d.t.Fatalf("restore %q on the reference: %v", k, err)
		}
	}
}

// undoConnection puts the reference connection back where the proxy's
// stayed after a refused connection command: database 0, no tracking.
func (d *differ) undoConnection(i int, c diffCmd, r respValue, rc *respConn) {
	var undo diffCmd
	switch {
	case r.isError():
		return
	case c.name() == "select":
		undo = cmdOf("SELECT", "0")
	case c.name() == "client" && len(c.args) > 1 && strings.EqualFold(string(c.args[1]), "tracking"):
		undo = cmdOf("CLIENT", "TRACKING", "off")
	default:
		return
	}
	if got, err := rc.do(undo); err != nil || got.String() != "+OK" {
		d.t.Fatalf("command %d: %s on the reference = %s, %v", i, undo, got, err)
	}
}

// same reports whether two replies to c agree: exactly, or with the
// proxy's PTTL/TTL lower by at most the drift allowance, never higher.
func same(c diffCmd, r, p respValue) bool {
	if r.String() == p.String() {
		return true
	}
	if c.name() == "info" || c.name() == "client" && strings.EqualFold(string(c.args[1]), "info") {
		return r.kind == p.kind // the contents differ by nature; the type must not
	}
	rn, rok := r.integer()
	pn, pok := p.integer()
	switch {
	case !rok || !pok:
		return false
	case c.name() == "client" && strings.EqualFold(string(c.args[1]), "id"):
		return true // connection ids differ by design
	case c.name() == "command":
		return true // COMMAND COUNT: the proxy serves fewer commands
	case rn < 0 || pn < 0:
		return false
	case c.name() == "pttl" || isPTTLScript(c):
		if rn <= driftAllowance.Milliseconds() {
			// A key set with a TTL of a few ms: each server set it when
			// the command reached it, the proxy later, by more than its
			// drift allowance on so short a TTL (seen: 21ms left on the
			// reference, 32 on the proxy, for PX 50).
			return pn <= rn+driftAllowance.Milliseconds()
		}
		return pn <= rn && pn >= rn-allowance(rn)
	case c.name() == "ttl":
		// Redis rounds to the nearest second, the proxy down.
		return pn <= rn && (pn+1)*1000 > rn*1000-500-allowance(rn*1000)
	}
	return false
}

// catalogueEvalSHA returns the digest c runs if c is an EVALSHA of a
// catalogue script.
func catalogueEvalSHA(c diffCmd) string {
	if c.name() == "evalsha" && len(c.args) > 1 && catalogueSHA(string(c.args[1])) {
		return string(c.args[1])
	}
	return ""
}

// isPTTLScript reports whether c runs a script that replies a PTTL:
// redislock's, or any body that calls PTTL.
func isPTTLScript(c diffCmd) bool {
	s := scriptByName("redislock pttl")
	switch c.name() {
	case "eval":
		return string(c.args[1]) == s.body || strings.Contains(strings.ToLower(string(c.args[1])), "'pttl'")
	case "evalsha":
		return strings.EqualFold(string(c.args[1]), s.sha)
	}
	return false
}

// masked hides what differs between two servers by design in HELLO's
// reply: the connection id and the version, and the proxy's own version,
// which only the proxy adds.
func masked(c diffCmd, v respValue) respValue {
	if c.name() != "hello" || (v.kind != '%' && v.kind != '*') {
		return v
	}
	var items []respValue
	for i := 0; i+1 < len(v.items); i += 2 {
		k, val := v.items[i], v.items[i+1]
		switch k.text {
		case "proxy_version":
			continue
		case "id", "version":
			val = respValue{kind: val.kind, text: "*"}
		}
		items = append(items, k, val)
	}
	return respValue{kind: v.kind, items: items}
}

// step sends c to both servers and checks the replies.
func (d *differ) step(ctx context.Context, i int, c diffCmd, rc, pc *respConn) {
	d.history = append(d.history, c.String())
	if len(d.history) > 12 {
		d.history = d.history[1:]
	}
	writes := c.writes()
	if writes {
		d.snapshot(ctx, c.keys())
	}
	rcmd := c
	if c.ref != nil {
		rcmd = cmdOf(c.ref...)
	}
	r, err := rc.do(rcmd)
	if err != nil {
		d.t.Fatalf("seed %d, RESP%d, command %d %s: reference: %v", d.gen.seed, d.proto, i, c, err)
	}
	if c.refDigest && r.kind == '$' {
		r.text = resp.Digest(r.text)
	}
	p, err := pc.do(c)
	if err != nil {
		d.t.Fatalf("seed %d, RESP%d, command %d %s: proxy: %v\nreference replied %s\nlast commands:\n  %s",
			d.gen.seed, d.proto, i, c, err, r, strings.Join(d.history, "\n  "))
	}
	if sha := catalogueEvalSHA(c); sha != "" && strings.HasPrefix(r.text, "NOSCRIPT") && !strings.HasPrefix(p.text, "NOSCRIPT") {
		// The proxy knows every catalogue digest without SCRIPT LOAD (a
		// documented difference): load it on the reference and compare
		// what the script does.
		d.counts[catalogueRow]++
		if err := d.ref.ScriptLoad(ctx, scriptBySHA(sha).body).Err(); err != nil {
			d.t.Fatalf("SCRIPT LOAD on the reference: %v", err)
		}
		if r, err = rc.do(c); err != nil {
			d.t.Fatalf("seed %d, RESP%d, command %d %s: reference: %v", d.gen.seed, d.proto, i, c, err)
		}
	}
	r, p = masked(c, r), masked(c, p)
	if *diffLog {
		d.t.Logf("%d %s\n  reference: %s\n  proxy:     %s", i, c, r, p)
	}
	if same(c, r, p) {
		d.alignKept(ctx, c, r)
		return
	}
	if ref := matchRefusal(c, r, p, d); ref != nil {
		d.counts[ref.row]++
		if writes {
			d.restore(ctx)
		}
		d.undoConnection(i, c, r, rc)
		return
	}
	d.t.Fatalf("seed %d (replay: -diff.seed %d), RESP%d, command %d: %s\n  reference: %s\n  proxy:     %s\nlast commands:\n  %s",
		d.gen.seed, d.gen.seed, d.proto, i, c, r, p, strings.Join(d.history, "\n  "))
}

// alignKept follows a granted redislock obtain c (reply r) that took a
// key again whose expiry was later than the one asked: each master kept
// it (keptRow), where one Redis sets the TTL asked. The expiry of each
// master that holds the key's value is cut to the reference's, so that
// later replies compare as before.
func (d *differ) alignKept(ctx context.Context, c diffCmd, r respValue) {
	obtain := scriptByName("redislock obtain")
	isObtain := (c.name() == "eval" || c.name() == "evalsha") && len(c.args) > 1 &&
		(string(c.args[1]) == obtain.body || strings.EqualFold(string(c.args[1]), obtain.sha))
	if !isObtain || r.String() != "+OK" {
		return
	}
	for _, k := range c.keys() {
		s, ok := d.snaps[k]
		if !ok || !s.exists || s.expire <= 0 {
			continue
		}
		at, err := d.ref.Do(ctx, "PEXPIRETIME", k).Int64()
		if err != nil {
			d.t.Fatalf("PEXPIRETIME %q on the reference: %v", k, err)
		}
		if at <= 0 || at >= s.expire {
			continue
		}
		val := d.ref.Get(ctx, k).Val()
		d.counts[keptRow]++
		for i, m := range d.masters {
			if m.Get(ctx, k).Val() != val {
				continue // not this obtain's key there
			}
			if err := m.Do(ctx, "PEXPIREAT", k, at, "LT").Err(); err != nil {
				d.t.Fatalf("PEXPIREAT %q on master %d: %v", k, i, err)
			}
		}
	}
}

// Seeded random sequences of lock commands get the same replies from the
// proxy over five masters as from one redis-server, command for command,
// in RESP2 and in RESP3, except for the documented refusals.
func TestDifferential(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	n := *diffN
	if n == 0 {
		n = 9000
		if testing.Short() {
			n = 1000
		}
	}
	t.Logf("seed %d (replay with -diff.seed %d), %d commands per protocol", seed, seed, n)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			runDifferential(t, proto, seed, n, "")
		})
	}
	// With a password on both: NOAUTH, WRONGPASS and AUTH, until the
	// sequence's AUTH pw.
	t.Run("RESP2 requirepass", func(t *testing.T) {
		runDifferential(t, 2, seed, n/4, "pw")
	})
}

func runDifferential(t *testing.T, proto int, seed uint64, n int, pass string) {
	d, rc, pc := newDiffer(t, proto, seed, pass)
	ctx := t.Context()
	if proto == 3 {
		d.step(ctx, 0, cmdOf("HELLO", "3"), rc, pc)
	}
	for i := range n {
		d.step(ctx, i+1, d.gen.next(), rc, pc)
	}
	d.step(ctx, n+1, cmdOf("QUIT"), rc, pc)
	for name, c := range map[string]*respConn{"reference": rc, "proxy": pc} {
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if b, err := c.r.ReadByte(); err == nil {
			t.Errorf("%s sent %q after QUIT; want the connection closed", name, b)
		}
	}
	var summary []string
	for _, r := range refusals {
		summary = append(summary, fmt.Sprintf("%5d  %s", d.counts[r.row], r.row))
	}
	t.Logf("RESP%d: %d commands; documented differences seen:\n%s", proto, n+2, strings.Join(summary, "\n"))
}

// newDiffer starts one redis-server as the reference and the proxy over
// five masters (with password pass on both, if any), and connects to
// each.
func newDiffer(t *testing.T, proto int, seed uint64, pass string) (*differ, *respConn, *respConn) {
	var ref *redisProc
	if pass != "" {
		ref = startRedis(t, "--requirepass", pass)
	} else {
		ref = startRedis(t)
	}
	nodes := startNodes(t, 5)
	logs := newLogWriter(t)
	cfg := proxy.Config{
		CommandTimeout: commandTimeout,
		Log:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	cfg.RequirePass = pass
	// The suite's generous node deadline: a node stalled by a loaded
	// machine must not turn an answer into NOQUORUM.
	qcfg := quorum.Config{NodeTimeout: nodeTimeout, MinTTL: 2 * nodeTimeout}
	p := serveProxy(t, cfg, newEngine(t, qcfg, nodes.addrs...))

	d := &differ{
		t: t, proto: proto, gen: newDiffGen(seed+uint64(proto), proto),
		ref:   redis.NewClient(&redis.Options{Addr: ref.Addr, Password: pass}),
		prx:   redis.NewClient(&redis.Options{Addr: p.Addr, Password: pass}),
		snaps: map[string]snapshot{}, counts: map[string]int{},
		masters: nodes.direct,
	}
	t.Cleanup(func() { d.ref.Close(); d.prx.Close() })
	d.gen.seed = seed
	return d, dialResp(t, ref.Addr), dialResp(t, p.Addr)
}

// Several clients on the proxy at once, each command checked against what
// one Redis allows whatever the interleaving: one owner per key at a
// time, a release by a non-owner never deletes, EXISTS k k is 0 or 2, GET
// shows no token but a client's.
func TestDifferentialConcurrent(t *testing.T) {
	seed := *diffSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	const clients = 8
	per := 600 // 4,800 commands in all
	if testing.Short() {
		per = 100
	}
	t.Logf("seed %d (replay with -diff.seed %d), %d clients x %d commands", seed, seed, clients, per)
	_, p := setup(t, 5, proxy.Config{})
	keys := []string{"c1", "c2", "c3"}
	release := scriptByName("redislock release")

	var mu sync.Mutex
	owner := map[string]string{} // key -> token of the client that holds it
	var wg sync.WaitGroup
	for id := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(id)))
			c := dialResp(t, p.Addr)
			if id%2 == 1 { // half the clients speak RESP3
				if v, err := c.do(cmdOf("HELLO", "3")); err != nil || v.kind != '%' {
					t.Errorf("client %d: HELLO 3 = %s, %v", id, v, err)
					return
				}
			}
			tok := fmt.Sprintf("client-%d", id)
			held := map[string]bool{}
			fail := func(format string, args ...any) {
				t.Errorf("seed %d, client %d: "+format, append([]any{seed, id}, args...)...)
			}
			for range per {
				key := keys[rng.IntN(len(keys))]
				switch rng.IntN(5) {
				case 0, 1: // acquire, or release what it holds
					if held[key] {
						mu.Lock()
						delete(owner, key) // before the release: no one may take it until then
						mu.Unlock()
						v, err := c.do(cmdOf("EVALSHA", release.sha, "1", key, tok))
						if err != nil || v.String() != ":1" {
							fail("release of %s it held = %s, %v; want :1", key, v, err)
						}
						held[key] = false
						continue
					}
					v, err := c.do(cmdOf("SET", key, tok, "NX", "PX", "30000"))
					switch {
					case err != nil:
						fail("SET %s: %v", key, err)
					case v.String() == "+OK":
						mu.Lock()
						if o := owner[key]; o != "" {
							fail("SET %s granted while %s holds it", key, o)
						}
						owner[key] = tok
						mu.Unlock()
						held[key] = true
					case v.kind != 'N' && v.kind != '_':
						fail("SET %s = %s; want +OK or nil", key, v)
					}
				case 2: // a release by a non-owner never deletes
					if held[key] {
						continue
					}
					v, err := c.do(cmdOf("EVALSHA", release.sha, "1", key, tok))
					if err != nil || v.String() != ":0" {
						fail("release of %s by a non-owner = %s, %v; want :0", key, v, err)
					}
				case 3:
					v, err := c.do(cmdOf("EXISTS", key, key))
					if n, ok := v.integer(); err != nil || !ok || n != 0 && n != 2 {
						fail("EXISTS %s %s = %s, %v; want 0 or 2", key, key, v, err)
					}
					if held[key] && v.String() != ":2" {
						fail("EXISTS %s %s while holding it = %s; want 2", key, key, v)
					}
				case 4:
					v, err := c.do(cmdOf("GET", key))
					switch {
					case err != nil:
						fail("GET %s: %v", key, err)
					case held[key] && v.text != tok:
						fail("GET %s while holding it = %s; want %q", key, v, tok)
					case v.kind == '$' && !strings.HasPrefix(v.text, "client-"):
						fail("GET %s = %s; want a client's token or nil", key, v)
					case v.kind != '$' && v.kind != 'N' && v.kind != '_':
						fail("GET %s = %s; want a bulk string or nil", key, v)
					}
				}
			}
			for key := range held {
				if held[key] {
					mu.Lock()
					delete(owner, key)
					mu.Unlock()
					if v, err := c.do(cmdOf("EVALSHA", release.sha, "1", key, tok)); err != nil || v.String() != ":1" {
						fail("final release of %s = %s, %v; want :1", key, v, err)
					}
				}
			}
		})
	}
	wg.Wait()
}

// The proxy sets a key after the reference did, so its copy can outlive
// the reference's by a moment: a SET NX the reference grants then (the
// near-expiry row) is followed by reads where the proxy still has the
// key. Those reads are the same row; a proxy key far from its expiry is
// not (seen in a loaded CI run: EXISTS k1 answered 1 by the proxy, 0 by
// the reference).
func TestDifferentialProxyCopyOutlivesReference(t *testing.T) {
	d, rc, pc := newDiffer(t, 2, 1, "")
	ctx := t.Context()
	if err := d.ref.SetNX(ctx, "k1", "a", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.prx.SetNX(ctx, "k1", "a", 3*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	for d.ref.Exists(ctx, "k1").Val() == 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if ms := d.prx.PTTL(ctx, "k1").Val(); ms <= 0 {
		t.Fatalf("proxy PTTL k1 = %v once the reference's expired; want its copy still there", ms)
	}
	d.step(ctx, 1, cmdOf("SET", "k1", "b", "NX", "PX", "20000"), rc, pc)
	d.step(ctx, 2, cmdOf("EXISTS", "k1"), rc, pc)
	d.step(ctx, 3, cmdOf("GET", "k1"), rc, pc)
	d.step(ctx, 4, cmdOf("PTTL", "k1"), rc, pc)

	if err := d.prx.SetNX(ctx, "k2", "x", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	c := cmdOf("EXISTS", "k2")
	r, _ := rc.do(c)
	p, _ := pc.do(c)
	if ref := matchRefusal(c, r, p, d); ref != nil {
		t.Errorf("EXISTS k2 (reference %s, proxy %s, its copy 30s from expiry) matched %q; want no documented difference", r, p, ref.row)
	}
}
