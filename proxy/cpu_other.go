//go:build !unix

package proxy

import "strings"

// infoCPU is empty where the process's CPU time cannot be read.
func (s *Server) infoCPU(*strings.Builder, *infoRun) {}
