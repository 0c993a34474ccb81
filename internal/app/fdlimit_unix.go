//go:build unix

package app

import "syscall"

// raiseFileLimit raises the soft open-file limit to the hard one and
// returns the soft limit then in force. Go's runtime raises it too at
// start (since Go 1.19); this makes the step, and the number the proxy
// plans with, explicit.
func raiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Cur < rl.Max {
		up := rl
		up.Cur = rl.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			rl = up
		}
	}
	return uint64(rl.Cur), nil
}
