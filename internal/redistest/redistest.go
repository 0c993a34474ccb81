// Package redistest starts real redis-server processes for tests: on a
// loopback port chosen at run time, with no persistence, killed when the
// test ends; and gives a plain client of one, with helpers to set and
// read keys. The quorum, node and integration tests share it.
package redistest

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ErrPortTaken reports that redis-server could not bind its port: another
// process took it between FreePort and the server's start.
var ErrPortTaken = errors.New("port taken")

// startAttempts bounds how many free ports Start tries.
const startAttempts = 5

// Server is one redis-server process.
type Server struct {
	Addr string // 127.0.0.1:port
	Port int
	Dir  string // its working directory, which holds redis.log

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been waited for
}

// Bin returns the path of redis-server. Without one, the test is skipped
// on a laptop and fails in CI (CI is set).
func Bin(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not installed")
		}
		t.Skip("redis-server not on PATH")
	}
	return bin
}

// Start runs a redis-server with no persistence on a free loopback port
// and kills it when the test ends. extra is passed to redis-server. A port
// found free may be taken before redis-server binds it; then Start tries
// another one.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	return start(t, func() int { return FreePort(t) }, extra)
}

// StartTLS is Start for a redis-server that serves TLS only (--port 0,
// --tls-port on the free port): extra gives its --tls-* files, and client
// is what the readiness PING dials with.
func StartTLS(t testing.TB, client *tls.Config, extra ...string) *Server {
	t.Helper()
	return startWith(t, func() int { return FreePort(t) }, client, extra)
}

// start is Start with the ports to try coming from port.
func start(t testing.TB, port func() int, extra []string) *Server {
	t.Helper()
	return startWith(t, port, nil, extra)
}

// startWith is start serving TLS only when client is set.
func startWith(t testing.TB, port func() int, client *tls.Config, extra []string) *Server {
	t.Helper()
	Bin(t)
	for attempt := 1; ; attempt++ {
		s, err := startOn(t, port(), t.TempDir(), client, extra)
		if err == nil {
			return s
		}
		if !errors.Is(err, ErrPortTaken) || attempt == startAttempts {
			t.Fatalf("start redis-server: %v", err)
		}
		t.Logf("start redis-server (attempt %d): %v; trying another port", attempt, err)
	}
}

// StartOn runs a redis-server with no persistence on port, keeping its
// files in dir, and waits until it answers PING. It is killed when the
// test ends. The error wraps ErrPortTaken when the port was in use.
func StartOn(t testing.TB, port int, dir string, extra ...string) (*Server, error) {
	t.Helper()
	return startOn(t, port, dir, nil, extra)
}

// startOn is StartOn, serving TLS only when client is set.
func startOn(t testing.TB, port int, dir string, client *tls.Config, extra []string) (*Server, error) {
	t.Helper()
	bin := Bin(t)
	logPath := filepath.Join(dir, "redis.log")
	os.Remove(logPath) // a restart on the same dir reads only its own log
	ports := []string{"--port", strconv.Itoa(port)}
	if client != nil {
		ports = []string{"--port", "0", "--tls-port", strconv.Itoa(port)}
	}
	args := append([]string{
		"--bind", "127.0.0.1", ports[0], ports[1],
		"--save", "", "--appendonly", "no", "--dir", dir,
		"--logfile", logPath,
	}, append(ports[2:], extra...)...)
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{
		Addr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port:   port,
		Dir:    dir,
		cmd:    cmd,
		exited: make(chan struct{}),
	}
	go func() { // waited for by Kill, through exited
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.Kill)
	// A PING alone could be answered by whatever took the port, another
	// test's redis-server included: the server's own log says whether it
	// bound the port.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if strings.Contains(s.logTail(), "Ready to accept connections") && answers(s.Addr, client) {
			return s, nil
		}
		select {
		case <-s.exited:
			log := s.logTail()
			err := fmt.Errorf("redis-server on %s exited: %v\n%s", s.Addr, cmd.ProcessState, log)
			if strings.Contains(log, "Address already in use") {
				err = fmt.Errorf("%w: %w", ErrPortTaken, err)
			}
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("redis-server on %s did not answer PING within 5s\n%s", s.Addr, s.logTail())
		}
	}
}

// logTail returns the last lines of the server's log file.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Kill crashes the server (SIGKILL) and waits for it to exit. It may be
// called more than once.
func (s *Server) Kill() {
	s.cmd.Process.Kill() // fails only if it has exited already
	<-s.exited
}

// Freeze stops the server (SIGSTOP): the kernel still accepts connections
// for it, but it never answers. It is thawed when the test ends, if not
// before.
func (s *Server) Freeze(t testing.TB) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP redis-server %s: %v", s.Addr, err)
	}
	t.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() {
	s.cmd.Process.Signal(syscall.SIGCONT) // fails only if it has exited
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// answers reports whether addr answers a PING: with +PONG, or with
// NOAUTH when its default user is off or has a password.
func answers(addr string, client *tls.Config) bool {
	err := PingTLS(addr, client)
	return err == nil || strings.Contains(err.Error(), `"-NOAUTH`)
}

// Ping sends one inline PING to addr and wants +PONG.
func Ping(addr string) error { return PingTLS(addr, nil) }

// PingTLS is Ping over TLS with client, or over plain TCP if client is
// nil.
func PingTLS(addr string, client *tls.Config) error {
	var (
		c   net.Conn
		err error
	)
	if client != nil {
		c, err = tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, client)
	} else {
		c, err = net.DialTimeout("tcp", addr, time.Second)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING replied %q", line)
	}
	return nil
}
