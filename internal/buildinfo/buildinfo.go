// Package buildinfo says which build of redlock-proxy is running, from
// the module's build information that the go command stamps into every
// binary: no version string is kept by hand.
package buildinfo

import "runtime/debug"

// Version is the module version the binary was built as: the version
// `go install github.com/redlock-proxy/redlock-proxy@v1.2.3` names, a
// pseudo-version (v0.0.0-date-commit, +dirty for uncommitted changes)
// for `go build` in a git checkout, "(devel)" for a build without
// version control, or "unknown" when the binary carries no build
// information (a test binary).
func Version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}

// Revision is the VCS revision the binary was built from, or "unknown".
func Revision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}
