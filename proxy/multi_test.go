package proxy

import "testing"

// txShapeReply is the refusal of a transaction the proxy cannot run.
const txShapeReply = "-EXECABORT Transaction discarded: redlock-proxy runs a transaction only as WATCH key, GET key, MULTI, DEL key or PEXPIRE key ms, EXEC (a compare-and-delete or compare-and-pexpire)\r\n"

// step is one command of a session and the exact reply it must get.
type step struct {
	cmd  []string
	want string
}

func runSteps(t *testing.T, rc *rawConn, steps []step) {
	t.Helper()
	for _, st := range steps {
		if got := rc.do(t, st.cmd...); got != st.want {
			t.Errorf("%q = %q; want %q", st.cmd, got, st.want)
		}
	}
}

func TestTransactionErrorsAsRedis(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	runSteps(t, dial(t, addr), []step{
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"DISCARD"}, "-ERR DISCARD without MULTI\r\n"},
		{[]string{"UNWATCH"}, "+OK\r\n"},
		{[]string{"WATCH"}, "-ERR wrong number of arguments for 'watch' command\r\n"},
		{[]string{"PEXPIRE", "k", "100"}, "-ERR 'pexpire' is not supported: redlock-proxy serves lock commands only (" + whyTTL + ")\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"MULTI"}, "-ERR MULTI calls can not be nested\r\n"},
		{[]string{"WATCH", "k"}, "-ERR WATCH inside MULTI is not allowed\r\n"},
		{[]string{"GET", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, txShapeReply},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"FOO", "bar"}, "-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "-EXECABORT Transaction discarded because of previous errors.\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEL"}, "-ERR wrong number of arguments for 'del' command\r\n"},
		{[]string{"DISCARD"}, "+OK\r\n"},
		{[]string{"EXEC"}, "-ERR EXEC without MULTI\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXEC"}, "*0\r\n"},
	})
}

// TestTransactionServesCompareAndDelete replays StackExchange.Redis's
// LockRelease and LockExtend.
func TestTransactionServesCompareAndDelete(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	runSteps(t, rc, []step{
		{[]string{"SET", "k", "t1", "PX", "5000", "NX"}, "+OK\r\n"},
		// LockExtend by 20s.
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"PEXPIRE", "k", "20500"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:1\r\n"},
	})
	for i, m := range minis {
		if ttl := m.TTL("k"); ttl <= 20000e6 {
			t.Errorf("node %d: TTL of k after the extend = %v; want over 20s", i, ttl)
		}
	}
	runSteps(t, rc, []step{
		// LockRelease.
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:1\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		// The key was free when GET read it, and still is.
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:0\r\n"},
	})
}

func TestTransactionNilWhenWatchedKeyChanged(t *testing.T) {
	addr, _ := startServer(t, 3, Config{})
	rc, other := dial(t, addr), dial(t, addr)
	release := "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend"
	runSteps(t, rc, []step{
		{[]string{"SET", "k", "t1", "PX", "5000", "NX"}, "+OK\r\n"},
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt1\r\n"},
	})
	runSteps(t, other, []step{
		{[]string{"EVAL", release, "1", "k", "t1"}, ":1\r\n"},
		{[]string{"SET", "k", "t2", "PX", "5000", "NX"}, "+OK\r\n"},
	})
	runSteps(t, rc, []step{
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt2\r\n"},
		// Found free, taken since.
		{[]string{"WATCH", "free"}, "+OK\r\n"},
		{[]string{"GET", "free"}, "$-1\r\n"},
	})
	runSteps(t, other, []step{{[]string{"SET", "free", "t3", "PX", "5000", "NX"}, "+OK\r\n"}})
	runSteps(t, rc, []step{
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"PEXPIRE", "free", "5000"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		// A write of the watched key on this connection aborts EXEC too.
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt2\r\n"},
		{[]string{"EVAL", release, "1", "k", "t2"}, ":1\r\n"},
		{[]string{"SET", "k", "t2", "PX", "5000", "NX"}, "+OK\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"DEL", "k"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*-1\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt2\r\n"},
	})
}

// TestTransactionOtherBodiesRefused checks that every other body is
// refused at EXEC and leaves the lock alone.
func TestTransactionOtherBodiesRefused(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	runSteps(t, rc, []step{{[]string{"SET", "k", "t1", "PX", "5000", "NX"}, "+OK\r\n"}})
	shape := txShapeReply
	bodies := []struct {
		name  string
		watch []string // WATCH's keys; none: no WATCH
		get   bool     // GET k after WATCH
		body  [][]string
		want  string
	}{
		{"no GET", []string{"k"}, false, [][]string{{"DEL", "k"}}, shape},
		{"no WATCH", nil, false, [][]string{{"DEL", "k"}}, shape},
		{"two commands", []string{"k"}, true, [][]string{{"DEL", "k"}, {"PEXPIRE", "k", "100"}}, shape},
		{"another key", []string{"k"}, true, [][]string{{"DEL", "k2"}}, shape},
		{"two watched keys", []string{"k", "k2"}, true, [][]string{{"DEL", "k"}}, shape},
		{"DEL of two keys", []string{"k"}, true, [][]string{{"DEL", "k", "k2"}}, shape},
		{"PEXPIRE with an option", []string{"k"}, true, [][]string{{"PEXPIRE", "k", "100", "XX"}}, shape},
		{"GET", []string{"k"}, true, [][]string{{"GET", "k"}}, shape},
		{"non-numeric ttl", []string{"k"}, true, [][]string{{"PEXPIRE", "k", "ten"}}, "*1\r\n-ERR value is not an integer or out of range\r\n"},
		{"ttl over max_ttl", []string{"k"}, true, [][]string{{"EXPIRE", "k", "99999999999999"}}, "*1\r\n-ERR invalid expire time in 'expire' command: 99999999999999s is over max_ttl (5m0s)\r\n"},
		{"zero ttl", []string{"k"}, true, [][]string{{"PEXPIRE", "k", "0"}}, "*1\r\n-ERR invalid expire time in 'pexpire' command\r\n"},
		{"ttl with a plus sign (Redis's integer rules)", []string{"k"}, true, [][]string{{"EXPIRE", "k", "+30"}}, "*1\r\n-ERR value is not an integer or out of range\r\n"},
	}
	for _, b := range bodies {
		if b.watch != nil {
			rc.do(t, append([]string{"WATCH"}, b.watch...)...)
		}
		if b.get {
			rc.do(t, "GET", "k")
		}
		rc.do(t, "MULTI")
		for _, c := range b.body {
			if got := rc.do(t, c...); got != "+QUEUED\r\n" {
				t.Errorf("%s: %q = %q; want +QUEUED", b.name, c, got)
			}
		}
		if got := rc.do(t, "EXEC"); got != b.want {
			t.Errorf("%s: EXEC = %q; want %q", b.name, got, b.want)
		}
	}
	for i, m := range minis {
		if v, err := m.Get("k"); err != nil || v != "t1" {
			t.Errorf("node %d: k = %q, %v after refused transactions; want t1", i, v, err)
		}
		if ttl := m.TTL("k"); ttl > 5000e6 || ttl <= 0 {
			t.Errorf("node %d: TTL of k = %v; want the original 5s or less", i, ttl)
		}
	}
}

func TestExpireTTLReadsSeconds(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	rc := dial(t, addr)
	runSteps(t, rc, []step{
		{[]string{"SET", "k", "t1", "PX", "5000", "NX"}, "+OK\r\n"},
		{[]string{"WATCH", "k"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$2\r\nt1\r\n"},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"EXPIRE", "k", "30"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*1\r\n:1\r\n"},
	})
	for i, m := range minis {
		if ttl := m.TTL("k"); ttl <= 29e9 || ttl > 30e9 {
			t.Errorf("node %d: TTL after EXPIRE k 30 = %v; want 30s", i, ttl)
		}
	}
}

// TestDelOfUnlockLatch checks that DEL of Redisson's unlock latches is
// served without allow_force_del, and DEL of anything else is not.
func TestDelOfUnlockLatch(t *testing.T) {
	addr, minis := startServer(t, 3, Config{})
	for _, m := range minis {
		m.Set("redisson_unlock_latch:{l}:r1", "1")
		m.Set("k", "tok")
	}
	runSteps(t, dial(t, addr), []step{
		{[]string{"DEL", "k"}, "-ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use\r\n"},
		{[]string{"DEL", "redisson_unlock_latch:{l}:r1", "k"}, "-ERR DEL is refused: release a lock with its token through the compare-and-delete script, or set allow_force_del for admin use\r\n"},
		{[]string{"DEL", "redisson_unlock_latch:{l}:r1"}, ":1\r\n"},
		{[]string{"DEL", "redisson_unlock_latch:{l}:r1"}, ":0\r\n"},
	})
	for i, m := range minis {
		if m.Exists("redisson_unlock_latch:{l}:r1") || !m.Exists("k") {
			t.Errorf("node %d: latch kept %v, k kept %v; want the latch gone and k kept", i, m.Exists("redisson_unlock_latch:{l}:r1"), m.Exists("k"))
		}
	}
}
