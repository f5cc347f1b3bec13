//go:build unix

package main

import "syscall"

// descriptorLimit is the process's limit on open file descriptors
// (RLIMIT_NOFILE's soft limit; 0 when it cannot be read). The Go runtime
// raises the soft limit to the hard one at start (Go 1.19 and later), so
// this is the most the process can have open.
func descriptorLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return uint64(l.Cur)
}
