//go:build !unix

package app

import "errors"

// raiseFileLimit has nothing to raise where there is no RLIMIT_NOFILE.
func raiseFileLimit() (uint64, error) {
	return 0, errors.New("no open file limit on this system")
}
