//go:build linux || darwin || freebsd || netbsd || openbsd

package sqlite

import "syscall"

// freeBytes is how many bytes the filesystem holding dir has free for an
// unprivileged writer, and whether that could be read.
func freeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
