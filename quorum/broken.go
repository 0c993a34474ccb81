//go:build !brokenbuild

package quorum

// The negative-control hooks, off: see broken_on.go. In a normal build
// they are constants, and the compiler drops the code they guard.

func brokenQuorum(q int) int   { return q }
func brokenNoValidity() bool   { return false }
func brokenNoQuarantine() bool { return false }
