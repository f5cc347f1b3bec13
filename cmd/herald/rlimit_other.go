//go:build !unix

package main

// descriptorLimit is 0 (unknown) where there is no RLIMIT_NOFILE.
func descriptorLimit() uint64 { return 0 }
