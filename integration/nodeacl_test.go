package integration

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
	"github.com/redlock-proxy/redlock-proxy/internal/testpki"
	"github.com/redlock-proxy/redlock-proxy/internal/tlsfiles"
)

// proxyACL is the least-privilege ACL rule of the proxy's own user on
// the masters, as docs/operations.md gives it: the commands the proxy sends
// (INFO, TIME, the membership hash, EVALSHA and EVAL of its scripts, DEL
// for allow_force_del; PING and the subscribe commands of the pub/sub
// hub), those its own scripts call, and for the client scripts served by
// their effect, FUNCTION LOAD and FCALL of their wrappers, those the
// wrapper calls (snapshot and roll back) and the allow-list (internal/lua). AUTH and
// HELLO need no rule. With trust_fsync_always, add +config|get.
var proxyACL = strings.Fields("~* &* -@all +info +time +hgetall +hset +evalsha +eval +del +get +set +exists +getrange +pttl +pexpire +ping +subscribe +psubscribe +ssubscribe +unsubscribe +punsubscribe +sunsubscribe" +
	" +fcall +function|load +function|list +function|delete +script|flush +type +pexpiretime +pexpireat +strlen +persist +hkeys +hdel +zrange +zrem +zadd" +
	" +setnx +expire +expireat +ttl +unlink +hget +hincrby +hexists +hlen +zscore +zcount +zcard +zremrangebyscore +zrevrange +publish +spublish +select +scan +script|kill +function|kill" +
	" +object|encoding +rename +hsetnx +client|id +client|kill")

// TestNodeACLCoversTheEmbeddedLua: the ACL line of docs/operations.md is
// proxyACL, and every command the proxy's own Lua calls by name (quorum's
// scripts and wrapper) is in it: a command missing there fails on every
// master under that ACL (attack6 A9: OBJECT ENCODING, RENAME).
func TestNodeACLCoversTheEmbeddedLua(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "ACL SETUSER redlock on >PASSWORD " + strings.Join(proxyACL, " ")
	if !strings.Contains(string(doc), want+"\n") {
		t.Errorf("docs/operations.md has no line\n%s", want)
	}
	rules := map[string]bool{}
	for _, r := range proxyACL {
		rules[strings.TrimPrefix(r, "+")] = true
	}
	files, _ := filepath.Glob(filepath.Join("..", "quorum", "redisnode", "lua", "*.lua"))
	gos, _ := filepath.Glob(filepath.Join("..", "quorum", "redisnode", "*.go"))
	call := regexp.MustCompile(`(?:redis\.p?call|__rlp_call)\(\s*["']([A-Za-z]+)["'](?:\s*,\s*["']([A-Za-z]+)["'])?`)
	seen := 0
	for _, f := range append(files, gos...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			seen++
			cmd := strings.ToLower(m[1])
			if containers[cmd] {
				cmd += "|" + strings.ToLower(m[2])
			}
			if !rules[cmd] {
				t.Errorf("%s calls %s, which the documented node ACL lacks", filepath.Base(f), cmd)
			}
		}
	}
	if seen < 20 {
		t.Errorf("found %d calls in the embedded Lua; want the scripts' calls (a changed call form?)", seen)
	}
}

// containers are the commands whose ACL rule names a subcommand.
var containers = map[string]bool{"object": true, "script": true, "function": true, "config": true, "client": true}

// startACLMaster starts a master whose default user is off and whose only
// users are the proxy's, limited to proxyACL, and an admin for the test.
func startACLMaster(t *testing.T) *redisProc {
	t.Helper()
	return redistest.Start(t, aclArgs()...)
}

func aclArgs() []string {
	return aclArgsWith(proxyACL)
}

func aclArgsWith(rules []string) []string {
	args := []string{"--user", "default", "off", "--user", "admin", "on", ">admin-pw", "~*", "&*", "+@all", "--user", "redlock", "on", ">node-secret"}
	return append(args, rules...)
}

func adminClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	return newClient(t, addr, func(o *redis.Options) { o.Username, o.Password = "admin", "admin-pw" })
}

// TestLeastPrivilegeNodeACL runs the proxy binary against masters that
// give it only proxyACL, with the password in node_password_file: lock
// cycles with SET NX, GET, PTTL, EXISTS, scripts and redsync's extend,
// Redisson's scripts served by their effect, pub/sub, the start-up checks, and the probes that see a master restarted empty
// all work, and no master logs a single denied command (ACL LOG).
func TestLeastPrivilegeNodeACL(t *testing.T) {
	masters := []*redisProc{startACLMaster(t), startACLMaster(t), startACLMaster(t)}
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "node-password")
	if err := os.WriteFile(pwFile, []byte("node-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("nodes = [%q, %q, %q]\nnode_username = \"redlock\"\nnode_password_file = %q\nmax_ttl = \"2s\"\nmin_ttl = \"500ms\"\nnode_timeout = \"200ms\"\nprobe_interval = \"100ms\"\nallow_force_del = true\n",
		masters[0].Addr, masters[1].Addr, masters[2].Addr, pwFile)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "-config", cfg)
	c := newClient(t, b.Addr, nil)
	ctx := t.Context()

	for i := range 3 {
		if f := nodeInfo(t, c, i); f["state"] != "up" {
			t.Fatalf("node%d = %v; want up", i, f)
		}
	}
	for i := range 20 {
		key := fmt.Sprintf("acl:%d", i)
		if ok, err := c.SetNX(ctx, key, "tok", 2*time.Second).Result(); err != nil || !ok {
			t.Fatalf("SET NX %s = %v, %v; want OK", key, ok, err)
		}
		if v, err := c.Get(ctx, key).Result(); err != nil || v != "tok" {
			t.Errorf("GET %s = %q, %v", key, v, err)
		}
		if ms, err := c.PTTL(ctx, key).Result(); err != nil || ms <= 0 {
			t.Errorf("PTTL %s = %v, %v", key, ms, err)
		}
		if n, err := c.Exists(ctx, key).Result(); err != nil || n != 1 {
			t.Errorf("EXISTS %s = %d, %v", key, n, err)
		}
		if n, err := c.Eval(ctx, distlockRelease, []string{key}, "tok").Int(); err != nil || n != 1 {
			t.Errorf("release %s = %d, %v", key, n, err)
		}
	}
	// A script served by effect (go-zero's acquire), through the
	// wrapper's snapshots, and its release.
	if v, err := goZeroLockScript.Run(ctx, c, []string{"acl:gozero"}, "tok", "2000").Result(); err != nil || v != "OK" {
		t.Errorf("go-zero acquire = %v, %v; want OK", v, err)
	}
	if n, err := goZeroReleaseScript.Run(ctx, c, []string{"acl:gozero"}, "tok").Int(); err != nil || n != 1 {
		t.Errorf("go-zero release = %d, %v; want 1", n, err)
	}
	rs := redsync.New(goredis.NewPool(c))
	m := rs.NewMutex("acl:redsync", redsync.WithExpiry(2*time.Second), redsync.WithTries(1))
	if err := m.LockContext(ctx); err != nil {
		t.Fatalf("redsync Lock: %v", err)
	}
	if ok, err := m.ExtendContext(ctx); err != nil || !ok {
		t.Errorf("redsync Extend = %v, %v", ok, err)
	}
	if ok, err := m.UnlockContext(ctx); err != nil || !ok {
		t.Errorf("redsync Unlock = %v, %v", ok, err)
	}
	if err := c.SetNX(ctx, "acl:forced", "tok", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Del(ctx, "acl:forced").Result(); err != nil || n != 1 {
		t.Errorf("DEL with allow_force_del = %d, %v; want 1", n, err)
	}

	// A client script served by its effect: Redisson's hash lock, renewal
	// and unlock (which publishes), through the wrapper on the masters.
	lock, renew, unlock := redis.NewScript(redissonLock), redis.NewScript(redissonRenew), redis.NewScript(redissonUnlock)
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
	if err := lock.Run(ctx, c, []string{"acl:redisson"}, 1500, owner).Err(); err != redis.Nil {
		t.Errorf("Redisson lock = %v; want nil (acquired)", err)
	}
	if v, err := renew.Run(ctx, c, []string{"acl:redisson"}, 1500, owner).Int64(); err != nil || v != 1 {
		t.Errorf("Redisson renew = %d, %v; want 1", v, err)
	}
	unlockKeys := []string{"acl:redisson", "redisson_lock__channel:{acl:redisson}", "redisson_unlock_latch:{acl:redisson}:r1"}
	if v, err := unlock.Run(ctx, c, unlockKeys, 0, 1500, owner, "PUBLISH", 1000).Int64(); err != nil || v != 1 {
		t.Errorf("Redisson unlock = %d, %v; want 1", v, err)
	}

	// Pub/sub through the hub's own connections, as the proxy's user.
	ps := c.Subscribe(ctx, "acl:chan")
	defer ps.Close()
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatalf("SUBSCRIBE through the proxy: %v", err)
	}
	pat := c.PSubscribe(ctx, "acl:*")
	defer pat.Close()
	if _, err := pat.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatalf("PSUBSCRIBE through the proxy: %v", err)
	}
	for _, m := range masters {
		if err := adminClient(t, m.Addr).Publish(ctx, "acl:chan", "released").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if msg, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Errorf("message through the proxy: %v", err)
	} else if m, ok := msg.(*redis.Message); !ok || m.Payload != "released" {
		t.Errorf("message through the proxy = %v; want released", msg)
	}
	if err := ps.Unsubscribe(ctx, "acl:chan"); err != nil {
		t.Errorf("UNSUBSCRIBE: %v", err)
	}
	if err := pat.PUnsubscribe(ctx, "acl:*"); err != nil {
		t.Errorf("PUNSUBSCRIBE: %v", err)
	}

	// A master restarted empty is seen (INFO run_id, TIME, the membership
	// record) and quarantined, then counts again.
	masters[0] = restartRedis(t, masters[0], aclArgs()...)
	waitState(t, c, 0, "quarantined", 5*time.Second)
	waitState(t, c, 0, "up", 10*time.Second)
	if err := c.SetNX(ctx, "acl:after", "tok", 2*time.Second).Err(); err != nil {
		t.Errorf("SET NX after the restart: %v", err)
	}
	// The restarted master lost the wrapper's library: the proxy loads it
	// again, as its user (the first call after the restart may meet the
	// connection to the process that is gone).
	loaded := false
	for i := range 5 {
		key := fmt.Sprintf("acl:gozero:after:%d", i)
		if v, err := goZeroLockScript.Run(ctx, c, []string{key}, "tok", "2000").Result(); err != nil || v != "OK" {
			t.Errorf("go-zero acquire after the restart = %v, %v; want OK", v, err)
		}
		if n, err := adminClient(t, masters[0].Addr).Do(ctx, "FUNCTION", "LIST").Slice(); err == nil && len(n) == 1 {
			loaded = true
			break
		}
	}
	if !loaded {
		t.Errorf("the restarted master has no wrapper library after 5 scripts served by effect")
	}

	for i, m := range masters {
		log, err := adminClient(t, m.Addr).Do(ctx, "ACL", "LOG").Slice()
		if err != nil || len(log) != 0 {
			t.Errorf("master %d ACL LOG = %v, %v; want no denied command", i, log, err)
		}
		if err := newClient(t, m.Addr, nil).Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
			t.Errorf("master %d PING as default = %v; want NOAUTH (default user off)", i, err)
		}
	}
}

// TestNodeACLWithoutFunctions: masters whose ACL predates functions (no
// FCALL, no FUNCTION LOAD) still serve scripts by their effect, as
// scripts, and each master logs the proxy's one try (then it stops).
func TestNodeACLWithoutFunctions(t *testing.T) {
	var rules []string
	for _, r := range proxyACL {
		if r != "+fcall" && r != "+function|load" {
			rules = append(rules, r)
		}
	}
	var masters []*redisProc
	for range 3 {
		masters = append(masters, redistest.Start(t, aclArgsWith(rules)...))
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("nodes = [%q, %q, %q]\nnode_username = \"redlock\"\nnode_password = \"node-secret\"\n",
		masters[0].Addr, masters[1].Addr, masters[2].Addr)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, startBinary(t, "-config", cfg).Addr, nil)
	ctx := t.Context()
	for i := range 5 {
		key := fmt.Sprintf("acl:nofn:%d", i)
		if v, err := goZeroLockScript.Run(ctx, c, []string{key}, "tok", "2000").Result(); err != nil || v != "OK" {
			t.Fatalf("go-zero acquire = %v, %v; want OK", v, err)
		}
		if v, err := goZeroLockScript.Run(ctx, c, []string{key}, "other", "2000").Result(); err != redis.Nil {
			t.Errorf("contended go-zero acquire = %v, %v; want nil", v, err)
		}
		if n, err := goZeroReleaseScript.Run(ctx, c, []string{key}, "tok").Int(); err != nil || n != 1 {
			t.Errorf("go-zero release = %d, %v; want 1", n, err)
		}
	}
	for i, m := range masters {
		admin := adminClient(t, m.Addr)
		if n, err := admin.Do(ctx, "FUNCTION", "LIST").Slice(); err != nil || len(n) != 0 {
			t.Errorf("master %d FUNCTION LIST = %v, %v; want none", i, n, err)
		}
		log, err := admin.Do(ctx, "ACL", "LOG").Slice()
		if err != nil || len(log) != 1 {
			t.Fatalf("master %d ACL LOG = %v, %v; want the one denied FCALL", i, log, err)
		}
		e := fmt.Sprint(log[0])
		if !strings.Contains(e, "object fcall") || !strings.Contains(e, "count 1 ") {
			t.Errorf("master %d ACL LOG entry = %s; want one denied FCALL", i, e)
		}
	}
}

// TestNodePasswordFromEnvironment: REDLOCK_PROXY_NODE_PASSWORD is the
// nodes' password; set together with node_password the proxy refuses to
// start, naming both.
func TestNodePasswordFromEnvironment(t *testing.T) {
	masters := []*redisProc{startACLMaster(t), startACLMaster(t), startACLMaster(t)}
	nodes := masters[0].Addr + "," + masters[1].Addr + "," + masters[2].Addr
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("node_username = \"redlock\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinaryEnv(t, []string{"REDLOCK_PROXY_NODE_PASSWORD=node-secret"}, "-config", cfg, "-nodes", nodes)
	c := newClient(t, b.Addr, nil)
	if ok, err := c.SetNX(t.Context(), "env:lock", "tok", 2*time.Second).Result(); err != nil || !ok {
		t.Errorf("SET NX with the password from the environment = %v, %v; want OK", ok, err)
	}

	both := filepath.Join(dir, "both.toml")
	if err := os.WriteFile(both, []byte("node_username = \"redlock\"\nnode_password = \"node-secret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(buildProxyBinary(t), "-config", both, "-nodes", nodes, "-listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "REDLOCK_PROXY_NODE_PASSWORD=node-secret")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "node_password and REDLOCK_PROXY_NODE_PASSWORD") {
		t.Errorf("start with node_password and the environment = %v\n%s; want a refusal naming both", err, out)
	}
	if strings.Contains(string(out), "node-secret") {
		t.Errorf("the refusal shows the password:\n%s", out)
	}
}

// TestBinaryTLSReloadOnSIGHUP runs the binary with a TLS port, then
// replaces the certificate files and the users in config.toml and sends
// SIGHUP: new handshakes get the new certificate, a TLS connection opened
// before stays open (and now must AUTH as a named user), and the new
// user logs in.
func TestBinaryTLSReloadOnSIGHUP(t *testing.T) {
	nodes := startNodes(t, 3)
	ca := testpki.NewCA(t, "proxy-ca")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	install := func(p testpki.Pair) {
		t.Helper()
		for from, to := range map[string]string{p.CertFile: certFile, p.KeyFile: keyFile} {
			b, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(ca.Issue(t, "first", "127.0.0.1"))
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := fmt.Sprintf("nodes = [%q, %q, %q]\ntls_listen = %q\ntls_cert_file = %q\ntls_key_file = %q\ntls_ca_file = %q\ntls_auth_clients = \"optional\"\n",
		nodes.addrs[0], nodes.addrs[1], nodes.addrs[2], tlsAddr, certFile, keyFile, ca.CertFile)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(base), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "-config", cfg)

	clientTLS, err := tlsfiles.Client(tlsfiles.ClientConfig{CAFile: ca.CertFile, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	open, err := tls.Dial("tcp", tlsAddr, clientTLS)
	if err != nil {
		t.Fatalf("dial TLS: %v", err)
	}
	defer open.Close()
	raw := &rawConn{t: t, c: open, r: bufio.NewReader(open)}
	if got := raw.do("SET", "hup:1", "tok", "NX", "PX", "5000"); got != "+OK" {
		t.Fatalf("SET over TLS = %s; want +OK", got)
	}

	install(ca.Issue(t, "second", "127.0.0.1"))
	users := base + "\n[[users]]\nname = \"app\"\npassword = \"app-pw\"\nallow = [\"lock\", \"read\"]\n"
	if err := os.WriteFile(cfg, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := tls.Dial("tcp", tlsAddr, clientTLS)
		if err != nil {
			t.Fatalf("dial TLS after SIGHUP: %v", err)
		}
		cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName
		c.Close()
		if cn == "second" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("certificate served 5s after SIGHUP = %q; want second", cn)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := raw.do("GET", "hup:1"); got != "-NOAUTH Authentication required." {
		t.Errorf("GET on the connection opened before SIGHUP = %s; want NOAUTH (users now required)", got)
	}
	if got := raw.do("AUTH", "app", "app-pw"); got != "+OK" {
		t.Errorf("AUTH app on the old connection = %s; want +OK", got)
	}
	if got := raw.do("GET", "hup:1"); got != `"tok"` {
		t.Errorf("GET as app = %s; want the token", got)
	}
	if !b.running() {
		t.Fatalf("the proxy exited on SIGHUP")
	}
}
