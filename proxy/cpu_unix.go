//go:build unix

package proxy

import (
	"fmt"
	"strings"
	"syscall"
)

// infoCPU is the process's CPU time, as Redis shows its own; the proxy
// forks no children.
func (s *Server) infoCPU(b *strings.Builder, _ *infoRun) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return
	}
	sec := func(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }
	fmt.Fprintf(b, "used_cpu_sys:%.6f\r\nused_cpu_user:%.6f\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n",
		sec(ru.Stime), sec(ru.Utime))
}
