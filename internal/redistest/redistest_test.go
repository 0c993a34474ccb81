package redistest

import (
	"errors"
	"net"
	"testing"
)

// takePort listens on a free loopback port until the test ends.
func takePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func TestStartOnTakenPortReportsPortTaken(t *testing.T) {
	Bin(t)
	port := takePort(t)
	s, err := StartOn(t, port, t.TempDir())
	if !errors.Is(err, ErrPortTaken) {
		t.Fatalf("StartOn(taken port %d) = %v, %v; want ErrPortTaken", port, s, err)
	}
}

// The port another redis-server holds answers PING; StartOn must still
// see that its own server never bound it.
func TestStartOnPortOfAnotherRedisReportsPortTaken(t *testing.T) {
	other := Start(t)
	s, err := StartOn(t, other.Port, t.TempDir())
	if !errors.Is(err, ErrPortTaken) {
		t.Fatalf("StartOn(port of %s) = %v, %v; want ErrPortTaken", other.Addr, s, err)
	}
}

func TestStartTriesAnotherPortWhenTaken(t *testing.T) {
	Bin(t)
	taken := []int{takePort(t), takePort(t)}
	n := 0
	s := start(t, func() int {
		n++
		if n <= len(taken) {
			return taken[n-1]
		}
		return FreePort(t)
	}, nil)
	if n != 3 {
		t.Errorf("start tried %d ports; want 3 (two taken, then a free one)", n)
	}
	if err := Ping(s.Addr); err != nil {
		t.Errorf("PING %s: %v", s.Addr, err)
	}
	s.Kill()
	if err := Ping(s.Addr); err == nil {
		t.Errorf("PING %s after Kill = nil; want an error", s.Addr)
	}
}
