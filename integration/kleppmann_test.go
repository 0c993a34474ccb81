package integration

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/proxy"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Kleppmann's scenario ("How to do distributed locking", 2016) against a
// real resource: client A takes the lock and is paused past its TTL;
// client B takes it and writes; A wakes up and writes. PostgreSQL keeps
// the highest fencing token with the row and refuses a lower one.

// postgres is a PostgreSQL server started for one test.
type postgres struct{ port int }

// pgBin finds a PostgreSQL program: on PATH, or in Debian's versioned
// directory.
func pgBin(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1]
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed (Debian package postgresql)", name)
	}
	t.Skipf("%s not found", name)
	return ""
}

// startPostgres runs initdb and a server on a free loopback port in a
// temporary directory, and stops it when the test ends. PostgreSQL
// refuses to run as root: as root (CI), it runs as nobody.
func startPostgres(t *testing.T) *postgres {
	t.Helper()
	initdb, pgctl := pgBin(t, "initdb"), pgBin(t, "pg_ctl")
	pgBin(t, "psql")
	dir, err := os.MkdirTemp("", "fence-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	data := filepath.Join(dir, "data")
	var as []string // the command prefix that runs a program as the server's user
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			t.Fatalf("PostgreSQL cannot run as root, and there is no user nobody: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(data, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = []string{pgBin(t, "runuser"), "-u", "nobody", "--"}
	}
	run := func(args ...string) {
		t.Helper()
		argv := append(append([]string(nil), as...), args...)
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "-N")
	pg := &postgres{port: freePort(t)}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", pg.port, data)
	run(pgctl, "-D", data, "-l", filepath.Join(data, "server.log"), "-o", opts, "-w", "-t", "60", "start")
	t.Cleanup(func() { run(pgctl, "-D", data, "-m", "immediate", "-w", "stop") })
	return pg
}

// sql runs one statement with psql and returns its unaligned output.
func (pg *postgres) sql(t *testing.T, stmt string) string {
	t.Helper()
	out, err := exec.Command("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(pg.port), "-U", "postgres",
		"-d", "postgres", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1", "-c", stmt).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v\n%s", stmt, err, out)
	}
	return strings.TrimSpace(string(out))
}

// kleppmann runs the scenario and returns the value the row ends with:
// "B" when A's stale write was refused, "A" when it landed. With
// restart, two of the five masters are restarted empty while A sleeps.
func kleppmann(t *testing.T, fencing, restart bool) string {
	pg := startPostgres(t)
	pg.sql(t, "CREATE TABLE resource (id int PRIMARY KEY, value text NOT NULL, fence bigint NOT NULL DEFAULT 0)")
	pg.sql(t, "INSERT INTO resource VALUES (1, 'none', 0)")
	c := startNodes(t, 5)
	qcfg := quorum.Config{NodeTimeout: 100 * time.Millisecond, MinTTL: 200 * time.Millisecond, MaxTTL: 5 * time.Second}
	p := startProxy(t, proxy.Config{CommandTimeout: 2 * time.Second}, qcfg, c.addrs...)
	_, port, _ := strings.Cut(p.Addr, ":")
	const ttl = time.Second
	fence := map[bool]string{true: "yes", false: "no"}[fencing]

	// A: a real process that acquires, fences and stops itself.
	a := exec.Command("sh", filepath.Join("testdata", "fenceclient.sh"))
	a.Env = append(os.Environ(), "PROXY_PORT="+port, "PG_PORT="+strconv.Itoa(pg.port), "KEY=resource:1",
		"TOKEN=A", "TTL_MS="+strconv.Itoa(int(ttl.Milliseconds())), "FENCE="+fence)
	out, err := a.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.Stderr = newLogWriter(t)
	if err := a.Start(); err != nil {
		t.Fatalf("start client A: %v", err)
	}
	t.Cleanup(func() { a.Process.Signal(syscall.SIGCONT); a.Process.Kill(); a.Wait() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "fenced ") {
		t.Fatalf("client A: %q; want fenced T", lines.Text())
	}
	tokenA, _ := strconv.ParseInt(strings.TrimPrefix(lines.Text(), "fenced "), 10, 64)
	waitStopped(t, a.Process.Pid)

	// A sleeps past its TTL; meanwhile masters may restart empty.
	time.Sleep(ttl + 200*time.Millisecond)
	if restart {
		c.procs[1] = restartRedis(t, c.procs[1])
		c.procs[3] = restartRedis(t, c.procs[3])
	}

	// B acquires, fences and writes.
	ctx := t.Context()
	if err := p.Client.SetNX(ctx, "resource:1", "B", 5*time.Second).Err(); err != nil {
		t.Fatalf("client B: SET NX after A's TTL: %v", err)
	}
	stmt := "UPDATE resource SET value = 'B' WHERE id = 1"
	if fencing {
		tokenB, err := p.Client.Do(ctx, "FENCE", "resource:1", "B").Int64()
		if err != nil || tokenB <= tokenA {
			t.Fatalf("client B: FENCE = %d, %v; want above A's %d", tokenB, err, tokenA)
		}
		stmt = fmt.Sprintf("UPDATE resource SET value = 'B', fence = %d WHERE id = 1 AND fence < %d", tokenB, tokenB)
	}
	pg.sql(t, stmt)

	// A wakes up and writes with what it has.
	if err := a.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT client A: %v", err)
	}
	if !lines.Scan() || lines.Text() != "wrote" {
		t.Fatalf("client A after the pause: %q; want wrote", lines.Text())
	}
	if err := a.Wait(); err != nil {
		t.Fatalf("client A: %v", err)
	}
	return pg.sql(t, "SELECT value FROM resource WHERE id = 1")
}

// waitStopped waits until process pid is stopped (SIGSTOP).
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil {
			if f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(f) > 0 && f[0] == "T" {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("client A (pid %d) did not stop", pid)
}

// TestKleppmannFencedStaleWriteRefused: with FENCE and a resource that
// keeps the highest token, the paused client's write is refused; also
// when two masters restart empty while it sleeps.
func TestKleppmannFencedStaleWriteRefused(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "masters up", true: "two masters restarted empty"}[restart], func(t *testing.T) {
			if got := kleppmann(t, true, restart); got != "B" {
				t.Errorf("the row holds %q after A's stale write; want B's (A refused)", got)
			}
		})
	}
}

// TestKleppmannUnfencedStaleWriteLands is the negative control: the same
// run without fencing lets the paused client's stale write land.
func TestKleppmannUnfencedStaleWriteLands(t *testing.T) {
	if got := kleppmann(t, false, false); got != "A" {
		t.Errorf("the row holds %q; want A's stale write to land without fencing", got)
	}
}
