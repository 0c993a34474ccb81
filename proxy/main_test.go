package proxy

import (
	"os"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/leakcheck"
)

// TestMain fails the package if its tests leave goroutines running, such
// as a connection handler that outlives its server's Close.
func TestMain(m *testing.M) { os.Exit(leakcheck.Main(m)) }
